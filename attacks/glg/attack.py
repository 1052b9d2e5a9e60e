"""``glg``: GLG's attackers (Sinha, Liu, Du, Shen, "Gradient Inversion Attack on Graph Neural
Networks", arXiv:2411.19440, Sec. 5, Algs. 1-3).

Threat model: honest-but-curious server with the exact FedSGD gradient of one graph (batch 1, one
local step; Graph-a and Graph-b also of a batch, the paper's Tables 8-9, each dummy graph pinned
to its graph by the granted X or A), the global weights and the graphs' node counts. The variant
follows the model's task and what the threat grants. Graph classification: Graph-a with
``threat.features_known`` (X known, A recovered), Graph-b with ``threat.adjacency_known`` (A known,
X recovered), Graph-c with neither (both recovered). Node classification (``model.task: node``, a
client's subgraph): with a leaky client's per-node gradients (``threat.per_node_gradients``)
Node-2a/b/c by the same grants; without them Node-1, which takes the gradient for that of one
target node's loss and recovers the target's features on a dummy tree (``attacks.glg.node``).
With X and A both granted there is nothing to recover (``not_applicable``). The paper assumes the
label known; here it is the granted label (``threat.label``) or inferred from the classifier's
bias gradient, the only negative entry under cross-entropy (App. B).
Recovers: the adjacency as edge probabilities (the final projected iterate, symmetrised as
``(A + A^T) / 2``, scored by AUC / AP; a Bernoulli sample of it, the paper's discrete output, in
``info``; with ``threshold: tau`` App. F's binary output instead, the min-max normalised adjacency
at tau), node features, the label (Node-2: every node's, read off its own gradient; Node-1: the
target's, the reconstruction's row 0, scored by ``target_rnmse``; with ``targets: B`` the batched
Node-1 of Table 8, B trees whose roots are the targets, paired with the client's labelled nodes by
the Hungarian method).
Defaults: cosine gradient distance (Node-2: per node, averaged); ``alpha = beta = 0`` (Eq. 12, the
paper's choice on molecules; ``alpha: 1e-9, beta: 1e-7`` is its Eq. 14 for social graphs); Adam,
lr 0.01 and 2000 iterations, 1000 for Node-1 (the paper gives neither); Node-1's dummy the paper's
depth-2 tree with ``d_tree`` 10 children per node (``tree_depth: 1`` is a star, our earlier
reading); adjacency initialised Bernoulli(0.5) (``adjacency_init: constant`` with
``adjacency_value`` for App. F's constant initialisations), features N(0, 1); the adjacency a plain
N x N matrix as in the paper. Ours, off by default: ``symmetric: true`` (a mirrored upper triangle
with a zero diagonal, GraphMI's convention; it couples a node's aggregation row to its column, and
on the synthetic graphs Graph-a then leaves whole rows stuck at 0: AUC 0.978 against 0.998 with the
paper's matrix), ``restarts`` (fit several draws, keep the lowest gradient distance) and
``analytic_init`` (start from Props. 1-6 where their rank conditions hold, ``attacks.glg.initial``)
and ``fedavg: pseudo_gradient`` (a FedAvg update read as one gradient, ``attacks.common.fedavg``;
an approximation the rows name, ``attack_input: pseudo_gradient``; the secure aggregate of several
clients' FedSGD steps needs no option: it is the exact gradient of their union, a batch).
Every row reports the closed forms' diagnostic (``info_analytic*``: which proposition applies, the
rank conditions the attacker can check, the rank-one residuals) whether or not the start is used.
The paper's victim is ``model: {conv: sage, activation: sigmoid, hidden: 100, pool: flatten}``
(or ``conv: gcn``); any model of the bench can be attacked.
"""

from __future__ import annotations

from dataclasses import dataclass

from attacks.base import Attack, AttackContext, ContractCase, Requirements, register
from attacks.common.fedavg import check_fedavg, read_as_gradient
from attacks.common.labels import batch_labels
from attacks.glg.initial import analytic_start
from attacks.glg.node import invert_subgraph, invert_target
from attacks.glg.optim import invert_graphs, thresholded
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate, Reconstruction

