"""``random``: the floor every attack must clear (GraphDLG Table 1's "Random" row).

Threat model: none beyond the node-count hint; the gradient is ignored.
Recovers: nothing; features ~ U[0,1]^{n x F}, adjacency scores ~ U[0,1] (symmetric, zero
diagonal), label uniform over the classes.
Defaults: the true node count (``threat.node_count``), seeded per attacked update.
"""

from __future__ import annotations

import torch

from attacks.base import Attack, AttackContext, Reconstruction, Requirements, register
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate


@register
class RandomGuess(Attack):
    name = "random"
    cited_as = "baseline (GraphDLG Table 1)"
    threat_model = "node count"
    recovers = "nothing: U[0,1] features and edge scores"
    defaults_note = "-"
    paper = "uniform random baseline (GraphDLG, Wei et al. 2026, Table 1)"
    requires = Requirements(node_count=True, tasks=("graph", "node"), regression=True, model="none")

    def reconstruct(self, update: ObservedUpdate, knowledge: AttackerKnowledge,
                    ctx: AttackContext) -> list[Reconstruction]:
        gen = ctx.generator()
        out = []
        for n in knowledge.node_counts:
            upper = torch.triu(torch.rand(n, n, generator=gen), diagonal=1)
            out.append(Reconstruction(
                x=torch.rand(n, knowledge.num_features, generator=gen), adj=upper + upper.t(),
                num_nodes=n, label=None if knowledge.task_type == "regression"
                else int(torch.randint(knowledge.num_classes, (1,), generator=gen))))
        return out
