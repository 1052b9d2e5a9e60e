r"""The client's check for crafted weights: refuse a round whose model is mostly dead, zeroed or
rescaled.

A malicious server's crafting must hide some of each client's computation from the others, and
within a ReLU network the way to do that is a unit that never fires: model inconsistency
(Pasquini et al., CCS 2022) gives each client a model most of whose units are zero, trap weights
(Boenisch et al., EuroS&P 2023) push most units below zero. The client sees the weights it
received and its own batch, so it counts two things:

- for every ReLU module, the units that output zero on every row of its first forward pass (the
  weights as sent),

  .. math::
      \mathrm{dead}_\ell = \frac{1}{C_\ell}\,\#\{u : \max_i \mathrm{ReLU}(z_{i,u}) = 0\};

- for every linear map, the output units whose incoming weights and bias are all exactly zero
  (:math:`\mathrm{zero}_\ell`), which no random initialisation or gradient step produces.

- for every linear map, how far its weight's norm stands from the norm its architecture's own
  initialisation gives it,

  .. math::
      \mathrm{scale}_\ell = \max\Big(\frac{\lVert W_\ell \rVert_F}{\bar w_\ell},
      \frac{\bar w_\ell}{\lVert W_\ell \rVert_F}\Big), \qquad
      \bar w_\ell^2 = \mathbb{E}\,\lVert W_\ell^{\mathrm{init}} \rVert_F^2,

  the expectation taken over the module's own ``reset_parameters`` (the mean of a few draws from
  a generator of its own, so the run's random stream is untouched); for the last linear map (the
  logits) only its shrinking counts, :math:`\max(\bar w_\ell / \lVert W_\ell \rVert_F, 1)`,
  because training grows it as the model grows confident (twice its initial norm after 1000 SGD
  steps of lr 0.1 on GRAIN's Tox21 victim, where the other maps moved by under 5%:
  ``experiments/crafted_check_drift.py``). A server that rescales layers (the rescaling symmetry
  of ReLU networks: the function, the dead units and the zero counts stay as they were) must
  shrink the layers an attack reads, and the client knows its architecture's initialisation,
  which the server cannot set.

It flags the round when some layer's :math:`\mathrm{dead}_\ell` exceeds ``dead``, some layer's
:math:`\mathrm{zero}_\ell` exceeds ``zero`` or some linear map's :math:`\mathrm{scale}_\ell`
exceeds ``scale``. An honest model keeps most units alive, but not on every batch: on a molecule
of a few atoms, whose nodes' features are alike, about half of a bias-free GCN layer's units can
be dead, which is why ``dead`` defaults to 3/4 (its false alarms over honest client rounds are
measured in the results' "malicious server" section). A flagged round is refused (``action:
refuse``: the client replies a zero update, which tells the server nothing) or only reported
(``action: flag``); the report carries ``crafted-flag`` and the largest ``dead-fraction``,
``zero-fraction`` and ``scale-factor``.

Args:
    dead: the fraction of a ReLU layer's units dead on the client's batch above which it flags.
    zero: the fraction of a linear map's output units with all-zero weights above which it flags.
    scale: the factor (>= 1) by which a linear map's weight norm may stand above or below its
        initialisation's before it flags; ``0`` turns the criterion off.
    action: ``refuse`` (a zero update) or ``flag`` (report only).

Limits: it knows ReLU only (an ELU or GELU unit is never exactly zero); a crafting that gives the
silenced units tiny random weights and a negative bias passes the zero count, and one that keeps
units alive but routes them elsewhere (bins over a statistic with live units) passes both. The
scale criterion assumes the federation starts from the architecture's default initialisation and
that training moves a layer's norm by less than ``scale``: a model loaded from a long pretraining
may stand further from it, and a server that rescales by less than ``scale`` passes (which bounds
what a rescaling can buy it: a signal over float32 rounding grown by at most ``scale**2``).
"""

from __future__ import annotations

import copy
from contextlib import contextmanager

import torch
from torch import nn

from clients.defenses.base import ClientTurn, Defense, Update, check_choice, check_number
from fedgraph_sim import registry
from fedgraph_sim.errors import require

ACTIONS = ("refuse", "flag")


