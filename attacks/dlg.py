"""``dlg``: Deep Leakage from Gradients (Zhu, Liu and Han, NeurIPS 2019), adapted to graphs.

Threat model: honest-but-curious server with the exact FedSGD gradient of one batch, the global
weights, and the node count of each graph (as GraphDLG and GRAIN grant every baseline).
Recovers: node features, adjacency scores and the label, by jointly optimising dummy features
``X``, edge logits ``S`` (adjacency = sigmoid of a symmetric upper triangle) and label logits
``l`` so that the gradient of softmax-CE with soft label ``softmax(l)`` matches the observed one
under ``sum_l ||grad_hat_l - grad_l||^2``.
Defaults (GraphDLG spec section 5): L-BFGS, lr 1, 100 steps (one closure per step, 20 inner
evaluations), ``randn`` initialisation. The original code uses 300 steps; raise ``iterations``
for a longer-budget check. Like breaching, the lowest-loss finite iterate is returned.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attacks.base import Attack, AttackContext, Reconstruction, Requirements, register
from attacks.common import DummyGraphs, GradientMatcher, lbfgs
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate


@register
class DLG(Attack):
    name = "dlg"
    paper = "Zhu, Liu, Han. Deep Leakage from Gradients. NeurIPS 2019"
    requires = Requirements(exact_gradient=True, node_count=True)

    @dataclass
    class Params:
        iterations: int = 100
        lr: float = 1.0
        max_iter: int = 20
        distance: str = "l2"
        feature_init: str = "randn"

    def labels(self, update: ObservedUpdate, knowledge: AttackerKnowledge,
               gen: torch.Generator) -> torch.Tensor:
        """Soft label logits to optimise (DLG); iDLG overrides this with a fixed label."""
        return torch.randn(len(knowledge.node_counts), knowledge.num_classes,
                           generator=gen).requires_grad_()

    def reconstruct(self, update: ObservedUpdate, knowledge: AttackerKnowledge,
                    ctx: AttackContext) -> list[Reconstruction]:
        p = self.params
        gen = ctx.generator()
        model = knowledge.build_model(update.global_weights)
        matcher = GradientMatcher(model, update.gradient, p.distance, knowledge.loss)
        dummy = DummyGraphs(list(knowledge.node_counts), knowledge.num_features, gen, p.feature_init)
        labels = self.labels(update, knowledge, gen)
        learn_labels = labels.dtype != torch.long
        variables = dummy.variables() + ([labels] if learn_labels else [])

        def objective():
            target = torch.softmax(labels, dim=-1) if learn_labels else labels
            return matcher(*dummy.dense(), target)

        loss = lbfgs(variables, objective, ctx, iterations=p.iterations, lr=p.lr, max_iter=p.max_iter)
        guesses = labels.argmax(-1) if learn_labels else labels
        return dummy.reconstructions(guesses.tolist(), info={"gradient_distance": loss})
