"""``tableak``: TabLeak (Vero, Balunović, Dimitrov and Vechev, "TabLeak: Tabular Data Leakage in
Federated Learning", ICML 2023), adapted to graphs as GRAIN's baselines (Drencheva et al., ICLR
2025, Sec. 6 and the official code) adapt it.

Threat model: as ``dlg`` (exact FedSGD gradient, global weights, node-count hint); with
``adjacency: granted`` also the true adjacency (the "+A" baseline, ``threat.adjacency_known``).
Recovers: node features, adjacency and label. ``ensemble`` independent DLG runs with TabLeak's
relaxation of categorical features (one softmax per one-hot block) are aligned to the first run
by GSM's Hungarian node matching, then the element-wise median of features and adjacency is
discretised (edges at 0.5, the argmax value of every block); the label is the runs' majority.
TabLeak's entropy-based uncertainty estimate is not used, as in GRAIN's code.
Defaults (GRAIN's official code): 10 runs, L-BFGS lr 0.1, 2000 steps each, ``randn`` starts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import torch

from attacks.base import AttackContext, ContractCase, Reconstruction, Requirements, register
from attacks.dlg import DLG, discretized
from fedgraph_sim.metrics import match_nodes
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate


def aligned(member: Reconstruction, reference: Reconstruction) -> Reconstruction:
    """``member`` with its nodes reordered onto ``reference``'s (same node count)."""
    rows, cols = match_nodes(member.x, member.adj, reference.x, reference.adj)
    order = torch.empty(len(cols), dtype=torch.long)
    order[torch.as_tensor(cols)] = torch.as_tensor(rows)
    return Reconstruction(x=member.x[order], adj=member.adj[order][:, order], num_nodes=member.num_nodes,
                          label=member.label, info=member.info)


@register
class TabLeak(DLG):
    name = "tableak"
    cited_as = "Vero et al., ICML 2023"
    threat_model = "as dlg"
    recovers = "features (per-block softmax), adjacency, label: median of an aligned ensemble"
    defaults_note = "10 L-BFGS runs, lr 0.1, 2000 steps, discretised (GRAIN's adaptation)"
    paper = ("Vero, Balunović, Dimitrov, Vechev. TabLeak: Tabular Data Leakage in Federated Learning. "
             "ICML 2023")

    requires = Requirements(node_count=True, model="forward")  # its label vote is over classes
    contract_cases = (ContractCase("graph", {"iterations": 3, "max_iter": 5, "ensemble": 2}),)

    @dataclass
    class Params(DLG.Params):
        iterations: int = 2000
        lr: float = 0.1
        features: str = "softmax"
        discretize: bool = True
        ensemble: int = 10

    def reconstruct(self, update: ObservedUpdate, knowledge: AttackerKnowledge,
                    ctx: AttackContext) -> list[Reconstruction]:
        gen = ctx.generator()
        members = [self.optimise(update, knowledge, ctx, gen) for _ in range(self.params.ensemble)]
        out = []
        for i, first in enumerate(members[0]):
            runs = [first] + [aligned(m[i], first) for m in members[1:]]
            x = torch.stack([r.x for r in runs]).median(0).values
            adj = torch.stack([r.adj for r in runs]).median(0).values
            label = Counter(r.label for r in runs).most_common(1)[0][0]
            distances = [r.info.get("gradient_distance", float("nan")) for r in runs]
            rec = Reconstruction(x=x, adj=adj, num_nodes=first.num_nodes, label=label,
                                 info={"gradient_distance": min(distances), "ensemble": len(runs)})
            out.append(discretized(rec, knowledge) if self.params.discretize else rec)
        return out
