"""``dlg``: Deep Leakage from Gradients (Zhu, Liu and Han, NeurIPS 2019), adapted to graphs.

Threat model: honest-but-curious server with one client's update (the FedSGD gradient of one
batch, or the weights after several local steps), the global weights, the training settings it
configured itself (learning rate, local steps, batch size) and the node count of each graph (as
GraphDLG and GRAIN grant every baseline); with ``adjacency: granted`` also the true adjacency (the
"+A" baselines of GRAIN's Table 2, through the explicit ``threat.adjacency_known`` grant). A FedAvg
update is matched by simulating the client's local SGD steps on the dummy batches (Geiping et al.
2020, Sec. 5; rows say ``attack_input: simulated_local_training``); behind secure aggregation only
a FedSGD aggregate is attacked.
Recovers: node features, adjacency scores and the label, by jointly optimising dummy features
``X``, edge logits ``S`` (adjacency = sigmoid of a symmetric upper triangle) and label logits
``l`` so that the gradient of the training loss with soft label ``softmax(l)`` matches the
observed one under ``sum_l ||grad_hat_l - grad_l||^2``; for a regression model
(``data.task_type: regression``) the label is a free real target starting at 0.
Defaults (as GraphDLG, Wei et al. 2026, runs its baselines): L-BFGS, lr 1, 100 steps (one closure per step, 20 inner
evaluations), free ``randn`` features. The original code uses 300 steps; raise ``iterations``
for a longer-budget check. Like breaching, the lowest-loss finite iterate is returned (recorded
after each L-BFGS step, which can keep a runaway step). Two guards of ours, off in paper mode:
``line_search: strong_wolfe`` and ``divergence_guard: k`` (stop once the objective exceeds k times
its best and keep the best evaluated point; see ``attacks.common.optimize.Schedule``). On the
default round (MUTAG, 4 clients) DLG's feature MSE is 537,119 without them, 1.69 with
``divergence_guard: 10`` and 1.00 with the line search.
GRAIN's adaptation (Drencheva et al., ICLR 2025, Sec. 6; official code): ``features: softmax``
(one softmax per one-hot block, in the model's encoding), lr 0.01, 2000 steps, and
``discretize: true`` (edges at 0.5, the argmax value of every block).
FedGIG's baselines (Xiao et al., arXiv:2412.18513, Table I): ``features: granted`` (the true
features, ``threat.features_known``), ``optimizer: adam``, lr 0.01, 1000 steps; its "+BP" rows are
``discretize: true``, the plain row's own fit binarised (variants that differ only in
``discretize`` share one fit per update). FedGIG's DLG optimises a raw real adjacency; ours keeps the sigmoid one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attacks.base import Attack, AttackContext, ContractCase, Reconstruction, Requirements, register
from attacks.common import DummyGraphs, GradientMatcher, Schedule, minimise, simulation_problem
from attacks.common.parametrisations import free, known, schema_softmax_features, sigmoid_adjacency
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate

FEATURES = ("free", "softmax", "granted")
OPTIMIZERS = ("lbfgs", "adam")
ADJACENCY = ("optimise", "granted")
LINE_SEARCHES = ("none", "strong_wolfe")


def discretized(rec: Reconstruction, knowledge: AttackerKnowledge) -> Reconstruction:
    """Edges at 0.5 and one value per feature block, in the model's encoding."""
    schema = knowledge.schema
    return Reconstruction(x=schema.encode(schema.decode(rec.x)), adj=(rec.adj >= 0.5).float(),
                          num_nodes=rec.num_nodes, label=rec.label, info=rec.info)


