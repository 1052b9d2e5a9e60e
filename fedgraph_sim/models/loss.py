"""The training loss of the federated model (``train.loss``), shared by clients and attackers.

- ``cross_entropy``: softmax cross-entropy, mean over the batch (GraphDLG, DLG, iDLG).
- ``bce``: binary cross-entropy with logits on one-hot targets, mean over batch x classes: the
  loss of GRAIN (Drencheva et al., ICLR 2025), whose official code trains
  ``BCEWithLogitsLoss`` on ``[1, 0]`` / ``[0, 1]`` targets and averages over all entries.
- ``mse``: squared error of a one-output model against real targets ``[B]``, mean over the batch
  (``data.task_type: regression``; FreeSolv in FedGIG, Xiao et al., arXiv:2412.18513).

Classification targets are class indices ``[B]`` (long) or class probabilities ``[B, C]`` (soft
labels, as DLG optimises them); regression targets are reals ``[B]``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from fedgraph_sim.errors import require

LOSSES = ("cross_entropy", "bce", "mse")


def _probabilities(target: Tensor, num_classes: int) -> Tensor:
    if target.dtype == torch.long:
        # a comparison, not F.one_hot, whose range check reads the labels' values: DP-SGD takes
        # per-graph gradients of this loss under torch.func.vmap, where that cannot run
        classes = torch.arange(num_classes, device=target.device)
        return (target.unsqueeze(-1) == classes).to(torch.get_default_dtype())
    return target


def classification_loss(logits: Tensor, target: Tensor, loss: str = "cross_entropy") -> Tensor:
    """The mean loss of ``logits [B, C]`` against ``target`` (indices ``[B]`` or probs ``[B, C]``).

    Args:
        logits (Tensor): ``[B, C]``.
        target (Tensor): class indices ``[B]`` (long), probabilities ``[B, C]``, or reals ``[B]``
            for ``mse``.
        loss (str, optional): one of :data:`LOSSES`. (default: ``"cross_entropy"``)
    """
    return example_losses(logits, target, loss).mean()


def example_losses(logits: Tensor, target: Tensor, loss: str = "cross_entropy") -> Tensor:
    """The loss of each row of ``logits [B, C]``, ``[B]`` (``bce``: the mean over its classes;
    ``mse``: ``C`` is 1).

    Args:
        logits (Tensor): ``[B, C]``.
        target (Tensor): class indices ``[B]`` (long), probabilities ``[B, C]``, or reals ``[B]``
            for ``mse``.
        loss (str, optional): one of :data:`LOSSES` (else :class:`ConfigError`).
            (default: ``"cross_entropy"``)
    """
    require(loss in LOSSES, "train.loss", f"unknown loss '{loss}'; valid: {', '.join(LOSSES)}")
    if loss == "mse":
        return (logits.reshape(len(logits), -1)[:, 0] - target.reshape(-1).to(logits.dtype)) ** 2
    if loss == "bce":
        probs = _probabilities(target, logits.size(-1)).to(logits.dtype)
        return torch.nn.functional.binary_cross_entropy_with_logits(logits, probs, reduction="none").mean(-1)
    if target.dtype == torch.long:
        return torch.nn.functional.cross_entropy(logits, target, reduction="none")
    return -(target * torch.log_softmax(logits, dim=-1)).sum(-1)
