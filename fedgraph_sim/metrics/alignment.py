"""Node correspondences between a reconstruction and the true graph.

GNNs with pooling are permutation invariant, so a reconstruction is only defined up to node
order. ``identity`` compares node i with node i (the papers' convention); ``matched`` first finds
the assignment of reconstructed to true nodes that minimises the squared distance between node
descriptors (Hungarian algorithm, scipy's ``linear_sum_assignment``): the features plus a
structural signature (degree and neighbours' degree sum, scaled by n - 1 and (n - 1)^2; expected
values for edge scores), so that nodes of the same type are told apart by where they sit. Equal
signatures (symmetric atoms) leave it ambiguous: a perfect reconstruction of a molecule with
repeated atoms scores AUC about 0.7 after it. ``gsm`` uses a feature-preserving isomorphism of the
discretised reconstruction onto the truth when there is one, else GSM's matching on the features
and five layers of a fixed random GNN (``gsm.py``): an exact reconstruction scores AUC 1.
"""

from __future__ import annotations

import numpy as np

ALIGNMENTS = ("identity", "matched", "gsm")


def identity_alignment(n_hat: int, n: int) -> np.ndarray:
    """Index of the reconstructed node for each true node (-1 where the reconstruction is short).

    Args:
        n_hat (int): the reconstruction's node count.
        n (int): the true node count.

    Returns:
        ``[n]``: ``i``, or -1 for ``i >= n_hat``.
    """
    order = np.arange(n)
    order[order >= n_hat] = -1
    return order


def structural_signature(adj: np.ndarray, n: int) -> np.ndarray:
    """Per node: degree / (n - 1) and the sum of its neighbours' degrees / (n - 1)^2.

    Args:
        adj (np.ndarray): an adjacency or edge scores ``[m, m]`` (scores give expected degrees).
        n (int): the true node count, which sets the scale for both graphs.

    Returns:
        ``[m, 2]``.
    """
    scale = max(n - 1, 1)
    degree = adj.sum(1)
    return np.stack([degree / scale, adj @ degree / scale ** 2], axis=1)


def matched_alignment(x_hat: np.ndarray, x: np.ndarray, adj_hat: np.ndarray | None = None,
                      adj: np.ndarray | None = None) -> np.ndarray:
    """Hungarian matching on features (and structural signatures when both adjacencies are
    given); returns, per true node, its reconstructed node (-1 for true nodes left unmatched
    when the reconstruction has fewer nodes).

    Args:
        x_hat (np.ndarray): reconstructed features ``[n', F]``.
        x (np.ndarray): true features ``[n, F]``.
        adj_hat (np.ndarray, optional): edge scores ``[n', n']``. (default: :obj:`None`)
        adj (np.ndarray, optional): the true adjacency ``[n, n]``. (default: :obj:`None`)

    Returns:
        ``[n]`` reconstructed node indices, -1 where unmatched.
    """
    from scipy.optimize import linear_sum_assignment  # here: results and reports load this module

    a, b = x_hat, x
    if adj_hat is not None and adj is not None:
        n = x.shape[0]
        a = np.concatenate([x_hat, structural_signature(adj_hat, n)], axis=1)
        b = np.concatenate([x, structural_signature(adj, n)], axis=1)
    cost = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    rows, cols = linear_sum_assignment(cost)
    order = np.full(x.shape[0], -1)
    order[cols] = rows
    return order
