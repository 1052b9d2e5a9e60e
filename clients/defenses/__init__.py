"""Client-side defenses, registered by name in ``fedgraph_sim.registry.defenses`` and composed as
an ordered stack from the config (docs/configuration.md, "Defenses"):

    defenses: [{name: prune, p: 0.9}, {name: dp_gradients, sigma: 0.1}]

``build_defenses(entries)`` validates every entry (unknown names and parameters list the valid
ones; bad numbers name ``defenses.<i>.<key>``) and returns a :class:`DefenseStack`.
"""

from __future__ import annotations

import inspect
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from clients.defenses import dp_activations, dp_gradients, dp_hybrid, dp_sgd, prune  # noqa: F401
from clients.defenses.base import Defense, Update
from fedgraph_sim import registry
from fedgraph_sim.errors import ConfigError

#: Defenses that add hooks to the forward pass cannot run under DP-SGD's vmapped per-graph pass.
_HOOKED = ("dp_activations", "dp_hybrid")


@dataclass(frozen=True)
class ClientTurn:
    """What a stateful defense needs to know about a client's turn."""

    partition_size: int
    batch_size: int
    local_steps: int
    rounds: int

    @property
    def sample_rate(self) -> float:
        return min(1.0, self.batch_size / self.partition_size)

    @property
    def planned_steps(self) -> int:
        return self.rounds * self.local_steps


class DefenseStack:
    """The configured defenses, applied in order."""

    def __init__(self, defenses: list[Defense]) -> None:
        self.defenses = defenses

    def __bool__(self) -> bool:
        return bool(self.defenses)

    def _stateful(self):
        return [(f"{i}.{d.name}", d) for i, d in enumerate(self.defenses) if isinstance(d, dp_sgd.DPSGD)]

    def validate(self, turns: list[ClientTurn]) -> None:
        """Fail before anything runs if some client's plan is impossible (e.g. a target epsilon)."""
        for key, defense in self._stateful():
            for turn in turns:
                try:
                    defense.plan(turn.sample_rate, turn.planned_steps)
                except ConfigError as exc:
                    raise ConfigError(f"defenses.{key.split('.')[0]}.{exc}") from None

    def begin(self, turn: ClientTurn, state: dict[str, Any]) -> None:
        """Restore per-client state (DP-SGD's accountant history) saved by earlier rounds."""
        for key, defense in self._stateful():
            defense.begin(turn.sample_rate, turn.planned_steps, state.get(key, []))

    def state(self) -> dict[str, Any]:
        return {key: [list(h) for h in defense.history] for key, defense in self._stateful()}

    @contextmanager
    def training(self, model: torch.nn.Module, rng: torch.Generator):
        with ExitStack() as stack:
            for defense in self.defenses:
                stack.enter_context(defense.training(model, rng))
            yield

    def gradient_fn(self, rng: torch.Generator):
        fns = [fn for fn in (d.gradient_fn(rng) for d in self.defenses) if fn is not None]
        return fns[0] if fns else None

    def apply(self, update: Update, rng: torch.Generator) -> Update:
        for defense in self.defenses:
            update = defense.apply(update, rng)
        return update

    def report(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for defense in self.defenses:
            out.update(defense.report())
        return out


def _build_one(entry: Any, i: int) -> Defense:
    if not isinstance(entry, dict) or "name" not in entry:
        raise ConfigError(f"defenses.{i}: each defense is a mapping with a name, e.g. {{name: prune, p: 0.9}}")
    name = entry["name"]
    cls = registry.defenses.get(name, key=f"defenses.{i}.name")
    params = {k: v for k, v in entry.items() if k != "name"}
    signature = {k: v for k, v in inspect.signature(cls.__init__).parameters.items() if k != "self"}
    for key in params:
        if key not in signature:
            raise ConfigError(f"defenses.{i}.{key}: {name} has no parameter '{key}'; "
                              f"valid: {', '.join(signature)}")
    for key, param in signature.items():
        if param.default is inspect.Parameter.empty and key not in params:
            raise ConfigError(f"defenses.{i}.{key}: {name} needs a value for '{key}'")
    try:
        return cls(**params)
    except ConfigError as exc:
        raise ConfigError(f"defenses.{i}.{exc}") from None


def build_defenses(entries: list[dict[str, Any]]) -> DefenseStack:
    stack = [_build_one(entry, i) for i, entry in enumerate(entries)]
    names = [d.name for d in stack]
    if names.count("dp_sgd") > 1:
        raise ConfigError("defenses: dp_sgd appears more than once; one per stack")
    if "dp_sgd" in names and any(n in _HOOKED for n in names):
        raise ConfigError("defenses: dp_sgd cannot be combined with dp_activations or dp_hybrid "
                          "(its vmapped per-graph pass does not run forward-noise hooks)")
    return DefenseStack(stack)


__all__ = ["ClientTurn", "Defense", "DefenseStack", "build_defenses"]
