"""``idlg``: improved DLG (Zhao, Mopuri and Bilen, 2020), adapted to graphs.

Threat model: as ``dlg`` (a FedSGD gradient or a FedAvg update, global weights, node-count hint).
Recovers: node features and adjacency scores; the label is read off the gradient first and
fixed, then ``X`` and ``S`` are optimised as in DLG with hard-label cross-entropy.
Defaults: L-BFGS, lr 1, 100 steps, L2 gradient distance. ``label_rule="idlg"`` (the paper's rule:
the class whose row of the final layer's weight gradient has the smallest sum, valid because the
pooled ReLU embedding is non-negative); ``label_rule="bias"`` uses the only negative entry of the
bias gradient, exact for batch size 1 (breaching's "analytic" rule). Both rules are for one graph;
for more (a batch, or a FedAvg update's several steps) the labels are counted from the bias
gradient (``attacks.common.labels``). A regression model's real target has no such rule: it is
optimised jointly, as in DLG (FedGIG's reading for FreeSolv, Xiao et al., arXiv:2412.18513).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attacks.base import register
from attacks.common import batch_labels, idlg_label, label_from_bias
from attacks.common.labels import regression_labels
from attacks.dlg import DLG
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate

LABEL_RULES = ("idlg", "bias")


def classifier_gradients(update: ObservedUpdate, knowledge: AttackerKnowledge):
    """``(grad W, grad b)`` of the final linear layer, by parameter name."""
    prefix = knowledge.build_model().final_linear_name
    return update.gradient[f"{prefix}.weight"], update.gradient[f"{prefix}.bias"]


@register
class IDLG(DLG):
    name = "idlg"
    cited_as = "Zhao et al., 2020"
    threat_model = "as dlg"
    recovers = "features, edge scores; label from iDLG's rule first (counted for batches)"
    defaults_note = "as dlg, `label_rule: idlg` (or `bias`)"
    paper = "Zhao, Mopuri, Bilen. iDLG: Improved Deep Leakage from Gradients. arXiv 2001.02610, 2020"

    @dataclass
    class Params(DLG.Params):
        label_rule: str = "idlg"

    def labels(self, update: ObservedUpdate, knowledge: AttackerKnowledge) -> torch.Tensor:
        if self.params.label_rule not in LABEL_RULES:
            raise ConfigError(f"attack.params.idlg.label_rule: unknown rule "
                              f"'{self.params.label_rule}'; valid: {', '.join(LABEL_RULES)}")
        if knowledge.task_type == "regression":
            return regression_labels(knowledge)
        weight, bias = classifier_gradients(update, knowledge)
        batch = len(knowledge.node_counts)
        if knowledge.labels is not None or batch > 1:  # granted, or counted
            return torch.tensor(batch_labels(bias, batch, knowledge.build_model(update.global_weights), knowledge))
        if self.params.label_rule == "idlg":
            return torch.tensor([idlg_label(weight)])
        return torch.tensor(label_from_bias(bias, 1))
