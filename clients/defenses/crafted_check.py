r"""The client's check for crafted weights: refuse a round whose model is mostly dead or zeroed.

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

It flags the round when some layer's :math:`\mathrm{dead}_\ell` exceeds ``dead`` or some layer's
:math:`\mathrm{zero}_\ell` exceeds ``zero``. An honest model keeps most units alive, but not on
every batch: on a molecule of a few atoms, whose nodes' features are alike, about half of a
bias-free GCN layer's units can be dead, which is why ``dead`` defaults to 3/4 (its false alarms
over honest client rounds are measured in the results' "malicious server" section). A flagged
round is refused (``action: refuse``: the client replies a zero update, which tells the server
nothing) or only reported (``action: flag``); the report carries ``crafted-flag`` and the largest
``dead-fraction`` and ``zero-fraction``.

Args:
    dead: the fraction of a ReLU layer's units dead on the client's batch above which it flags.
    zero: the fraction of a linear map's output units with all-zero weights above which it flags.
    action: ``refuse`` (a zero update) or ``flag`` (report only).

Limits: it knows ReLU only (an ELU or GELU unit is never exactly zero); a crafting that gives the
silenced units tiny random weights and a negative bias passes the zero count, and one that keeps
units alive but routes them elsewhere (bins over a statistic with live units) passes both.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
from torch import nn

from clients.defenses.base import ClientTurn, Defense, Update, check_choice, check_number
from fedgraph_sim import registry

ACTIONS = ("refuse", "flag")


@registry.defenses.register
class CraftedCheck(Defense):
    name = "crafted_check"
    hooks_forward = True  # reads the layer outputs of the first forward pass

    def __init__(self, dead: float = 0.75, zero: float = 0.25, action: str = "refuse") -> None:
        self.dead = check_number(dead, "dead", high=1.0)
        self.zero = check_number(zero, "zero", high=1.0)
        self.action = check_choice(action, "action", ACTIONS)
        self.fractions: dict[str, float] = {}
        self.zeroed: dict[str, float] = {}

    def begin(self, turn: ClientTurn, state) -> None:
        self.fractions, self.zeroed = {}, {}

    @contextmanager
    def training(self, model: nn.Module, rng: torch.Generator):
        def first_pass(name):
            def hook(module, inputs, output):
                if name not in self.fractions and output.numel():  # the weights as the server sent them
                    self.fractions[name] = dead_fraction(output)
            return hook

        self.zeroed = zero_fractions(model)  # the weights as sent, before any step
        handles = [m.register_forward_hook(first_pass(n)) for n, m in model.named_modules() if isinstance(m, nn.ReLU)]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

    @property
    def flagged(self) -> bool:
        return (any(f > self.dead for f in self.fractions.values())
                or any(f > self.zero for f in self.zeroed.values()))

    def apply(self, update: Update, rng: torch.Generator) -> Update:
        if self.flagged and self.action == "refuse":
            return {k: torch.zeros_like(v) for k, v in update.items()}
        return update

    def report(self) -> dict[str, float]:
        return {"crafted-flag": float(self.flagged), "dead-fraction": max(self.fractions.values(), default=0.0),
                "zero-fraction": max(self.zeroed.values(), default=0.0)}


def dead_fraction(output: torch.Tensor) -> float:
    """The fraction of units (last axis) that are zero on every row of ``output``."""
    rows = output.detach().reshape(-1, output.shape[-1])
    return float((rows.abs().amax(0) == 0).float().mean())


def zero_fractions(model: nn.Module) -> dict[str, float]:
    """Module name -> the fraction of its output units whose weight row (and bias) is all zero,
    for every module with a 2-D ``weight`` (``torch.nn.Linear`` and PyG's ``Linear``)."""
    out = {}
    for name, module in model.named_modules():
        weight = getattr(module, "weight", None)
        if isinstance(weight, torch.Tensor) and weight.dim() == 2 and weight.size(0) > 1:
            silent = weight.detach().abs().amax(1) == 0
            bias = getattr(module, "bias", None)
            if isinstance(bias, torch.Tensor) and bias.shape == silent.shape:
                silent &= bias.detach() == 0
            out[name] = float(silent.float().mean())
    return out