@register
class DLG(Attack):
    name = "dlg"
    cited_as = "Zhu et al., NeurIPS 2019"
    threat_model = "a FedSGD gradient, or a FedAvg update whose local steps it simulates; node count"
    recovers = "features, edge scores, label (soft, optimised)"
    defaults_note = ("L-BFGS lr 1, 100 steps, L2 distance, randn init; `optimizer: adam` with `signed: true` is "
                     "TabLeak's sign trick")
    paper = "Zhu, Liu, Han. Deep Leakage from Gradients. NeurIPS 2019"
    requires = Requirements(node_count=True, regression=True, model="forward")
    # 3 L-BFGS steps of 5 evaluations
    contract_cases = tuple(ContractCase(task, {"iterations": 3, "max_iter": 5}) for task in ("graph", "regression"))
    after_fit = ("discretize",)  # a "+BP" variant binarises the plain variant's own fit

    @dataclass
    class Params:
        iterations: int = 100
        lr: float = 1.0
        max_iter: int = 20
        distance: str = "l2"
        feature_init: str = "randn"
        features: str = "free"  # free | softmax (GRAIN's baselines) | granted (FedGIG's baselines)
        optimizer: str = "lbfgs"  # lbfgs | adam (FedGIG runs its baselines with Adam)
        signed: bool = False  # Adam on sign(grad) (TabLeak's sign trick, as GraphDLG runs it)
        adjacency: str = "optimise"  # optimise | granted (the "+A" baselines)
        discretize: bool = False  # GRAIN's baselines: edges at 0.5, argmax per block
        line_search: str = "none"  # none (the papers' L-BFGS) | strong_wolfe (ours: a guard on the step)
        divergence_guard: float | None = None  # ours: stop when the objective exceeds this multiple of its best

    def __init__(self, **params) -> None:
        super().__init__(**params)
        for key, valid in (("features", FEATURES), ("adjacency", ADJACENCY), ("line_search", LINE_SEARCHES),
                           ("optimizer", OPTIMIZERS)):
            if getattr(self.params, key) not in valid:
                raise ConfigError(f"attack.params.{self.name}.{key}: unknown '{getattr(self.params, key)}'; "
                                  f"valid: {', '.join(valid)}")
        if self.params.signed and self.params.optimizer != "adam":
            raise ConfigError(f"attack.params.{self.name}.signed: the sign trick needs optimizer: adam "
                              f"(got {self.params.optimizer})")
        if self.params.divergence_guard is not None and not self.params.divergence_guard > 1:
            raise ConfigError(f"attack.params.{self.name}.divergence_guard: must be > 1 "
                              f"(got {self.params.divergence_guard}); omit it for the papers' L-BFGS")

    def not_applicable(self, update: ObservedUpdate, knowledge: AttackerKnowledge) -> str | None:
        reason = super().not_applicable(update, knowledge) or simulation_problem(update)
        if reason is None and self.params.adjacency == "granted" and knowledge.adjacencies is None:
            return "adjacency: granted needs the true-adjacency grant (threat.adjacency_known)"
        if reason is None and self.params.features == "granted" and knowledge.features is None:
            return "features: granted needs the feature grant (threat.features_known)"
        return reason

    def labels(self, update: ObservedUpdate, knowledge: AttackerKnowledge) -> torch.Tensor | str:
        """``"soft"``: label logits optimised jointly (DLG); iDLG overrides this with fixed labels."""
        return "soft"

    def schedule(self) -> Schedule:
        p = self.params
        return Schedule(optimizer=p.optimizer, iterations=p.iterations, lr=p.lr, max_iter=p.max_iter, signed=p.signed,
                        line_search=None if p.line_search == "none" else p.line_search,
                        divergence=math.inf if p.divergence_guard is None else p.divergence_guard)

    def draw(self, update: ObservedUpdate, knowledge: AttackerKnowledge):
        """The dummy batch's factory: its features, adjacency and labels as the params say."""
        p = self.params
        if p.features == "granted":
            features = known(knowledge.features)
        elif p.features == "softmax":
            features = schema_softmax_features(knowledge.num_features, knowledge.schema, p.feature_init)
        else:
            features = free(knowledge.num_features, p.feature_init)
        adjacency = known(knowledge.adjacencies) if p.adjacency == "granted" else sigmoid_adjacency()
        labels = self.labels(update, knowledge)
        return lambda gen: DummyGraphs(list(knowledge.node_counts), gen, features=features, adjacency=adjacency,
                                       labels=labels, num_classes=knowledge.num_classes)

    def optimise(self, update: ObservedUpdate, knowledge: AttackerKnowledge, ctx: AttackContext,
                 gen: torch.Generator) -> list[Reconstruction]:
        """One DLG run from a fresh draw of ``gen``: reconstructions before discretisation."""
        model = knowledge.build_model(update.global_weights)
        matcher = GradientMatcher.for_update(model, update, self.params.distance, knowledge.loss)
        fit = minimise(self.draw(update, knowledge), lambda d: matcher(*d.dense(), d.label_targets()), ctx,
                       self.schedule(), gen)
        return fit.dummy.reconstructions(info={"gradient_distance": fit.objective,
                                               "attack_input": matcher.attack_input})

    def reconstruct(self, update: ObservedUpdate, knowledge: AttackerKnowledge,
                    ctx: AttackContext) -> list[Reconstruction]:
        recs = ctx.shared_fit(lambda: self.optimise(update, knowledge, ctx, ctx.generator()))
        return [discretized(r, knowledge) for r in recs] if self.params.discretize else recs
