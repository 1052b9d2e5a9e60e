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


def _per_node_weight(net, graph, batch_size: int) -> float:
    """A graph's per-node weight ``c``: the loss derivative its first layer's first unit receives,
    over the node's ``t`` (a 3-layer GCN: the row sums of the normalised adjacency, twice)."""
    from fedgraph_sim.models import classification_loss

    out = {}
    handle = net.convs[0].register_forward_hook(lambda _m, _i, o: out.update(o=o) or o.retain_grad())
    logits = net(graph.x.double(), graph.edge_index, torch.zeros(graph.num_nodes, dtype=torch.long))
    classification_loss(logits, graph.y.view(-1), "bce").backward()
    handle.remove()
    a = dense_adj(graph).double() + torch.eye(graph.num_nodes, dtype=torch.float64)
    a = a / (a.sum(1).sqrt().unsqueeze(0) * a.sum(1).sqrt().unsqueeze(1))
    c = out["o"].grad[:, 0] / batch_size / (a @ (a @ torch.ones(graph.num_nodes, dtype=torch.float64)))
    assert float(c.max() - c.min()) <= 1e-9 * float(c.abs().max())  # one weight for all its nodes
    return float(c[0])


def test_a_graphs_per_node_weight_allows_its_own_size_and_none_far_from_it():
    from attacks.grain.imprinted_stars import _Rows
    from fedgraph_sim.crafting.imprint_reading import read_imprints

    update, schema, graphs, _ = pooled_round(("CC(=O)Oc1ccccc1C(=O)O", "OCC(O)CO"))  # 13 and 6 atoms
    imprints = read_imprints(update, None, tol=1e-2)
    for counts in (True, False):
        knowledge = _knowledge(schema, graphs, counts=counts)
        net = knowledge.build_model(update.global_weights, dtype=torch.float64)
        rows = _Rows(imprints.rows, imprints.weights, None, 1e-3, net, knowledge, 2, update.crafted.plan)
        for graph in graphs:
            sizes = rows.sizes_for(_per_node_weight(net, graph, 2))
            assert graph.num_nodes in sizes
            assert all(abs(n - graph.num_nodes) <= 0.25 * graph.num_nodes for n in sizes), sizes
            if counts:
                assert sizes == [graph.num_nodes]
    sum_pooled = AttackerKnowledge(model=dict(POOLED_GCN, pool="sum"), num_features=140, num_classes=2,
                                   schema=schema, loss="bce")
    net = sum_pooled.build_model(update.global_weights, dtype=torch.float64)
    rows = _Rows(imprints.rows, imprints.weights, None, 1e-3, net, sum_pooled, 2, update.crafted.plan)
    assert rows.sizes_for(1e-3) == list(range(1, 61))  # a sum says nothing of the size


def test_a_symmetric_molecules_blocks_share_its_weight_counting_the_copies_of_a_row():
    """Triethylamine's three CH2 share one row, and its three CH3 another, each carrying three times
    one atom's weight: read as three copies, their blocks imply the nitrogen's per-node weight, and
    the three group (read as one copy, the two would imply three times it, and group apart)."""
    from attacks.grain.imprinted_stars import _Rows, centred_blocks, two_hop_blocks, weight_clusters
    from fedgraph_sim.crafting.imprint_reading import read_imprints

    update, schema, graphs, _ = pooled_round(("CCN(CC)CC",))
    knowledge = _knowledge(schema, graphs)
    net = knowledge.build_model(update.global_weights, dtype=torch.float64)
    imprints = read_imprints(update, None, tol=1e-2)
    stars = consistent_stars(one_hop_stars(imprints.rows, [read_star(r.numpy(), schema) for r in imprints.rows],
                                           schema))
    rows = _Rows(imprints.rows, imprints.weights, stars, 1e-3, net, knowledge, 1, update.crafted.plan)
    centred = centred_blocks(two_hop_blocks(stars), stars, 3)
    c = _per_node_weight(net, graphs[0], 1)
    (group,) = [g for w, g in weight_clusters(centred, rows) if abs(w - c) <= 1e-4 * abs(c)]
    assert len(imprints.rows) == 3 and len(group) == 3  # the nitrogen's block, a CH2's and a CH3's
