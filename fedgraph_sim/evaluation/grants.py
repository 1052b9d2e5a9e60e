"""The per-graph hints the threat config grants explicitly, read from the audit store.

``threat.node_count``, ``threat.label``, ``threat.adjacency_known`` and ``threat.features_known``
(the last two for every attack, or the listed ones) hand an attack the true node counts, labels,
adjacencies or node features of the update's graphs; ``threat.node_labels`` a node classifier's
label counts per graph.
They are ground truth, so only this explicit, configured channel reads them, and every row
records which hints its attack had (``hint_*``).
"""

from __future__ import annotations

import torch
from torch_geometric.utils import to_dense_adj

from fedgraph_sim.audit import AuditRecord, AuditStore
from fedgraph_sim.config import ThreatConfig
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate


class ThreatGrants:
    """``grants(update, attack)``: the scenario's knowledge plus the hints granted to ``attack``,
    read from the update's audit record (the last one read is kept).

    Args:
        threat (ThreatConfig): the ``threat`` section, which says what is granted.
        audit (AuditStore): the ground truth.
        knowledge (AttackerKnowledge): the scenario's knowledge, without hints.
    """

    def __init__(self, threat: ThreatConfig, audit: AuditStore, knowledge: AttackerKnowledge) -> None:
        self.threat, self.audit, self.knowledge = threat, audit, knowledge
        self._last: tuple[tuple, AuditRecord] | None = None  # every attack asks per update

    def _record(self, update: ObservedUpdate) -> AuditRecord:
        key = (update.round, update.client_key, update.members)
        if self._last is None or self._last[0] != key:
            self._last = key, self.audit.read(*key)
        return self._last[1]

    def __call__(self, update: ObservedUpdate, attack: str) -> AttackerKnowledge:
        threat = self.threat
        graphs = self._record(update).graphs
        adjacency, features = threat.grants("adjacency_known", attack), threat.grants("features_known", attack)
        return self.knowledge.with_hints(
            node_counts=[g.num_nodes for g in graphs] if threat.node_count else None,
            labels=[g.y.view(-1)[0].item() for g in graphs] if threat.label else None,
            adjacencies=[to_dense_adj(g.edge_index, max_num_nodes=g.num_nodes)[0] for g in graphs]
            if adjacency else None,
            features=[g.x.clone() for g in graphs] if features else None,
            node_label_counts=[_label_counts(g, self.knowledge.num_classes) for g in graphs]
            if threat.node_labels else None)


def _label_counts(graph, classes: int) -> list[int]:
    """How many of ``graph``'s labelled nodes carry each class."""
    labels = graph.node_y[graph.train_mask] if "train_mask" in graph else graph.node_y
    return torch.bincount(labels, minlength=classes).tolist()
