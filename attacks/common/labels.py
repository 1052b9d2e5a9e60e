"""Label inference from the classifier gradient.

For softmax cross-entropy, ``dL/dlogits = softmax(logits) - onehot(y)``, and for the final
linear layer ``grad b = dL/dlogits`` (batch mean). With batch size 1 its only negative entry is
the true label: exact, and valid for any input to the layer (the "analytic" rule in breaching).
iDLG (Zhao et al. 2020) uses the row sums of ``grad W`` instead, which has the same sign as
``grad b`` when the layer's input is non-negative (ReLU then mean/sum pooling).

For a batch of N graphs ``grad b = mean_i p_i - counts / N``, so the label counts are
``N * (mean p - grad b)``, with ``mean p`` the model's mean predicted distribution, which the
attacker estimates on graphs it has (the auxiliary set) or else takes as uniform (the counting
rule of Wainakh et al., "User-Level Label Leakage from Gradients in Federated Learning", PETS 2022;
Geng et al., "Towards General Deep Leakage in Federated Learning", 2021). The same holds for
binary cross-entropy on one-hot targets with ``p`` the sigmoid outputs. For a FedAvg update the
pseudo-gradient averages its steps' gradients, so the counts are an approximation there.
"""

from __future__ import annotations

import torch
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


def label_counts(bias_grad: Tensor, total: int, mean_prob: Tensor) -> list[int]:
    """How many of ``total`` graphs carry each label: ``total * (mean_prob - grad b)``, clipped at
    0 and rounded by largest remainder so they sum to ``total``."""
    raw = (total * (mean_prob.double() - bias_grad.double())).clamp(min=0)
    if float(raw.sum()) <= 0:
        raw = torch.ones_like(raw)
    raw = raw * (total / raw.sum())
    counts = raw.floor().long()
    for c in torch.argsort(raw - counts, descending=True)[: total - int(counts.sum())].tolist():
        counts[c] += 1
    return counts.tolist()


def labels_from_counts(counts: list[int]) -> list[int]:
    """One label per graph, class by class (which graph has which label is not recoverable)."""
    return [c for c, n in enumerate(counts) for _ in range(n)]


@torch.no_grad()
def mean_probability(model, graphs, num_classes: int, loss: str = "cross_entropy") -> Tensor:
    """The model's mean predicted distribution on ``graphs`` (uniform without graphs)."""
    if not graphs:
        return torch.full((num_classes,), 1.0 / num_classes)
    from torch_geometric.data import Batch

    batch = Batch.from_data_list(list(graphs))
    logits = model(batch.x.to(next(model.parameters()).dtype), batch.edge_index, batch.batch)
    probs = torch.sigmoid(logits) if loss == "bce" else torch.softmax(logits, dim=-1)
    return probs.mean(0)


def regression_labels(knowledge) -> Tensor | str:
    """A regression model's targets: granted (``threat.label``), else ``"soft"``: optimised jointly
    from 0, as FedGIG (Xiao et al., arXiv:2412.18513) does for FreeSolv (there is no sign rule
    for a real target)."""
    if knowledge.labels is not None:
        return torch.tensor(knowledge.labels, dtype=torch.get_default_dtype())
    return "soft"


def batch_labels(bias_grad: Tensor, total: int, model, knowledge) -> list[int]:
    """Labels of ``total`` graphs: granted (``threat.label``), else from the bias gradient, exact for
    one graph and counted for more."""
    if knowledge.labels is not None:
        return list(knowledge.labels)
    if total == 1:
        return label_from_bias(bias_grad, 1)
    mean_prob = mean_probability(model, knowledge.aux_graphs, knowledge.num_classes, knowledge.loss)
    return labels_from_counts(label_counts(bias_grad, total, mean_prob))
