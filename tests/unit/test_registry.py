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
