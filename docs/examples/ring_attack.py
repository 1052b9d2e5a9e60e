"""An example plugin: a gradient-free ``ring`` attack, registered from outside the package.

Threat model: the node-count hint and the feature schema only; the gradient is ignored.
Recovers: nothing from the update; every graph is guessed as a ring of the hinted size whose
nodes all take the schema's first node type. A floor, like ``random``, to show the mechanics.

Use it by listing this module under ``plugins:`` with its folder on ``PYTHONPATH``::

    PYTHONPATH=docs/examples fedgraph-sim run plugins=[ring_attack] attack.names=[ring,random]
"""

from __future__ import annotations

import torch

from attacks.base import Attack, AttackContext, Reconstruction, Requirements, register
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate


@register
class RingGuess(Attack):
    name = "ring"
    paper = "example plugin (fedgraph_sim docs/extending.md)"
    requires = Requirements(node_count=True)

    def reconstruct(self, update: ObservedUpdate, knowledge: AttackerKnowledge,
                    ctx: AttackContext) -> list[Reconstruction]:
        out = []
        for n in knowledge.node_counts:
            adj = torch.zeros(n, n)
            if n > 1:
                idx = torch.arange(n)
                adj[idx, (idx + 1) % n] = adj[(idx + 1) % n, idx] = 1.0
            x = torch.zeros(n, knowledge.num_features)
            x[:, 0] = 1.0
            out.append(Reconstruction(x=x, adj=adj, num_nodes=n, label=0))
        return out
