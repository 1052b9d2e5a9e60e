"""Client-side defenses, registered by name in ``fedgraph_sim.registry.defenses`` and applied in
the configured order as the last step before a client replies (DESIGN.md "Defenses").

A defense is a callable ``defense(update: dict[str, Tensor], kind: str, rng) -> dict`` built from
its config entry ``{name: ..., **params}``.
"""

from __future__ import annotations

from typing import Any

from fedgraph_sim import registry
from fedgraph_sim.errors import ConfigError


def build_defenses(entries: list[dict[str, Any]]) -> list:
    stack = []
    for i, entry in enumerate(entries):
        params = {k: v for k, v in entry.items() if k != "name"}
        name = entry.get("name")
        if name not in registry.defenses:
            valid = ", ".join(registry.defenses.names()) or "none are implemented yet"
            raise ConfigError(f"defenses.{i}.name: unknown defense '{name}'; valid defenses: {valid}")
        stack.append(registry.defenses.get(name)(**params))
    return stack
