"""Client-side defenses, registered by name in ``fedgraph_sim.registry.defenses`` and composed as
an ordered stack from the config (docs/configuration.md, "Defenses"):

    defenses: [{name: prune, p: 0.9}, {name: dp_gradients, sigma: 0.1}]

``build_defenses(entries, task)`` validates every entry (unknown names and parameters list the
valid ones; bad numbers name ``defenses.<i>.<key>``) and the stack against the rules each defense
declares (:class:`Defense`), and returns a :class:`DefenseStack`.
"""

from __future__ import annotations

import inspect
from contextlib import ExitStack, contextmanager
from typing import Any

import torch

from clients.defenses.base import ClientTurn, Defense, Update
from fedgraph_sim import registry
from fedgraph_sim.errors import ConfigError


class DefenseStack:
    """The configured defenses, applied in order."""

    def __init__(self, defenses: list[Defense]) -> None:
        self.defenses = defenses

    def __bool__(self) -> bool:
        return bool(self.defenses)

    def _stateful(self):
        return [(i, f"{i}.{d.name}", d) for i, d in enumerate(self.defenses) if d.stateful]

    def validate(self, turns: list[ClientTurn]) -> None:
        """Fail before anything runs if some client's plan is impossible (e.g. a target epsilon)."""
        for i, defense in enumerate(self.defenses):
            if (defense.reply_mod or defense.weight_replies) and any(turn.local_steps == 1 for turn in turns):
                what = "a Flower mod that clips" if defense.reply_mod else "Flower's server-side clipping of"
                raise ConfigError(f"defenses.{i}.name: {defense.name} is {what} the replied weights "
                                  "against the sent ones: it needs FedAvg replies (train.local_steps > 1), and a "
                                  "FedSGD reply is a gradient")
            for turn in turns:
                try:
                    defense.plan(turn)
                except ConfigError as exc:
                    raise ConfigError(f"defenses.{i}.{exc}") from None

    def begin(self, turn: ClientTurn, state: dict[str, Any]) -> None:
        """Start every defense's turn: a stateful one from the state its earlier rounds saved
        (DP-SGD's accountant history), the others with None (the central-DP ones read the round)."""
        for i, defense in enumerate(self.defenses):
            defense.begin(turn, state.get(f"{i}.{defense.name}") if defense.stateful else None)

    def state(self) -> dict[str, Any]:
        return {key: defense.state() for _, key, defense in self._stateful()}

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

    def check_server(self, num_sampled_clients: int, secaggplus: bool = False) -> None:
        """Build each server half once around a stand-in strategy, so that Flower's own checks of
        its parameters (e.g. the adaptive wrapper's noise split) refuse them before the run. Behind
        Flower's SecAgg+ (a legacy strategy in Flower's workflow) no server half can be carried."""
        from flwr.serverapp.strategy import FedAvg

        for i, defense in enumerate(self.defenses):
            if secaggplus and type(defense).wrap_strategy is not Defense.wrap_strategy:
                raise ConfigError(f"defenses.{i}.name: {defense.name} has a server half (a wrapper of Flower's "
                                  "Message-API strategy), which Flower's SecAgg+ workflow cannot carry; not with "
                                  "threat.secure_aggregation: secaggplus")
            try:
                defense.wrap_strategy(FedAvg(), num_sampled_clients, 0)
            except ValueError as exc:
                raise ConfigError(f"defenses.{i}: {exc}".splitlines()[0]) from None

    def wrap_strategy(self, strategy, num_sampled_clients: int, seed: int):
        """The server's strategy wrapped by the defenses that have a server half, in order."""
        for defense in self.defenses:
            strategy = defense.wrap_strategy(strategy, num_sampled_clients, seed)
        return strategy

    def mods(self) -> list:
        """The Flower client mods of the ``reply_mod`` defenses, in order."""
        return [d.mod() for d in self.defenses if d.reply_mod]

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
    signature = {k: v for k, v in inspect.signature(cls.__init__).parameters.items()
                 if k != "self" and v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD)}  # object's (*args, **kwargs)
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


def build_defenses(entries: list[dict[str, Any]], task: str = "graph") -> DefenseStack:
    """The stack of ``entries`` for a model of ``model.task`` ``task``, checked against the rules
    its defenses declare."""
    stack = [_build_one(entry, i) for i, entry in enumerate(entries)]
    names = [d.name for d in stack]
    for i, d in enumerate(stack):
        if task not in d.tasks:
            raise ConfigError(f"defenses.{i}.name: {d.name} serves model.task {' or '.join(d.tasks)}, "
                              f"not {task}; with model.task: {task} use one of "
                              f"{', '.join(n for n in registry.defenses if task in registry.defenses.get(n).tasks)}")
        if d.once_per_stack and names.count(d.name) > 1:
            raise ConfigError(f"defenses: {d.name} appears more than once; one per stack")
    for i, d in enumerate(stack):
        later = [e.name for e in stack[i + 1:] if not e.reply_mod]
        if d.reply_mod and later:
            raise ConfigError(f"defenses.{i}.name: {d.name} is a Flower mod acting on the reply after the turn; "
                              f"list it after {', '.join(later)}")
    hooked = [d.name for d in stack if d.hooks_forward]
    for d in stack:
        if d.per_graph_pass and hooked:
            raise ConfigError(f"defenses: {d.name} cannot be combined with {' or '.join(hooked)} (its per-graph "
                              "pass does not run the forward hooks they add)")
    return DefenseStack(stack)


__all__ = ["ClientTurn", "Defense", "DefenseStack", "build_defenses"]
