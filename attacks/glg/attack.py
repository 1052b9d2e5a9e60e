"""``glg``: GLG's attackers (Sinha, Liu, Du, Shen, "Gradient Inversion Attack on Graph Neural
Networks", arXiv:2411.19440, Sec. 5, Algs. 1-3).

Threat model: honest-but-curious server with the exact FedSGD gradient of one graph (batch 1, one
local step), the global weights and the graph's node count. The variant follows the model's task
and what the threat grants. Graph classification: Graph-a with ``threat.features_known`` (X known,
A recovered), Graph-b with ``threat.adjacency_known`` (A known, X recovered), Graph-c with neither
(both recovered). Node classification (``model.task: node``, a client's subgraph): with a leaky
client's per-node gradients (``threat.per_node_gradients``) Node-2a/b/c by the same grants;
without them Node-1, which takes the gradient for that of one target node's loss and recovers the
target's features on a star of ``leaves`` dummy neighbours (``attacks.glg.node``). With X and A both
granted there is nothing to recover (``not_applicable``). The paper assumes the label known; here
it is the granted label (``threat.label``) or inferred from the classifier's bias gradient, the
only negative entry under cross-entropy (App. B).
Recovers: the adjacency as edge probabilities (the final projected iterate, scored by AUC / AP;
a Bernoulli sample of it, the paper's discrete output, in ``info``), node features, the label
(Node-2: every node's, read off its own gradient; Node-1: the target's, the reconstruction's row 0,
scored by ``target_rnmse``).
Defaults: cosine gradient distance (Node-2: per node, averaged); ``alpha = beta = 0`` (Eq. 12, the paper's choice on molecules;
``alpha: 1e-9, beta: 1e-7`` is its Eq. 14 for social graphs); Adam, lr 0.01 and 2000 iterations, 1000 for
Node-1 (the paper gives neither); ``leaves`` 10 (Node-1's star, the paper's d_tree); adjacency initialised Bernoulli(0.5) (``adjacency_init: constant`` with
``adjacency_value`` for App. F's constant initialisations), features N(0, 1); the adjacency is kept symmetric
with a zero diagonal (the paper optimises an unconstrained matrix).
The paper's victim is ``model: {conv: sage, activation: sigmoid, hidden: 100, pool: flatten}``
(or ``conv: gcn``); any model of the bench can be attacked.
"""

from __future__ import annotations

from dataclasses import dataclass

from attacks.base import Attack, AttackContext, Requirements, register
from attacks.common.labels import batch_labels
from attacks.glg.node import invert_subgraph, invert_target
from attacks.glg.optim import invert_graph
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate, Reconstruction

INITS = ("bernoulli", "constant")
SUFFIXES = {(True, False): "a", (False, True): "b", (False, False): "c"}


def variant(update: ObservedUpdate, knowledge: AttackerKnowledge) -> str | None:
    """graph_a/b/c, node_1 or node_2a/b/c by the task, the per-node gradients and the granted
    hints (None: X and A both granted, nothing to recover)."""
    if knowledge.model.get("task", "graph") == "node" and update.per_node is None:
        return "node_1"
    suffix = SUFFIXES.get((knowledge.features is not None, knowledge.adjacencies is not None))
    if suffix is None:
        return None
    return ("node_2" if knowledge.model.get("task", "graph") == "node" else "graph_") + suffix


