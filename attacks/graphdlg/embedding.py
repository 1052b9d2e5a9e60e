"""Pooled-embedding recovery from the classifier gradients (GraphDLG Sec. 4.1, Eqs. 7-8).

For one graph and softmax cross-entropy, ``grad W_fc = g h_G^T`` and ``grad b_fc = g`` with
``g = dL/dlogits``, so every class row j gives ``h_G = grad W_fc[j] / grad b_fc[j]``. We use all
rows at once by least squares, ``h_G = grad W_fc^T grad b_fc / ||grad b_fc||^2`` (identical
without noise, better conditioned under noise or pruning), in float64, skipping rows whose bias
gradient is (numerically) zero, e.g. zeroed by pruning.

For a batch of B graphs the same formula returns an affine combination of the B embeddings (a
"batch embedding"; for two classes a single vector with weights of both signs): individual
graphs are not identifiable (Wei et al. 2026, GraphDLG).
"""

from __future__ import annotations

import torch
from torch import Tensor


def recover_embedding(weight_grad: Tensor, bias_grad: Tensor,
                      rel_tol: float = 1e-10) -> Tensor | None:
    """``h_G`` (float64) from ``grad W_fc [C, d]`` and ``grad b_fc [C]``; None if every bias row
    is zero (nothing to divide by: the attack fails rather than dividing by zero)."""
    w, b = weight_grad.double(), bias_grad.double()
    scale = b.abs().max()
    if not torch.isfinite(scale) or scale == 0:
        return None
    keep = b.abs() > rel_tol * scale
    return w[keep].t() @ b[keep] / (b[keep] ** 2).sum()
