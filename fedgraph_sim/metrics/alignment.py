"""Node correspondences between a reconstruction and the true graph.

GNNs with pooling are permutation invariant, so a reconstruction is only defined up to node
order. ``identity`` compares node i with node i (the papers' convention); ``matched`` first finds
the assignment of reconstructed to true nodes that minimises the squared feature distance
(Hungarian algorithm, scipy's ``linear_sum_assignment``).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

ALIGNMENTS = ("identity", "matched")


def identity_alignment(n_hat: int, n: int) -> np.ndarray:
    """Index of the reconstructed node for each true node (-1 where the reconstruction is short)."""
    order = np.arange(n)
    order[order >= n_hat] = -1
    return order


def matched_alignment(x_hat: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Hungarian matching on ``||x_hat_i - x_j||^2``; returns, per true node, its reconstructed
    node (-1 for true nodes left unmatched when the reconstruction has fewer nodes)."""
    cost = ((x_hat[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    rows, cols = linear_sum_assignment(cost)
    order = np.full(x.shape[0], -1)
    order[cols] = rows
    return order
