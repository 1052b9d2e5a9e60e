"""Gradient distances over all parameter tensors.

- ``l2``: ``sum_l ||g_hat_l - g_l||^2`` (DLG, Zhu et al. 2019; iDLG, Zhao et al. 2020).
- ``cosine``: ``1 - <g_hat, g> / (||g_hat|| ||g||)`` with all layers concatenated (Inverting
  Gradients, Geiping et al. 2020).
- ``per_node_cosine``: the cosine distance per node, averaged, for per-node gradients.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor


def l2_distance(dummy: Sequence[Tensor], target: Sequence[Tensor]) -> Tensor:
    return sum(((a - b) ** 2).sum() for a, b in zip(dummy, target))


def cosine_distance(dummy: Sequence[Tensor], target: Sequence[Tensor]) -> Tensor:
    dot = sum((a * b).sum() for a, b in zip(dummy, target))
    norm_a = torch.sqrt(sum((a * a).sum() for a in dummy))
    norm_b = torch.sqrt(sum((b * b).sum() for b in target))
    return 1 - dot / (norm_a * norm_b).clamp(min=1e-12)


DISTANCES = {"l2": l2_distance, "cosine": cosine_distance}


def per_node_cosine(dummy: dict[str, Tensor], target: dict[str, Tensor]) -> Tensor:
    """``mean_i (1 - cos(g_hat_i, g_i))`` over per-node gradients ``[N, ...]`` by parameter name,
    every parameter of node i concatenated (GLG's Node-2 distance, Sinha et al., arXiv:2411.19440)."""
    a = torch.cat([dummy[k].flatten(1) for k in target], dim=1)
    b = torch.cat([target[k].flatten(1) for k in target], dim=1)
    return (1 - torch.nn.functional.cosine_similarity(a, b, dim=1, eps=1e-12)).mean()
