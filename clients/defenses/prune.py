"""Gradient pruning (Zhu et al., "Deep Leakage from Gradients", NeurIPS 2019, Sec. 6).

For each tensor separately, zero its ``k = floor(p * numel)`` entries of smallest magnitude
(ties broken by index: a stable argsort), so ``p`` is the fraction removed. ``floor``, not
``round``: a 2-entry bias at p = 0.99 keeps one entry, as DLG's pruning removes at most the fraction
p. ``scope: global`` ranks all entries of the update jointly instead.
"""

from __future__ import annotations

import math

import torch

from clients.defenses.base import Defense, Update, check_choice, check_number
from fedgraph_sim import registry

SCOPES = ("tensor", "global")


def prune_smallest(values: torch.Tensor, p: float) -> torch.Tensor:
    """A copy of ``values`` with its ``floor(p * numel)`` smallest-magnitude entries zeroed."""
    flat = values.reshape(-1).clone()
    k = math.floor(p * flat.numel())
    if k:
        flat[torch.argsort(flat.abs(), stable=True)[:k]] = 0
    return flat.view_as(values)


@registry.defenses.register
class Prune(Defense):
    name = "prune"
    contract_params = {"p": 0.5}

    def __init__(self, p: float, scope: str = "tensor") -> None:
        self.p, self.scope = check_number(p, "p", high=1.0), check_choice(scope, "scope", SCOPES)

    def apply(self, update: Update, rng: torch.Generator) -> Update:
        if self.scope == "tensor":
            return {k: prune_smallest(v, self.p) for k, v in update.items()}
        names = list(update)
        flat = prune_smallest(torch.cat([update[k].reshape(-1) for k in names]), self.p)
        out, start = {}, 0
        for k in names:
            out[k] = flat[start:start + update[k].numel()].view_as(update[k])
            start += update[k].numel()
        return out
