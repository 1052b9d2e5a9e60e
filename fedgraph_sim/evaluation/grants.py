"""The per-graph hints the threat config grants explicitly, read from the audit store.

``threat.node_count``, ``threat.label`` and ``threat.adjacency_known`` (for every attack, or the
listed ones) hand an attack the true node counts, labels or adjacencies of the update's graphs.
They are ground truth, so only this explicit, configured channel reads them, and every row
records which hints its attack had (``hint_*``).
"""

from __future__ import annotations

from fedgraph_sim.audit import AuditStore
from fedgraph_sim.config import ThreatConfig
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate


class ThreatGrants:
    def __init__(self, threat: ThreatConfig, audit: AuditStore, knowledge: AttackerKnowledge) -> None:
        self.threat, self.audit, self.knowledge = threat, audit, knowledge

    def __call__(self, update: ObservedUpdate, attack: str) -> AttackerKnowledge:
        """The attacker's knowledge for ``attack`` on ``update``, with the granted hints."""
        threat = self.threat
        adjacency = threat.adjacency_known is True or attack in (threat.adjacency_known or ())
        hints = self.audit.hints(update.round, update.client_key, node_count=threat.node_count,
                                 label=threat.label, adjacency=adjacency)
        return self.knowledge.with_hints(**hints)
