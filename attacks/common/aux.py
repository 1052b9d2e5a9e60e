"""The attacker's auxiliary graphs as a cache key."""

from __future__ import annotations


def aux_fingerprint(graphs) -> tuple:
    """Which auxiliary set a model was trained on, by content: every call gets its own copy of
    the attacker's knowledge, so object identity says nothing."""
    return tuple((int(g.graph_id), int(g.num_nodes), int(g.edge_index.size(1))) for g in graphs)
