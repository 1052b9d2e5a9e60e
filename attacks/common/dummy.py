"""Dummy graphs: the variables optimisation attacks fit to an observed gradient.

Each dummy graph has free features ``x [n, F]`` and one logit per unordered node pair; the
adjacency is the sigmoid of those logits placed in a symmetric matrix with a zero diagonal, so it
is differentiable, symmetric and in [0, 1] (the adaptation of DLG/TabLeak to graphs that GRAIN
and GraphDLG use for their baselines). With ``adjacency`` given (a granted true adjacency, GRAIN's
"+A" baselines) only the features are variables. ``schema_softmax`` maps free logits to one-hot
rows relaxed as one softmax per feature block, in the model's (standardised) encoding.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from attacks.base import Reconstruction
from fedgraph_sim.data.schema import FeatureSchema


def schema_softmax(z: Tensor, schema: FeatureSchema) -> Tensor:
    """A softmax per one-hot block of ``z [.., F]``, then the schema's standardisation."""
    soft = torch.cat([torch.softmax(z[..., s], dim=-1) for s in schema.slices().values()], dim=-1)
    return schema.standardize(soft)


def symmetric_adjacency(edge_logits: Tensor, n: int) -> Tensor:
    """``sigmoid(S)`` on the strict upper triangle, mirrored, zero diagonal."""
    return mirrored(torch.sigmoid(edge_logits), n)


def mirrored(upper: Tensor, n: int) -> Tensor:
    """Strict-upper-triangle values ``[n(n-1)/2]`` as a symmetric ``[n, n]`` with a zero diagonal."""
    iu = torch.triu_indices(n, n, offset=1)
    half = upper.new_zeros(n, n).index_put((iu[0], iu[1]), upper)
    return half + half.t()


def project_unit_interval(values: Tensor) -> None:
    """Projected gradient descent's projection onto [0, 1] (GLG, Eq. 15), in place."""
    with torch.no_grad():
        values.clamp_(0.0, 1.0)


class DummyGraphs:
    """A batch of dummy graphs with the given node counts, initialised from ``gen``."""

    def __init__(self, node_counts: list[int], num_features: int, gen: torch.Generator,
                 feature_init: str = "randn", adjacency: list[Tensor] | None = None) -> None:
        self.node_counts = list(node_counts)
        self.features = [self._init((n, num_features), feature_init, gen) for n in node_counts]
        self.known = None if adjacency is None else [a.float() for a in adjacency]
        self.edge_logits = [] if adjacency is not None else [
            torch.randn(n * (n - 1) // 2, generator=gen).requires_grad_() for n in node_counts]

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

    def adjacency(self, i: int) -> Tensor:
        if self.known is not None:
            return self.known[i]
        return symmetric_adjacency(self.edge_logits[i], self.node_counts[i])

    def dense(self, feature_map: Callable[[Tensor], Tensor] = lambda x: x):
        """Padded ``(x [B, N, F], adj [B, N, N], mask [B, N])`` for the dense model forward."""
        size = max(self.node_counts)
        xs, adjs, masks = [], [], []
        for i, (x, n) in enumerate(zip(self.features, self.node_counts)):
            pad = size - n
            xs.append(torch.nn.functional.pad(feature_map(x), (0, 0, 0, pad)))
            adjs.append(torch.nn.functional.pad(self.adjacency(i), (0, pad, 0, pad)))
            masks.append(torch.arange(size) < n)
        return torch.stack(xs), torch.stack(adjs), torch.stack(masks)

    def reconstructions(self, labels: list[int | None],
                        feature_map: Callable[[Tensor], Tensor] = lambda x: x,
                        info: dict | None = None) -> list[Reconstruction]:
        with torch.no_grad():
            return [Reconstruction(x=feature_map(x).detach().clone(), adj=self.adjacency(i).detach().clone(),
                                   num_nodes=n, label=label, info=dict(info or {}))
                    for i, (x, n, label) in enumerate(zip(self.features, self.node_counts, labels))]