@registry.defenses.register
class CraftedCheck(Defense):
    name = "crafted_check"
    hooks_forward = True  # reads the layer outputs of the first forward pass

    def __init__(self, dead: float = 0.75, zero: float = 0.25, scale: float = 2.0, action: str = "refuse") -> None:
        self.dead = check_number(dead, "dead", high=1.0)
        self.zero = check_number(zero, "zero", high=1.0)
        self.scale = check_number(scale, "scale")
        require(self.scale == 0 or self.scale >= 1, "scale", f"must be 0 (off) or >= 1 (got {scale!r})")
        self.action = check_choice(action, "action", ACTIONS)
        self.fractions: dict[str, float] = {}
        self.zeroed: dict[str, float] = {}
        self.scales: dict[str, float] = {}

    def begin(self, turn: ClientTurn, state) -> None:
        self.fractions, self.zeroed, self.scales = {}, {}, {}

    @contextmanager
    def training(self, model: nn.Module, rng: torch.Generator):
        def first_pass(name):
            def hook(module, inputs, output):
                if name not in self.fractions and output.numel():  # the weights as the server sent them
                    self.fractions[name] = dead_fraction(output)
            return hook

        self.zeroed = zero_fractions(model)  # the weights as sent, before any step
        self.scales = scale_factors(model) if self.scale else {}
        handles = [m.register_forward_hook(first_pass(n)) for n, m in model.named_modules() if isinstance(m, nn.ReLU)]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

    @property
    def flagged(self) -> bool:
        return (any(f > self.dead for f in self.fractions.values())
                or any(f > self.zero for f in self.zeroed.values())
                or any(f > self.scale for f in self.scales.values()))

    def apply(self, update: Update, rng: torch.Generator) -> Update:
        if self.flagged and self.action == "refuse":
            return {k: torch.zeros_like(v) for k, v in update.items()}
        return update

    def report(self) -> dict[str, float]:
        return {"crafted-flag": float(self.flagged), "dead-fraction": max(self.fractions.values(), default=0.0),
                "zero-fraction": max(self.zeroed.values(), default=0.0),
                "scale-factor": max(self.scales.values(), default=1.0)}


def dead_fraction(output: torch.Tensor) -> float:
    """The fraction of units (last axis) that are zero on every row of ``output``."""
    rows = output.detach().reshape(-1, output.shape[-1])
    return float((rows.abs().amax(0) == 0).float().mean())


def zero_fractions(model: nn.Module) -> dict[str, float]:
    """Module name -> the fraction of its output units whose weight row (and bias) is all zero,
    for every module with a 2-D ``weight`` of more than one row (``torch.nn.Linear`` and PyG's
    ``Linear``)."""
    out = {}
    for name, module, weight in _weights(model, rows=2):
        silent = weight.detach().abs().amax(1) == 0
        bias = getattr(module, "bias", None)
        if isinstance(bias, torch.Tensor) and bias.shape == silent.shape:
            silent &= bias.detach() == 0
        out[name] = float(silent.float().mean())
    return out


def scale_factors(model: nn.Module) -> dict[str, float]:
    """Module name -> how far its 2-D ``weight``'s Frobenius norm stands from its initialisation's
    (:func:`init_norms`), ``max(r, 1/r)``; for the last such module, the logits, ``max(1/r, 1)``:
    training grows it. A weight without an initialisation (:func:`init_norms`), or whose
    initialisation is all zero, is left out: no factor is defined."""
    init = init_norms(model)
    weights = [(name, weight) for name, _, weight in _weights(model) if init.get(name, 0.0) > 0]
    out = {}
    for i, (name, weight) in enumerate(weights):
        sent = float(weight.detach().double().norm())
        grown = sent / init[name] if i < len(weights) - 1 else 1.0
        out[name] = max(grown, init[name] / sent) if sent > 0 else float("inf")
    return out


def init_norms(model: nn.Module, draws: int = 4) -> dict[str, float]:
    """Module name -> the root mean square Frobenius norm of its 2-D ``weight`` over ``draws``
    fresh initialisations of a copy of ``model`` (each module's ``reset_parameters``, on a seeded
    generator forked from the global one, so the caller's random stream is untouched). A weight
    no ``reset_parameters`` redraws (a user's module without one) is left out: it has no
    initialisation to compare with."""
    fresh = copy.deepcopy(model)
    sent = {name: weight.detach().clone() for name, _, weight in _weights(model)}
    squares: dict[str, float] = {}
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(0)
        for _ in range(draws):
            for module in fresh.modules():
                if hasattr(module, "reset_parameters"):
                    module.reset_parameters()
            for name, _, weight in _weights(fresh):
                squares[name] = squares.get(name, 0.0) + float(weight.double().square().sum()) / draws
        redrawn = {name for name, _, weight in _weights(fresh) if not torch.equal(weight, sent[name])}
    return {name: total ** 0.5 for name, total in squares.items() if name in redrawn}


def _weights(model: nn.Module, rows: int = 1):
    """(name, module, weight) for every module with a materialised 2-D ``weight`` of at least ``rows`` rows."""
    for name, module in model.named_modules():
        weight = getattr(module, "weight", None)
        if (isinstance(weight, torch.Tensor) and not isinstance(weight, nn.parameter.UninitializedParameter)
                and weight.dim() == 2 and weight.size(0) >= rows):
            yield name, module, weight
