"""What a client-side defense is, and the noise it draws.

A :class:`Defense` may act at three points of a client's turn, each a no-op by default:

- ``training(model, rng)``: a context manager active during the local forward/backward passes
  (DP-Activations hooks the layer outputs here);
- ``gradient_fn(rng)``: replaces the per-step mean gradient (DP-SGD's clipped, noised sum);
- ``apply(update, rng)``: transforms the update before it leaves the client (pruning, gradient
  noise). ``update`` is the gradient in FedSGD and the weight delta ``W_new - W_sent`` in FedAvg.

``report()`` returns the defense's own numbers (noise variance, epsilon) for the result rows.
Every defense draws its randomness from the client's seeded ``torch.Generator``.

A defense carries its own rules as class attributes, which the stack and the config's checks
read (nothing else names a defense): ``stateful`` (it keeps state across a client's rounds:
``plan`` checks a client's turn before anything runs, ``begin`` restores the state ``state``
returned at the end of the last turn; every defense's ``begin`` gets the turn, a stateless one
with no state), ``hooks_forward`` (``training`` hooks the forward pass),
``per_graph_pass`` (``gradient_fn`` runs its own per-graph pass, which runs no forward hook, so
it cannot be stacked with a defense that hooks), ``once_per_stack``, ``tasks`` (the
``model.task`` values it serves), ``reply_mod`` (it is one of Flower's client mods, ``mod()``,
acting on the turn's reply message after the turn: it comes after the project's own defenses and
needs FedAvg replies, whose weights it rewrites) and ``weight_replies`` (it needs FedAvg replies
for another reason: its server half clips them against the weights it sent).
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, ContextManager

import torch
from torch import Tensor

from fedgraph_sim.errors import require

Update = dict[str, Tensor]
NOISES = ("laplace", "gaussian")
LAPLACE_PARAMS = ("scale", "variance")


@dataclass(frozen=True)
class ClientTurn:
    """What a defense needs to know about a client's turn (``begin``), or its plan (``plan``)."""

    partition_size: int
    batch_size: int
    local_steps: int
    rounds: int
    sampling: str = "random"  # train.sampling: random draws, or a walk through shuffles (epoch, repeat)
    round: int = 0  # this turn's round, from 1; 0 in a plan, before any round
    sampled_clients: int = 1  # the clients the server samples per round (federation.sampled_per_round())
    num_clients: int = 1  # the federation's clients, whom it samples from

    @property
    def sample_rate(self) -> float:
        return min(1.0, self.batch_size / self.partition_size)

    @property
    def planned_steps(self) -> int:
        return self.rounds * self.local_steps

    @property
    def planned_uses(self) -> int:
        """The most times one graph is trained on over the planned rounds when the batches walk
        shuffles of the partition (``epoch``: once per pass; ``repeat``: each round's one batch
        ``local_steps`` times), a graph at most once per pass through the partition."""
        size = min(self.batch_size, self.partition_size)
        if self.sampling == "repeat":
            return self.local_steps * -(-self.rounds * size // self.partition_size)
        return -(-self.planned_steps * size // self.partition_size)


class Defense:
    name = "defense"
    stateful: bool = False
    hooks_forward: bool = False
    per_graph_pass: bool = False
    once_per_stack: bool = False
    tasks: tuple[str, ...] = ("graph", "node")
    reply_mod: bool = False
    weight_replies: bool = False
    #: What the defense contract test builds it with (its required parameters, at small values):
    #: a client's turn for each task it serves must keep the update's shapes, stay finite and be
    #: the same from the same generator.
    contract_params: ClassVar[dict[str, Any]] = {}

    def plan(self, turn: ClientTurn) -> None:
        """Raise ConfigError if this client's turn is impossible (a target epsilon)."""

    def begin(self, turn: ClientTurn, state: Any) -> None:
        """Start a client's turn from the ``state()`` its last turn ended with (None at first, and
        always for a defense that is not ``stateful``)."""

    def state(self) -> Any:
        """What ``begin`` needs at the client's next turn (JSON-serialisable)."""
        return None

    def training(self, model: torch.nn.Module, rng: torch.Generator) -> ContextManager:
        return nullcontext()

    def gradient_fn(self, rng: torch.Generator) -> Callable | None:
        """A replacement for the plain mean gradient of a local step, or None."""
        return None

    def apply(self, update: Update, rng: torch.Generator) -> Update:
        return update

    def report(self) -> dict[str, float]:
        return {}

    def mod(self) -> Callable | None:
        """The Flower client mod (``mod(msg, context, call_next) -> Message``) that is this defense,
        for ``reply_mod`` defenses; None otherwise."""
        return None

    def wrap_strategy(self, strategy: Any, num_sampled_clients: int, seed: int) -> Any:
        """The server's half of a defense that has one (Flower's central-DP strategy wrappers):
        ``strategy`` wrapped; unchanged by default."""
        return strategy


def check_number(value: Any, key: str, *, low: float = 0.0, strict: bool = False,
                 high: float | None = None) -> float:
    """``value`` as a float if it is a finite number >= ``low`` (> with ``strict``) and < ``high``."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value > low if strict else value >= low) and (high is None or value < high)
    if high is not None:
        require(ok, key, f"must be in {'(' if strict else '['}{low:g}, {high:g}) (got {value!r})")
    else:
        require(ok, key, f"must be a number {'>' if strict else '>='} {low:g} (got {value!r})")
    return float(value)


def check_sigma(sigma: Any) -> float:
    return check_number(sigma, "sigma")


def check_choice(value: Any, key: str, choices: tuple[str, ...]) -> str:
    require(value in choices, key, f"unknown value {value!r}; valid: {', '.join(choices)}")
    return value


class Noise:
    """i.i.d. noise with parameter ``sigma``: Laplace(0, b) with b = sigma (``laplace_param=
    "scale"``, the default, as gradient-leakage code does) or b = sqrt(sigma / 2) (``"variance"``,
    the paper's wording "Laplacian noise with variance sigma"); or N(0, sigma^2)."""

    def __init__(self, sigma: float, noise: str = "laplace", laplace_param: str = "scale") -> None:
        self.sigma = check_sigma(sigma)
        self.kind = check_choice(noise, "noise", NOISES)
        self.laplace_param = check_choice(laplace_param, "laplace_param", LAPLACE_PARAMS)

    @property
    def laplace_scale(self) -> float:
        return self.sigma if self.laplace_param == "scale" else math.sqrt(self.sigma / 2)

    @property
    def variance(self) -> float:
        if self.kind == "gaussian":
            return self.sigma ** 2
        return 2 * self.laplace_scale ** 2

    def sample(self, like: Tensor, rng: torch.Generator) -> Tensor:
        if self.sigma == 0:
            return torch.zeros_like(like)
        if self.kind == "gaussian":
            return self.sigma * torch.randn(like.shape, generator=rng, dtype=like.dtype)
        # Laplace(0, b) = b (E1 - E2) for independent Exp(1); 1 - rand lies in (0, 1].
        e1 = -torch.log1p(-torch.rand(like.shape, generator=rng, dtype=torch.float64))
        e2 = -torch.log1p(-torch.rand(like.shape, generator=rng, dtype=torch.float64))
        return (self.laplace_scale * (e1 - e2)).to(like.dtype)

    def describe(self) -> str:
        if self.kind == "gaussian":
            return f"Gaussian std {self.sigma:g} (variance {self.variance:g})"
        return f"Laplace scale {self.laplace_scale:g} (variance {self.variance:g})"


def global_norm(tensors: dict[str, Tensor] | list[Tensor]) -> Tensor:
    values = tensors.values() if isinstance(tensors, dict) else tensors
    return torch.sqrt(sum((t.double() ** 2).sum() for t in values))


def clip_to(update: Update, clip: float) -> Update:
    """Scale ``update`` so its global L2 norm is at most ``clip``."""
    factor = min(1.0, clip / (float(global_norm(update)) + 1e-12))
    return {k: v * factor for k, v in update.items()}
