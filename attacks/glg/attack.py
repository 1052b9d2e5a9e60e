"""``glg``: GLG's graph-classification attacker (Sinha, Liu, Du, Shen, "Gradient Inversion Attack
on Graph Neural Networks", arXiv:2411.19440, Sec. 5, Alg. 3).

Threat model: honest-but-curious server with the exact FedSGD gradient of one graph (batch 1, one
local step), the global weights and the graph's node count. The variant follows what the threat
grants: Graph-a with ``threat.features_known`` (X known, A recovered), Graph-b with
``threat.adjacency_known`` (A known, X recovered), Graph-c with neither (both recovered); with both
granted there is nothing to recover (``not_applicable``). The paper assumes the label known; here
it is the granted label (``threat.label``) or inferred from the classifier's bias gradient, the
only negative entry under cross-entropy (App. B).
Recovers: the adjacency as edge probabilities (the final projected iterate, scored by AUC / AP;
a Bernoulli sample of it, the paper's discrete output, in ``info``), node features, the label.
Defaults: cosine gradient distance; ``alpha = beta = 0`` (Eq. 12, the paper's choice on molecules;
``alpha: 1e-9, beta: 1e-7`` is its Eq. 14 for social graphs); Adam, lr 0.01 and 2000 iterations
(the paper gives neither); adjacency initialised Bernoulli(0.5) (``adjacency_init: constant`` with
``adjacency_value`` for App. F's constant initialisations), features N(0, 1); the adjacency is kept symmetric
with a zero diagonal (the paper optimises an unconstrained matrix).
The paper's victim is ``model: {conv: sage, activation: sigmoid, hidden: 100, pool: flatten}``
(or ``conv: gcn``); any model of the bench can be attacked.
"""

from __future__ import annotations

from dataclasses import dataclass

from attacks.base import Attack, AttackContext, Requirements, register
from attacks.common.labels import batch_labels
from attacks.glg.optim import invert_graph
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate, Reconstruction

INITS = ("bernoulli", "constant")
VARIANTS = {(True, False): "graph_a", (False, True): "graph_b", (False, False): "graph_c"}


def variant(knowledge: AttackerKnowledge) -> str | None:
    """Graph-a, -b or -c by the granted hints (None: both granted, nothing to recover)."""
    return VARIANTS.get((knowledge.features is not None, knowledge.adjacencies is not None))


@register
class GLG(Attack):
    name = "glg"
    paper = ("Sinha, Liu, Du, Shen. Gradient Inversion Attack on Graph Neural Networks. "
             "arXiv 2411.19440, 2024")
    requires = Requirements(exact_gradient=True, node_count=True, single_graph=True)

    @dataclass
    class Params:
        iterations: int = 2000
        lr: float = 0.01
        alpha: float = 0.0  # feature smoothness tr(X^T L X) (Eq. 14)
        beta: float = 0.0  # ||A||_F^2 (Eq. 14)
        adjacency_init: str = "bernoulli"  # bernoulli | constant (App. F)
        adjacency_value: float = 0.5  # the constant of adjacency_init: constant

    def __init__(self, **params) -> None:
        super().__init__(**params)
        p, where = self.params, f"attack.params.{self.name}"
        if p.adjacency_init not in INITS:
            raise ConfigError(f"{where}.adjacency_init: unknown '{p.adjacency_init}'; valid: {', '.join(INITS)}")
        if not 0.0 <= p.adjacency_value <= 1.0:
            raise ConfigError(f"{where}.adjacency_value: must be in [0, 1] (got {p.adjacency_value})")

    def not_applicable(self, update: ObservedUpdate, knowledge: AttackerKnowledge) -> str | None:
        reason = super().not_applicable(update, knowledge)
        if reason is None and variant(knowledge) is None:
            return "both the features and the adjacency are granted: nothing to recover"
        return reason

    def reconstruct(self, update: ObservedUpdate, knowledge: AttackerKnowledge,
                    ctx: AttackContext) -> list[Reconstruction]:
        p = self.params
        model = knowledge.build_model(update.global_weights)
        label = batch_labels(update.gradient[f"{model.final_linear_name}.bias"].float(), 1, model, knowledge)[0]
        n = knowledge.node_counts[0]
        init = "bernoulli" if p.adjacency_init == "bernoulli" else p.adjacency_value
        result = invert_graph(
            model, update.gradient, n, label, ctx,
            x=None if knowledge.features is None else knowledge.features[0].float(),
            adj=None if knowledge.adjacencies is None else knowledge.adjacencies[0].float(),
            iterations=p.iterations, lr=p.lr, alpha=p.alpha, beta=p.beta, adjacency_init=init, loss=knowledge.loss)
        info = {"variant": variant(knowledge), "gradient_distance": result.objective,
                "edges_sampled": int(result.adj_sample.triu(1).sum())}
        return [Reconstruction(x=result.x, adj=result.adj_prob, num_nodes=n, label=label, info=info)]
