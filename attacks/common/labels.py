"""Label inference from the classifier gradient.

For softmax cross-entropy, ``dL/dlogits = softmax(logits) - onehot(y)``, and for the final
linear layer ``grad b = dL/dlogits`` (batch mean). With batch size 1 its only negative entry is
the true label: exact, and valid for any input to the layer (the "analytic" rule in breaching).
iDLG (Zhao et al. 2020) uses the row sums of ``grad W`` instead, which has the same sign as
``grad b`` when the layer's input is non-negative (ReLU then mean/sum pooling).
"""

from __future__ import annotations

from torch import Tensor


def label_from_bias(bias_grad: Tensor, batch_size: int = 1) -> list[int]:
    """The ``batch_size`` most negative entries of ``grad b`` (exact for batch size 1; for
    larger batches one label per negative entry, repeated when labels repeat)."""
    order = bias_grad.argsort().tolist()
    negatives = [c for c in order if bias_grad[c] < 0] or order[:1]
    return [negatives[i % len(negatives)] for i in range(batch_size)]


def idlg_label(weight_grad: Tensor) -> int:
    """iDLG's rule: the class whose row of ``grad W`` has the smallest (negative) sum."""
    return int(weight_grad.sum(dim=1).argmin())
