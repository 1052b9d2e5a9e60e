import subprocess
import sys

import pytest

from fedgraph_sim.errors import ConfigError
from fedgraph_sim.registry import Registry


def test_lookup_is_case_insensitive_and_keeps_spelling():
    reg = Registry("widget")
    reg.add("MUTAG", 1)
    assert reg.get("mutag") == 1
    assert reg.canonical("mutag") == "MUTAG"
    assert "Mutag" in reg and "other" not in reg


def test_unknown_name_lists_valid_names():
    reg = Registry("widget")
    reg.add("a", 1)
    reg.add("b", 2)
    with pytest.raises(ConfigError, match=r"unknown widget 'c'; valid widgets: a, b"):
        reg.get("c")


def test_duplicate_registration_is_refused():
    reg = Registry("widget")
    reg.add("a", 1)
    with pytest.raises(ValueError):
        reg.add("A", 2)


def test_a_class_registers_under_its_own_name():
    reg = Registry("widget")

    @reg.register
    class Gear:
        name = "gear"

    assert reg.get("GEAR") is Gear and reg.names() == ["gear"]
    with pytest.raises(TypeError, match="no 'name'"):
        reg.register(type("Nameless", (), {}))


def test_every_kind_registers_classes_by_their_name():
    """Attacks, defenses, conv types and auxiliary scenarios: one style, the name read from the class."""
    import fedgraph_sim.data.auxiliary  # noqa: F401  (registers the auxiliary scenarios)
    import fedgraph_sim.models  # noqa: F401
    from fedgraph_sim import registry

    for kind in (registry.attacks, registry.defenses, registry.models, registry.scenarios):
        assert len(kind) > 0
        for name in kind:
            assert isinstance(kind.get(name), type) and kind.get(name).name == name


def test_declared_pieces_load_when_first_looked_up():
    # in a fresh process: this one has imported every attack already
    probe = ("import sys\nfrom fedgraph_sim import registry\n"
             "names = registry.attacks.names()\n"
             "assert 'grain' in names and 'grain' in registry.attacks and 'prune' in registry.defenses\n"
             "assert not any(m.startswith(('attacks.', 'clients.')) for m in sys.modules), 'names imported'\n"
             "assert registry.attacks.get('GRAIN').name == 'grain'\n"
             "assert 'attacks.grain.attack' in sys.modules and 'attacks.dlg' not in sys.modules\n"
             "print('ok')")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


def test_a_declared_piece_that_does_not_load_is_one_line():
    from importlib import metadata

    reg = Registry("attack", group="fedgraph_sim.attacks")
    reg._declared = {"broken": metadata.EntryPoint("broken", "attacks.no_such_module:Nothing",
                                                   "fedgraph_sim.attacks")}
    with pytest.raises(ConfigError, match=r"^attack.names: attack 'broken' is declared as attacks.no_such_module:"
                                          r"Nothing but does not load: ModuleNotFoundError"):
        reg.get("broken", key="attack.names")


def write_package(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_module_in_the_package_declares_its_piece_with_the_decorator_alone(tmp_path, monkeypatch):
    """One module is the whole declaration: the registry reads the decorated class and its name from
    the source, lists it without importing the module, and imports it on first lookup."""
    import sys

    write_package(tmp_path, {
        "gadgets_for_test/__init__.py": "",
        "gadgets_for_test/base.py": "from fedgraph_sim.registry import Registry\nreg = Registry('gadget')\n",
        "gadgets_for_test/spring.py": ("from gadgets_for_test.base import reg\n\n\n@reg.register\nclass Spring:\n"
                                       "    name = 'spring'\n"),
        "gadgets_for_test/deep/lever.py": ("from gadgets_for_test import base\n\n\n@base.reg.register\nclass Lever:\n"
                                           "    name = 'lever'\n\n\nclass Undecorated:\n    name = 'not_a_piece'\n"),
    })
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = Registry("gadget", package="gadgets_for_test")
    assert reg.names() == ["lever", "spring"] and "spring" in reg and "not_a_piece" not in reg
    assert "gadgets_for_test.spring" not in sys.modules
    import gadgets_for_test.base as base

    monkeypatch.setattr(base, "reg", reg)  # the module's decorator registers into this registry
    assert reg.get("Spring").__name__ == "Spring" and reg.get("lever").__module__ == "gadgets_for_test.deep.lever"
    for name in [m for m in sys.modules if m.startswith("gadgets_for_test")]:
        monkeypatch.delitem(sys.modules, name)


def test_two_modules_declaring_one_name_are_refused(tmp_path, monkeypatch):
    piece = "from x import reg\n\n\n@reg.register\nclass {cls}:\n    name = 'same'\n"
    write_package(tmp_path, {"twice_for_test/__init__.py": "", "twice_for_test/a.py": piece.format(cls="A"),
                             "twice_for_test/b.py": piece.format(cls="B")})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=r"'same' is declared twice: twice_for_test.a:A and twice_for_test.b:B"):
        Registry("gadget", package="twice_for_test").names()


def test_the_package_declares_its_attacks_and_defenses_in_their_modules_only():
    """No entry point of the distribution names a package piece: the decorator is the one declaration."""
    from importlib import metadata

    from fedgraph_sim import registry

    for kind, group in ((registry.attacks, "fedgraph_sim.attacks"), (registry.defenses, "fedgraph_sim.defenses")):
        points = [p for p in metadata.entry_points(group=group) if p.value.split(".")[0] in ("attacks", "clients")]
        assert points == [], f"{group}: {[p.value for p in points]} are declared twice (entry point and decorator)"
        declared = {d.name for d in registry.declarations(kind._package)}
        assert declared <= set(kind.names())  # beside them: plugins other tests registered in this process
        assert all(kind.get(name).__module__.startswith(f"{kind._package}.") for name in declared)


def test_an_installed_plugin_distribution_names_its_pieces_by_entry_point(tmp_path, monkeypatch):
    """A distribution on the path (its dist-info's entry points) adds a piece beside the package's,
    without a decorator or a ``plugins:`` entry."""
    import sys

    write_package(tmp_path, {
        "gadget_plugin_for_test.py": "class Cog:\n    name = 'cog'\n",
        "gadget_plugin_for_test-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: gadget-plugin-for-test\n"
                                                         "Version: 0.1\n",
        "gadget_plugin_for_test-0.1.dist-info/entry_points.txt": ("[gadgets_for_test]\n"
                                                                  "cog = gadget_plugin_for_test:Cog\n"),
    })
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = Registry("gadget", group="gadgets_for_test")
    assert reg.names() == ["cog"] and "gadget_plugin_for_test" not in sys.modules
    assert reg.get("cog").name == "cog"
    monkeypatch.delitem(sys.modules, "gadget_plugin_for_test")
