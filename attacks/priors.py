"""Gradient-free priors: what an attacker gets from the auxiliary graphs alone.

GraphDLG's numbers (Wei et al. 2026) mean little without these: TU files list bonded atoms at
nearby indices, so the mean auxiliary adjacency already scores high identity-order AUC, and one
node type (carbon) dominates molecules, so "every node is the majority type" already scores high
node-type accuracy.

- ``majority_type``: every node gets the auxiliary set's most frequent node type (one-hot) and
  no edge is predicted (all scores 0: AUC 0.5, edge accuracy = 1 - density).
- ``aux_mean_adjacency``: edge scores are the mean auxiliary adjacency (zero-padded to the largest
  auxiliary graph), cropped to n; features are the auxiliary node-type frequencies, the same for
  every node (so their argmax is the majority type too).
- ``aux_sample``: one auxiliary graph drawn at random (seeded) among those with the node count
  closest to n, its own node features and edges, cropped to its first n nodes or padded with
  majority-type nodes without edges. Where the two above are the best *constant* guesses, this
  is a *varied* one: alignments that pair nodes by looking at the truth (Hungarian matching,
  GSM's matching) reward any varied reconstruction, so a fair prior must be able to profit too.

Threat model: auxiliary graphs and the node count; the gradient is ignored. Recovers nothing from
the update: what the auxiliary set alone predicts for a graph of n nodes. No parameters.

Besides running as attacks, they are the priors of the metric catalogue: the evaluator scores
them on every attacked graph, and each row's ``gain_*`` columns are the attack's information gain
over them (+ = the attack knows more than the prior).
"""

from __future__ import annotations

import torch
from torch_geometric.utils import to_dense_adj

from attacks.base import Attack, AttackContext, Reconstruction, Requirements, register
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate


#: What every prior reads: the auxiliary graphs and the node count, on any task.
PRIOR_NEEDS = Requirements(node_count=True, aux_graphs=True, tasks=("graph", "node"), regression=True, model="none")


def type_frequencies(knowledge: AttackerKnowledge) -> torch.Tensor:
    """The auxiliary nodes' mean one-hot row (value frequencies per block), in one-hot space."""
    x = torch.cat([g.x.float() for g in knowledge.aux_graphs])
    return knowledge.schema.destandardize(x).mean(0)


def mean_adjacency(knowledge: AttackerKnowledge) -> torch.Tensor:
    n_max = max(g.num_nodes for g in knowledge.aux_graphs)
    total = torch.zeros(n_max, n_max)
    for g in knowledge.aux_graphs:
        n = g.num_nodes
        total[:n, :n] += to_dense_adj(g.edge_index, max_num_nodes=n)[0]
    return total / len(knowledge.aux_graphs)


def majority_row(knowledge: AttackerKnowledge) -> torch.Tensor:
    """Every feature block's most frequent auxiliary value, one-hot, in the model's encoding."""
    freq, schema = type_frequencies(knowledge), knowledge.schema
    onehot = torch.zeros_like(freq)
    for s in schema.slices().values():  # every block its own mode (the type block: the majority type)
        onehot[s.start + int(freq[s].argmax())] = 1
    return schema.standardize(onehot[None])[0]


def _crop(matrix: torch.Tensor, n: int) -> torch.Tensor:
    out = torch.zeros(n, n)
    k = min(n, matrix.size(0))
    out[:k, :k] = matrix[:k, :k]
    return out.fill_diagonal_(0)


@register
class MajorityType(Attack):
    name = "majority_type"
    cited_as = "gradient-free prior"
    threat_model = "aux graphs, node count"
    recovers = "every node the aux set's most frequent type; no edges"
    defaults_note = "-"
    paper = "gradient-free prior (our control for GraphDLG, Wei et al. 2026)"
    requires = PRIOR_NEEDS

    def reconstruct(self, update: ObservedUpdate, knowledge: AttackerKnowledge,
                    ctx: AttackContext) -> list[Reconstruction]:
        x = majority_row(knowledge)
        return [Reconstruction(x=x.repeat(n, 1), adj=torch.zeros(n, n), num_nodes=n)
                for n in knowledge.node_counts]


@register
class AuxMeanAdjacency(Attack):
    name = "aux_mean_adjacency"
    cited_as = "gradient-free prior"
    threat_model = "aux graphs, node count"
    recovers = "mean aux adjacency cropped to n; aux type frequencies"
    defaults_note = "-"
    paper = "gradient-free prior (our control for GraphDLG, Wei et al. 2026)"
    requires = PRIOR_NEEDS

    def reconstruct(self, update: ObservedUpdate, knowledge: AttackerKnowledge,
                    ctx: AttackContext) -> list[Reconstruction]:
        freq, prior = type_frequencies(knowledge), mean_adjacency(knowledge)
        x = knowledge.schema.standardize(freq[None])
        return [Reconstruction(x=x.repeat(n, 1), adj=_crop(prior, n), num_nodes=n)
                for n in knowledge.node_counts]


@register
class AuxSample(Attack):
    name = "aux_sample"
    cited_as = "gradient-free prior"
    threat_model = "aux graphs, node count"
    recovers = "a random aux graph of the closest size, cropped or padded to n"
    defaults_note = "-"
    paper = "gradient-free prior: a random auxiliary graph of the victim's size"
    requires = PRIOR_NEEDS

    def reconstruct(self, update: ObservedUpdate, knowledge: AttackerKnowledge,
                    ctx: AttackContext) -> list[Reconstruction]:
        gen, pad = ctx.generator(), majority_row(knowledge)
        sizes = torch.tensor([g.num_nodes for g in knowledge.aux_graphs])
        out = []
        for n in knowledge.node_counts:
            closest = ((sizes - n).abs() == (sizes - n).abs().min()).nonzero().view(-1)
            graph = knowledge.aux_graphs[int(closest[torch.randint(len(closest), (1,), generator=gen)])]
            k = min(n, graph.num_nodes)
            x = pad.repeat(n, 1)
            x[:k] = graph.x[:k].float()
            adj = torch.zeros(n, n)
            adj[:k, :k] = to_dense_adj(graph.edge_index, max_num_nodes=graph.num_nodes)[0][:k, :k]
            out.append(Reconstruction(x=x, adj=adj.fill_diagonal_(0), num_nodes=n))
        return out
