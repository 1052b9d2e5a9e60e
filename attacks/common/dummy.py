"""Dummy graphs: the unknowns an optimisation attack fits to an observed update.

A batch of dummy graphs with given node counts, each with a feature and an adjacency
:class:`~attacks.common.parametrisations.Parametrisation` built by the factories passed in (free,
boxed or schema-softmax features; sigmoid or projected adjacency; or a granted value), and the
batch's labels: DLG's :class:`~attacks.common.parametrisations.SoftLabels`, or known indices.
All features are drawn before all adjacencies, then the labels, so a seed gives the same start
whatever the parametrisation of the other parts.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attacks.base import Reconstruction
from attacks.common.parametrisations import (Factory, Known, Parametrisation, RegressionTargets, SoftLabels, free,
                                             sigmoid_adjacency)


class DummyGraphs:
    """``labels``: a tensor of known labels ``[B]`` (class indices, or reals for regression),
    ``"soft"`` (optimised jointly, DLG: class logits, or with ``num_classes`` 1 a real target per
    graph) or None (the objective does not use labels)."""

    def __init__(self, node_counts: list[int], gen: torch.Generator, *, features: Factory,
                 adjacency: Factory = sigmoid_adjacency(), labels: Tensor | str | None = None,
                 num_classes: int | None = None) -> None:
        self.node_counts = list(node_counts)
        self.features: list[Parametrisation] = [features(n, i, gen) for i, n in enumerate(node_counts)]
        self.adjacencies: list[Parametrisation] = [adjacency(n, i, gen) for i, n in enumerate(node_counts)]
        if isinstance(labels, str) and num_classes == 1:
            self.labels: Parametrisation | None = RegressionTargets(len(node_counts))
        elif isinstance(labels, str):
            self.labels = SoftLabels(len(node_counts), num_classes, gen)
        else:
            self.labels = None if labels is None else Known(labels)

    @classmethod
    def free(cls, node_counts: list[int], num_features: int, gen: torch.Generator, feature_init: str = "randn",
             **kw) -> "DummyGraphs":
        """Free features with a sigmoid adjacency (DLG's graph adaptation)."""
        return cls(node_counts, gen, features=free(num_features, feature_init), **kw)

    def parts(self) -> list[Parametrisation]:
        return self.features + self.adjacencies + ([self.labels] if self.labels is not None else [])

    def variables(self) -> list[Tensor]:
        return [v for part in self.parts() for v in part.variables]

    def project(self) -> None:
        for part in self.parts():
            part.project()

    def x(self, i: int) -> Tensor:
        return self.features[i].value()

    def adjacency(self, i: int) -> Tensor:
        return self.adjacencies[i].value()

    def label_targets(self) -> Tensor:
        """Class indices ``[B]`` or, for soft labels, distributions ``[B, C]``."""
        return self.labels.value()

    def label_guesses(self) -> list[int | float | None]:
        if self.labels is None:
            return [None] * len(self.node_counts)
        if isinstance(self.labels, (SoftLabels, RegressionTargets)):
            return self.labels.guesses()
        return self.labels.value().tolist()

    def dense(self):
        """Padded ``(x [B, N, F], adj [B, N, N], mask [B, N])`` for the dense model forward."""
        size = max(self.node_counts)
        xs, adjs, masks = [], [], []
        for i, n in enumerate(self.node_counts):
            pad = size - n
            xs.append(torch.nn.functional.pad(self.x(i), (0, 0, 0, pad)))
            adjs.append(torch.nn.functional.pad(self.adjacency(i), (0, pad, 0, pad)))
            masks.append(torch.arange(size) < n)
        return torch.stack(xs), torch.stack(adjs), torch.stack(masks)

    def reconstructions(self, info: dict | None = None) -> list[Reconstruction]:
        with torch.no_grad():
            return [Reconstruction(x=self.x(i).detach().clone(), adj=self.adjacencies[i].edge_scores().detach().clone(),
                                   num_nodes=n, label=label, info=dict(info or {}))
                    for i, (n, label) in enumerate(zip(self.node_counts, self.label_guesses()))]
