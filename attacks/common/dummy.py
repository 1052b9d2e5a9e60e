"""Dummy graphs: the variables optimisation attacks fit to an observed gradient.

Each dummy graph has free features ``x [n, F]`` and one logit per unordered node pair; the
adjacency is the sigmoid of those logits placed in a symmetric matrix with a zero diagonal, so it
is differentiable, symmetric and in [0, 1] (the adaptation of DLG/TabLeak to graphs that GRAIN
and GraphDLG use for their baselines).
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from attacks.base import Reconstruction


def symmetric_adjacency(edge_logits: Tensor, n: int) -> Tensor:
    """``sigmoid(S)`` on the strict upper triangle, mirrored, zero diagonal."""
    iu = torch.triu_indices(n, n, offset=1)
    upper = edge_logits.new_zeros(n, n).index_put((iu[0], iu[1]), torch.sigmoid(edge_logits))
    return upper + upper.t()


class DummyGraphs:
    """A batch of dummy graphs with the given node counts, initialised from ``gen``."""

    def __init__(self, node_counts: list[int], num_features: int, gen: torch.Generator,
                 feature_init: str = "randn") -> None:
        self.node_counts = list(node_counts)
        self.features = [self._init((n, num_features), feature_init, gen) for n in node_counts]
        self.edge_logits = [torch.randn(n * (n - 1) // 2, generator=gen).requires_grad_()
                            for n in node_counts]

    @staticmethod
    def _init(shape, how: str, gen: torch.Generator) -> Tensor:
        if how == "randn":
            t = torch.randn(shape, generator=gen)
        elif how == "rand":
            t = torch.rand(shape, generator=gen)
        elif how == "uniform_pm1":
            t = torch.rand(shape, generator=gen) * 2 - 1
        else:
            raise ValueError(f"unknown init '{how}'")
        return t.requires_grad_()

    def variables(self) -> list[Tensor]:
        return self.features + self.edge_logits

    def dense(self, feature_map: Callable[[Tensor], Tensor] = lambda x: x):
        """Padded ``(x [B, N, F], adj [B, N, N], mask [B, N])`` for the dense model forward."""
        size = max(self.node_counts)
        xs, adjs, masks = [], [], []
        for x, logits, n in zip(self.features, self.edge_logits, self.node_counts):
            pad = size - n
            xs.append(torch.nn.functional.pad(feature_map(x), (0, 0, 0, pad)))
            adjs.append(torch.nn.functional.pad(symmetric_adjacency(logits, n), (0, pad, 0, pad)))
            masks.append(torch.arange(size) < n)
        return torch.stack(xs), torch.stack(adjs), torch.stack(masks)

    def reconstructions(self, labels: list[int | None],
                        feature_map: Callable[[Tensor], Tensor] = lambda x: x,
                        info: dict | None = None) -> list[Reconstruction]:
        with torch.no_grad():
            return [Reconstruction(x=feature_map(x).detach().clone(),
                                   adj=symmetric_adjacency(logits, n).detach().clone(),
                                   num_nodes=n, label=label, info=dict(info or {}))
                    for x, logits, n, label in zip(self.features, self.edge_logits,
                                                   self.node_counts, labels)]