INITS = ("bernoulli", "constant")
SUFFIXES = {(True, False): "a", (False, True): "b", (False, False): "c"}
BATCHED = ("graph_a", "graph_b")  # the paper's Table 9 batches Graph-b


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
    cited_as = "Sinha et al., arXiv:2411.19440"
    threat_model = ("exact FedSGD gradient of one graph (or a batch; with `fedavg: pseudo_gradient`, a FedAvg "
                    "update read as one: an approximation), node count; Graph-a with `threat.features_known`, "
                    "Graph-b with `threat.adjacency_known`, Graph-c with neither")
    recovers = "edge probabilities (the projected N x N matrix, symmetrised), features, label (bias gradient, App. B)"
    defaults_note = ("Adam lr 0.01, 2000 steps, cosine distance, no regularisers (the paper's molecule setting), "
                     "Bernoulli(0.5) init; on node classifiers Node-2a/b/c with `threat.per_node_gradients`, else "
                     "Node-1 (the paper's depth-2 tree, 10 children per node, 1000 steps); batches: Graph-a/b, "
                     "Node-1 with `targets`")
    paper = ("Sinha, Liu, Du, Shen. Gradient Inversion Attack on Graph Neural Networks. "
             "arXiv 2411.19440, 2024")
    requires = Requirements(exact_gradient=True, node_count=True, tasks=("graph", "node"))
    contract_cases = (ContractCase("graph", {"iterations": 20}, label="graph_c"),
                      ContractCase("node", {"iterations": 20, "d_tree": 2}, label="node_1"),
                      ContractCase("node", {"iterations": 20}, grants=("per_node_gradients",), label="node_2c"))

    @dataclass
    class Params:
        iterations: int | None = None  # None: 1000 for Node-1, 2000 otherwise
        lr: float = 0.01
        alpha: float = 0.0  # feature smoothness tr(X^T L X) (Eq. 14)
        beta: float = 0.0  # ||A||_F^2 (Eq. 14)
        adjacency_init: str = "bernoulli"  # bernoulli | constant (App. F)
        adjacency_value: float = 0.5  # the constant of adjacency_init: constant
        d_tree: int = 10  # Node-1's tree: children per node
        tree_depth: int = 2  # Node-1's tree: the paper's depth-2 tree (1: a star)
        restarts: int = 1  # ours: fit this many draws, keep the lowest gradient distance
        symmetric: bool = False  # ours (GraphMI's convention): a mirrored upper triangle, not the paper's matrix
        threshold: float | None = None  # App. F's tau: min-max normalise the adjacency, edges where >= tau
        analytic_init: bool = False  # ours: start from Props. 1-6 where their rank conditions hold
        targets: int = 1  # Node-1's batch: the number of target nodes behind the gradient (Table 8's B)
        fedavg: str = "not_applicable"  # ours: pseudo_gradient reads a FedAvg update as one gradient

    def __init__(self, **params) -> None:
        super().__init__(**params)
        p, where = self.params, f"attack.params.{self.name}"
        if p.adjacency_init not in INITS:
            raise ConfigError(f"{where}.adjacency_init: unknown '{p.adjacency_init}'; valid: {', '.join(INITS)}")
        if not 0.0 <= p.adjacency_value <= 1.0:
            raise ConfigError(f"{where}.adjacency_value: must be in [0, 1] (got {p.adjacency_value})")
        if p.threshold is not None and not 0.0 <= p.threshold <= 1.0:
            raise ConfigError(f"{where}.threshold: must be in [0, 1] or null (got {p.threshold})")
        if min(p.d_tree, p.tree_depth, p.restarts, p.targets) < 1 or (p.iterations is not None and p.iterations < 1):
            raise ConfigError(f"{where}: d_tree, tree_depth, restarts, targets and iterations must be >= 1 "
                              f"(got {p.d_tree}, {p.tree_depth}, {p.restarts}, {p.targets}, {p.iterations})")
        check_fedavg(self.name, p.fedavg)

    def not_applicable(self, update: ObservedUpdate, knowledge: AttackerKnowledge) -> str | None:
        reason = super().not_applicable(read_as_gradient(update, self.params.fedavg), knowledge)
        m = knowledge.model
        if reason is None and m.get("task", "graph") == "node" and m.get("readout_placement") == "per_node":
            return ("the node model's logits must be its last layer's outputs (Sinha et al., Sec. 3); "
                    "model.readout_placement: per_node puts a readout after it")
        if reason is None and variant(update, knowledge) is None:
            return "both the features and the adjacency are granted: nothing to recover"
        if reason is None and update.num_graphs != 1 and variant(update, knowledge) not in BATCHED:
            return (f"needs one graph; the update was computed on {update.num_graphs} (batches only for Graph-a and "
                    "Graph-b, whose granted X or A pins each dummy graph to its graph)")
        if reason is None and update.per_node is not None:
            rows = len(next(iter(update.per_node.values())))
            if rows != knowledge.node_counts[0]:
                return (f"Node-2 needs a gradient per node: {rows} per-node gradients for "
                        f"{knowledge.node_counts[0]} nodes")
        return reason

    def reconstruct(self, update: ObservedUpdate, knowledge: AttackerKnowledge,
                    ctx: AttackContext) -> list[Reconstruction]:
        name = variant(update, knowledge)
        if name.startswith("node"):
            return [self.node_attack(name, update, knowledge, ctx)]
        p = self.params
        model = knowledge.build_model(update.global_weights)
        counts = list(knowledge.node_counts)
        labels = batch_labels(update.gradient[f"{model.final_linear_name}.bias"].float(), len(counts), model, knowledge)
        xs, adjs = self.granted(knowledge)
        single = len(counts) == 1  # the closed forms are for one graph's gradient
        start = analytic_start(model, update.gradient, x=xs[0] if xs else None, adj=adjs[0] if adjs else None) \
            if single else None
        init = "bernoulli" if p.adjacency_init == "bernoulli" else p.adjacency_value
        if p.analytic_init and single and start.adj is not None:
            init = start.adj
        results = invert_graphs(
            model, update.gradient, counts, labels, ctx, xs=xs, adjs=adjs,
            iterations=p.iterations or 2000, lr=p.lr, alpha=p.alpha, beta=p.beta, adjacency_init=init,
            loss=knowledge.loss, restarts=p.restarts, symmetric=p.symmetric)
        diagnostic = self.diagnostic(start) if single else {}
        return [Reconstruction(x=r.x, adj=r.adj_prob if p.threshold is None else thresholded(r.adj_prob, p.threshold),
                               num_nodes=n, label=label,
                               info={"variant": name, "gradient_distance": r.objective,
                                     "edges_sampled": int(r.adj_sample.triu(1).sum()), **diagnostic})
                for r, n, label in zip(results, counts, labels)]

    @staticmethod
    def granted(knowledge: AttackerKnowledge):
        """The granted ``(X, A)`` of each attacked graph (None where not granted)."""
        return (None if knowledge.features is None else [x.float() for x in knowledge.features],
                None if knowledge.adjacencies is None else [a.float() for a in knowledge.adjacencies])

    def diagnostic(self, start) -> dict:
        """The closed forms' report (``analytic_*`` in the row) and whether the fit started there."""
        used = self.params.analytic_init and (start.x is not None or start.adj is not None)
        return {**{f"analytic_{k}" if k != "analytic" else k: v for k, v in start.info.items()},
                "analytic_start": used}

    def node_attack(self, name: str, update: ObservedUpdate, knowledge: AttackerKnowledge,
                    ctx: AttackContext) -> Reconstruction:
        p = self.params
        model = knowledge.build_model(update.global_weights)
        gradient = {k: v.float() for k, v in update.gradient.items()}
        if name == "node_1":
            result = invert_target(model, gradient, ctx, d_tree=p.d_tree, depth=p.tree_depth,
                                   iterations=p.iterations or 1000, lr=p.lr, loss=knowledge.loss,
                                   restarts=p.restarts, targets=p.targets)
            single = p.targets == 1
            return Reconstruction(x=result.x, adj=result.adj, num_nodes=len(result.adj),
                                  label=int(result.labels[0]) if single else None,
                                  info={"variant": name, "gradient_distance": result.objective,
                                        **({"target": 0} if single else {"targets": result.roots})})
        per_node = {k: v.float() for k, v in update.per_node_gradient().items()}
        xs, adjs = self.granted(knowledge)
        x, adj = (xs[0] if xs else None), (adjs[0] if adjs else None)
        start = analytic_start(model, gradient, x=x, adj=adj, per_node=per_node)
        use = p.analytic_init
        result = invert_subgraph(
            model, per_node, ctx, x=x, adj=adj, iterations=p.iterations or 2000, lr=p.lr, alpha=p.alpha,
            beta=p.beta, loss=knowledge.loss, restarts=p.restarts, symmetric=p.symmetric,
            feature_init=start.x if use and start.x is not None else "randn",
            adjacency_init=start.adj if use and start.adj is not None else "bernoulli")
        return Reconstruction(x=result.x, adj=result.adj, num_nodes=len(result.labels), label=None,
                              info={"variant": name, "gradient_distance": result.objective, **self.diagnostic(start)})
