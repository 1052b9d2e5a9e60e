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
    import attacks  # noqa: F401
    import clients.defenses  # noqa: F401  (registers the defenses)
    import fedgraph_sim.data.auxiliary  # noqa: F401  (registers the auxiliary scenarios)
    import fedgraph_sim.models  # noqa: F401
    from fedgraph_sim import registry

    for kind in (registry.attacks, registry.defenses, registry.models, registry.scenarios):
        assert len(kind) > 0
        for name in kind:
            assert isinstance(kind.get(name), type) and kind.get(name).name == name
