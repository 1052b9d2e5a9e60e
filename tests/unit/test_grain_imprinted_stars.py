"""GRAIN on an ``imprinted_aggregates`` round: every node's star read off a pooled GCN's first
layer, and the batch's graphs built from the stars one by one, each kept when its weights fit."""

from dataclasses import replace

import networkx as nx
import torch

from attacks.base import AttackContext, Budget
from attacks.grain.attack import GRAIN
from attacks.grain.imprinted_stars import consistent_stars, one_hop_stars
from fedgraph_sim.crafting.aggregate_reading import read_star
from fedgraph_sim.crafting.imprinted_aggregates import aggregated_rows
from fedgraph_sim.threat import AttackerKnowledge
from tests.unit.grain_cases import dense_adj, molecule
from tests.unit.test_imprinted_aggregates import POOLED_GCN, pooled_round


def _graph(adj, kinds) -> nx.Graph:
    g = nx.from_numpy_array(adj.numpy())
    nx.set_node_attributes(g, dict(enumerate(kinds)), "t")
    return g


def _same(rec, victim, schema) -> bool:
    kinds = [tuple(t) for t in schema.decode(rec.x.double()).tolist()]
    return nx.is_isomorphic(_graph(rec.adj, kinds), _graph(dense_adj(victim), [tuple(t) for t in
                            schema.decode(victim.x).tolist()]), node_match=lambda a, b: a["t"] == b["t"])


def _knowledge(schema, graphs, counts=True) -> AttackerKnowledge:
    return AttackerKnowledge(model=POOLED_GCN, num_features=140, num_classes=2, schema=schema, loss="bce",
                             node_counts=tuple(g.num_nodes for g in graphs) if counts else None)


def test_every_true_star_is_found_and_survives_the_consistency_filter():
    g, schema = molecule("CC(=O)Oc1ccccc1C(=O)O")
    rows = torch.unique(aggregated_rows(g.x, g.edge_index), dim=0)
    stars = one_hop_stars(rows, [read_star(r.numpy(), schema) for r in rows], schema)
    kept = consistent_stars(stars)
    kinds = [tuple(t) for t in schema.decode(g.x.double()).tolist()]
    adj = dense_adj(g)
    for v in range(g.num_nodes):
        centre = stars.types.index(kinds[v])
        star = (centre, tuple(sorted(stars.types.index(kinds[int(u)]) for u in torch.nonzero(adj[v]).flatten())))
        assert star in kept.stars
    assert len(kept.stars) <= len(stars.stars)


def test_grain_rebuilds_a_molecule_from_its_pooled_models_crafted_gradient():
    update, schema, graphs, _ = pooled_round(("CC(=O)Oc1ccccc1C(=O)O",))
    knowledge = _knowledge(schema, graphs)
    assert GRAIN().not_applicable(update, knowledge) is None
    (rec,) = GRAIN().reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(60)))
    assert rec.info["crafted"] == "imprinted_aggregates" and _same(rec, graphs[0], schema) and rec.label == 0


def test_grain_rebuilds_a_batchs_graphs_with_their_labels():
    update, schema, graphs, _ = pooled_round(labels=[0, 1, 0])
    recs = GRAIN().reconstruct(update, _knowledge(schema, graphs), AttackContext(seed=0, budget=Budget(60)))
    found = {k for rec in recs for k, v in enumerate(graphs) if _same(rec, v, schema) and rec.label == int(v.y)}
    assert len(found) >= 2, [r.info for r in recs]


def test_grain_says_why_it_cannot_read_an_epoch_or_rows_without_a_degree_block():
    update, schema, graphs, _ = pooled_round()
    epoch = replace(update, kind="weights", local_steps=4)
    assert "one FedSGD gradient" in GRAIN().not_applicable(epoch, _knowledge(schema, graphs))
    bare = replace(schema, degree_block=None)
    assert "degree block" in GRAIN().not_applicable(update, _knowledge(bare, graphs))