@register
class GLG(Attack):
    name = "glg"
    paper = ("Sinha, Liu, Du, Shen. Gradient Inversion Attack on Graph Neural Networks. "
             "arXiv 2411.19440, 2024")
    requires = Requirements(exact_gradient=True, node_count=True, single_graph=True, tasks=("graph", "node"))

    @dataclass
    class Params:
        iterations: int | None = None  # None: 1000 for Node-1, 2000 otherwise
        lr: float = 0.01
        alpha: float = 0.0  # feature smoothness tr(X^T L X) (Eq. 14)
        beta: float = 0.0  # ||A||_F^2 (Eq. 14)
        adjacency_init: str = "bernoulli"  # bernoulli | constant (App. F)
        adjacency_value: float = 0.5  # the constant of adjacency_init: constant
        leaves: int = 10  # Node-1's star: the target and this many dummy neighbours (d_tree)

    def __init__(self, **params) -> None:
        super().__init__(**params)
        p, where = self.params, f"attack.params.{self.name}"
        if p.adjacency_init not in INITS:
            raise ConfigError(f"{where}.adjacency_init: unknown '{p.adjacency_init}'; valid: {', '.join(INITS)}")
        if not 0.0 <= p.adjacency_value <= 1.0:
            raise ConfigError(f"{where}.adjacency_value: must be in [0, 1] (got {p.adjacency_value})")
        if p.leaves < 1 or (p.iterations is not None and p.iterations < 1):
            raise ConfigError(f"{where}: leaves and iterations must be >= 1 (got {p.leaves}, {p.iterations})")

    def not_applicable(self, update: ObservedUpdate, knowledge: AttackerKnowledge) -> str | None:
        reason = super().not_applicable(update, knowledge)
        if reason is None and variant(update, knowledge) is None:
            return "both the features and the adjacency are granted: nothing to recover"
        if reason is None and update.per_node is not None:
            rows = len(next(iter(update.per_node.values())))
            if rows != knowledge.node_counts[0]:
                return f"Node-2 needs a gradient per node: {rows} per-node gradients for {knowledge.node_counts[0]} nodes"
        return reason

    def reconstruct(self, update: ObservedUpdate, knowledge: AttackerKnowledge,
                    ctx: AttackContext) -> list[Reconstruction]:
        name = variant(update, knowledge)
        if name.startswith("node"):
            return [self.node_attack(name, update, knowledge, ctx)]
        p = self.params
        model = knowledge.build_model(update.global_weights)
        label = batch_labels(update.gradient[f"{model.final_linear_name}.bias"].float(), 1, model, knowledge)[0]
        n = knowledge.node_counts[0]
        init = "bernoulli" if p.adjacency_init == "bernoulli" else p.adjacency_value
        result = invert_graph(
            model, update.gradient, n, label, ctx,
            x=None if knowledge.features is None else knowledge.features[0].float(),
            adj=None if knowledge.adjacencies is None else knowledge.adjacencies[0].float(),
            iterations=p.iterations or 2000, lr=p.lr, alpha=p.alpha, beta=p.beta, adjacency_init=init,
            loss=knowledge.loss)
        info = {"variant": name, "gradient_distance": result.objective,
                "edges_sampled": int(result.adj_sample.triu(1).sum())}
        return [Reconstruction(x=result.x, adj=result.adj_prob, num_nodes=n, label=label, info=info)]

    def node_attack(self, name: str, update: ObservedUpdate, knowledge: AttackerKnowledge,
                    ctx: AttackContext) -> Reconstruction:
        p = self.params
        model = knowledge.build_model(update.global_weights)
        gradient = {k: v.float() for k, v in update.gradient.items()}
        if name == "node_1":
            result = invert_target(model, gradient, ctx, leaves=p.leaves, iterations=p.iterations or 1000, lr=p.lr,
                                   loss=knowledge.loss)
            return Reconstruction(x=result.x, adj=result.adj, num_nodes=p.leaves + 1, label=int(result.labels[0]),
                                  info={"variant": name, "gradient_distance": result.objective, "target": 0})
        per_node = {k: v.float() for k, v in update.per_node_gradient().items()}
        result = invert_subgraph(
            model, per_node, ctx, x=None if knowledge.features is None else knowledge.features[0].float(),
            adj=None if knowledge.adjacencies is None else knowledge.adjacencies[0].float(),
            iterations=p.iterations or 2000, lr=p.lr, alpha=p.alpha, beta=p.beta, loss=knowledge.loss)
        return Reconstruction(x=result.x, adj=result.adj, num_nodes=len(result.labels), label=None,
                              info={"variant": name, "gradient_distance": result.objective})
