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
