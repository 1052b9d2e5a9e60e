"""``inverting_gradients``: Inverting Gradients (Geiping, Bauermeister, Droege and Moeller,
NeurIPS 2020), adapted to graphs.

Threat model: honest-but-curious server with one client's update (a FedSGD gradient, or a FedAvg
update whose local SGD steps it simulates on the dummy batches with the learning rate, steps and
batch size it configured, as the paper's Sec. 5 does), the global weights and the node-count hint.
Recovers: node features (boxed into [0, 1]) and adjacency scores (sigmoid of edge logits); the
labels are read off the final bias gradient (exact for one graph, counted for a batch; which graph
of a FedAvg update's steps has which label is not recoverable, so with several steps the labels
are only right with the label hint, ``threat.label``, as the paper's multi-step experiments
assume them known).
Objective: ``1 - cos(grad_hat, grad)`` over all layers concatenated; no total-variation prior
(it has no graph analogue; GraphDLG omits it too).
Defaults (as GraphDLG, Wei et al. 2026, runs its baselines): Adam lr 0.1 on signed gradients, step
decay x0.1 at 3/8, 5/8 and 7/8 of the budget, 100 iterations, ``randn`` initialisation. The original
uses 4800 iterations (24k in breaching).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attacks.base import Attack, AttackContext, ContractCase, Reconstruction, Requirements, register
from attacks.common import DummyGraphs, GradientMatcher, Schedule, batch_labels, minimise, simulation_problem
from attacks.common.parametrisations import boxed
from attacks.idlg import classifier_gradients
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate


@register
class InvertingGradients(Attack):
    name = "inverting_gradients"
    cited_as = "Geiping et al., NeurIPS 2020"
    threat_model = "as dlg"
    recovers = "features boxed to [0,1], edge scores; labels from the bias gradient (counted for batches)"
    defaults_note = "Adam lr 0.1, signed, decay x0.1 at 3/8, 5/8, 7/8, 100 iterations, cosine distance, no TV prior"
    paper = "Geiping et al. Inverting Gradients: How easy is it to break privacy in FL? NeurIPS 2020"
    requires = Requirements(node_count=True, model="forward")
    contract_cases = (ContractCase("graph", {"iterations": 10}),)

    @dataclass
    class Params:
        iterations: int = 100
        lr: float = 0.1
        signed: bool = True
        milestones: tuple[float, ...] = (3 / 8, 5 / 8, 7 / 8)
        feature_init: str = "randn"

    def not_applicable(self, update: ObservedUpdate, knowledge: AttackerKnowledge) -> str | None:
        return super().not_applicable(update, knowledge) or simulation_problem(update)

    def reconstruct(self, update: ObservedUpdate, knowledge: AttackerKnowledge,
                    ctx: AttackContext) -> list[Reconstruction]:
        p = self.params
        model = knowledge.build_model(update.global_weights)
        matcher = GradientMatcher.for_update(model, update, "cosine", knowledge.loss)
        _, bias = classifier_gradients(update, knowledge)
        labels = torch.tensor(batch_labels(bias, len(knowledge.node_counts), model, knowledge))
        features = boxed(knowledge.num_features, p.feature_init)
        fit = minimise(lambda gen: DummyGraphs(list(knowledge.node_counts), gen, features=features, labels=labels),
                       lambda d: matcher(*d.dense(), d.label_targets()), ctx,
                       Schedule(iterations=p.iterations, lr=p.lr, signed=p.signed, milestones=p.milestones),
                       ctx.generator())
        return fit.dummy.reconstructions(info={"attack_input": matcher.attack_input})
