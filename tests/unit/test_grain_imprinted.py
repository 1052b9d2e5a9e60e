"""GRAIN on an ``imprinted_nodes`` round: every node's row read, grouped into graphs and each graph
rebuilt from its nodes' states."""

from dataclasses import replace

import networkx as nx
import numpy as np
import pytest
import torch

from attacks.base import AttackContext, Budget
from attacks.grain.attack import GRAIN
from attacks.grain.build import PartialGraph
from attacks.grain.imprinted import _disjoint_union, node_types, rebuild, split_union
from clients.training import mean_gradient
from torch_geometric.data import Data
from fedgraph_sim.crafting import crafting
from fedgraph_sim.crafting.imprint_reading import EPOCH_CHECK_TOL, NodeImprints, group_graphs, read_imprints
from fedgraph_sim.crafting.imprinted_nodes import crafted_model, readout_rows
from fedgraph_sim.models import build_model
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate
from tests.unit.grain_cases import dense_adj, molecule
from tests.unit.test_imprinted_nodes import AUX, GRAIN_GCN, VICTIMS, _round, float32_epoch_update


def _graph(adj: torch.Tensor, types: list) -> nx.Graph:
    g = nx.from_numpy_array(adj.numpy())
    nx.set_node_attributes(g, dict(enumerate(types)), "t")
    return g


def _rows_of(smiles: str):
    """A molecule (the disjoint union of those a ``.`` separates), its schema, GRAIN's victim
    (float64) and the molecule's distinct readout rows with their copies: what an imprinted_nodes
    round gives the server for one graph."""
    parts = [molecule(s)[0] for s in smiles.split(".")]
    schema = molecule(smiles.split(".")[0])[1]
    offsets = np.cumsum([0] + [p.num_nodes for p in parts])
    g = Data(x=torch.cat([p.x for p in parts]), num_nodes=int(offsets[-1]),
             edge_index=torch.cat([p.edge_index + int(o) for p, o in zip(parts, offsets)], 1))
    torch.manual_seed(0)
    model = build_model(GRAIN_GCN, g.x.size(1), 2).double().eval()
    with torch.no_grad():
        z = model._readout_rows(g.x.double(), model.node_embeddings(g.x.double(), g.edge_index))
    # symmetric nodes' rows differ in the last bits (the order of the sums): one decoded row each
    _, of_node, copies = torch.unique(torch.round(z, decimals=9), dim=0, return_inverse=True, return_counts=True)
    rows = torch.zeros(len(copies), z.size(1), dtype=z.dtype).index_copy_(0, of_node, z)
    return g, schema, model, rows, copies


@pytest.mark.parametrize("smiles, components", [("OCC(O)CO", None), ("OCC(O)CO.C1CCNCC1", 2)])
def test_a_graph_is_rebuilt_from_its_node_rows(smiles, components):
    """A molecule, and a salt-like union of two: GRAIN's search builds one connected graph, so the
    union is read one component at a time."""
    g, schema, model, rows, copies = _rows_of(smiles)
    result, info = rebuild(model, schema, rows, copies.tolist(), GRAIN.Params(), expired=lambda: False)
    assert result.exact and info["two_hop_kept"] >= 1 and info.get("components") == components
    types, _, _, _ = node_types(rows, copies.tolist(), schema)
    found = torch.zeros(result.graph.num_nodes, result.graph.num_nodes)
    for u, w in result.graph.edges():
        found[u, w] = found[w, u] = 1.0
    truth = _graph(dense_adj(g), [tuple(r) for r in schema.decode(g.x).tolist()])
    mine = _graph(found, [tuple(r) for r in schema.decode(types[list(result.graph.types)]).tolist()])
    assert nx.is_isomorphic(truth, mine, node_match=lambda a, b: a["t"] == b["t"])


def test_rounded_rows_keep_their_true_blocks():
    """Rows decoded from a float32 client are off by about 1e-5 of their entries; the 1-hop bound
    goes through the pseudo-inverse of the second layer, which magnifies that, and must keep the
    true blocks anyway."""
    g, schema, model, rows, copies = _rows_of("C1CCNCC1")
    noise = torch.randn(rows.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    rounded = rows + 3e-5 * noise * rows.abs().amax(1, keepdim=True)
    result, _ = rebuild(model, schema, rounded, copies.tolist(), GRAIN.Params(), expired=lambda: False)
    assert result.exact


def test_rows_no_graph_has_build_nothing_exact():
    g, schema, model, rows, copies = _rows_of("OCC(O)CO")
    copies[0] += 1  # one node too many of one kind: no graph has these states
    result, _ = rebuild(model, schema, rows, copies.tolist(), GRAIN.Params(), expired=lambda: False)
    assert result is None or not result.exact


def test_grain_reads_an_imprinted_batch():
    update, schema, truth, owner, _ = _round()
    knowledge = AttackerKnowledge(model=GRAIN_GCN, num_features=truth.shape[1] - 30, num_classes=2, schema=schema,
                                  loss="bce")
    assert GRAIN().not_applicable(update, knowledge) is None
    recs = GRAIN().reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(60)))
    assert recs and all(r.info["crafted"] == "imprinted_nodes" for r in recs)
    victims = [molecule(s)[0] for s in VICTIMS]
    exact = [r for r in recs if r.info["exact"]]
    assert exact
    for rec in exact:  # each exact graph is one of the victims, its edges and node kinds
        kinds = [tuple(t) for t in schema.decode(rec.x.double()).tolist()]
        assert any(nx.is_isomorphic(_graph(rec.adj, kinds), _graph(dense_adj(v), [tuple(t) for t in
                                    schema.decode(v.x).tolist()]), node_match=lambda a, b: a["t"] == b["t"])
                   for v in victims)
    assert np.isfinite([r.info["state_distance"] for r in recs]).all()


def test_grain_reads_an_epoch_table_from_a_fedavg_epoch_and_only_that_table():
    """A float32 client's two local steps on two batches of two: the default table's reply is not
    applicable (and says which table is), the epoch table's is read as one gradient of the epoch's
    graphs. All 15 distinct rows decode; the weights group two graphs (the epoch table tells graphs
    apart by label and node count only), of which toluene is rebuilt exactly."""
    knowledge, victims = None, ("CCO", "c1ccncc1", "Cc1ccccc1", "O=C(O)CCC(=O)O")
    for epoch in (False, True):
        update, schema, truth = float32_epoch_update(epoch, victims)
        knowledge = AttackerKnowledge(model=GRAIN_GCN, num_features=truth.shape[1] - 30, num_classes=2,
                                      schema=schema, loss="bce")
        reason = GRAIN().not_applicable(update, knowledge)
        assert (reason is None) is epoch, reason
    assert "imprinted_nodes_epoch" in GRAIN().not_applicable(float32_epoch_update(False, victims)[0], knowledge)
    raw = replace(knowledge, schema=replace(schema, mean=None, std=None))  # the reader weighs cells by them
    assert "not standardized" in GRAIN().not_applicable(update, raw)
    recs = GRAIN().reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(60)))
    assert recs and all(r.info["crafted"] == "imprinted_nodes_epoch" for r in recs)
    victims = [molecule(s)[0] for s in victims]
    exact = [r for r in recs if r.info["exact"]]
    assert exact, [r.info for r in recs]
    for rec in exact:
        kinds = [tuple(t) for t in schema.decode(rec.x.double()).tolist()]
        assert any(nx.is_isomorphic(_graph(rec.adj, kinds), _graph(dense_adj(v), [tuple(t) for t in
                                    schema.decode(v.x).tolist()]), node_match=lambda a, b: a["t"] == b["t"])
                   for v in victims)


def test_two_graphs_of_one_size_and_label_are_grouped_and_rebuilt_as_their_union():
    """Under the epoch table two 6-atom molecules of one label share their per-node weight ``c``:
    their rows (here the true ones, weighted by the gradient's ``c``) form one cluster of 12 node
    copies that no single 6-atom graph explains; checked as two graphs of 6 it passes, and the
    union GRAIN rebuilds splits into the two molecules."""
    victims = ("c1ccncc1", "OCC(O)CO")
    graphs, schema = [molecule(s)[0] for s in victims], molecule(victims[0])[1]
    torch.manual_seed(0)
    model = build_model(GRAIN_GCN, graphs[0].x.size(1), 2)
    honest = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    crafted, parts = crafting("imprinted_nodes_epoch", [molecule(s)[0] for s in AUX], "bce").craft(
        honest, GRAIN_GCN, 1, seed=3)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in parts[0].items()})
    grads, _ = mean_gradient(model.double(), [Data(x=g.x.double(), edge_index=g.edge_index, y=g.y) for g in graphs],
                             "bce")
    update = ObservedUpdate(round=1, client_key=0, global_weights=crafted.base,
                            returned={k: v.numpy() for k, v in grads.items()}, kind="gradient", num_examples=2,
                            metrics={}, lr=0.01, local_steps=1, batch_size=2, crafted=crafted.for_clients({0: 0}))
    c = float(read_imprints(update, schema, tol=1e-2).weights.min())  # a row one node holds
    truth = torch.from_numpy(readout_rows(crafted_model(GRAIN_GCN, parts[0]), graphs))
    rows, copies = torch.unique(torch.round(truth, decimals=9), dim=0, return_counts=True)
    rows = torch.stack([truth[(torch.round(truth, decimals=9) == r).all(1)][0] for r in rows])
    imprints = NodeImprints(rows, c * copies.double(), cells=0, undecoded=0)
    net = crafted_model(GRAIN_GCN, crafted.base)
    alone, _ = group_graphs(imprints, net, "bce", 2, range(2), check_tol=EPOCH_CHECK_TOL)
    assert alone == []
    (union,), left = group_graphs(imprints, net, "bce", 2, range(2), check_tol=EPOCH_CHECK_TOL, merged=3)
    assert (union.graphs, sum(union.copies), left) == (2, 12, [])
    result, _ = rebuild(net, schema, rows[union.rows], union.copies, GRAIN.Params(), expired=lambda: False,
                        graphs=2)
    pieces = split_union(result.graph, 2)
    assert result.exact and pieces is not None
    types, _, _, _ = node_types(rows[union.rows], union.copies, schema)
    for piece in pieces:
        adj = torch.zeros(piece.num_nodes, piece.num_nodes)
        for u, w in piece.edges():
            adj[u, w] = adj[w, u] = 1.0
        kinds = [tuple(t) for t in schema.decode(types[list(piece.types)]).tolist()]
        assert sum(nx.is_isomorphic(_graph(adj, kinds), _graph(dense_adj(v), [tuple(t) for t in
                                    schema.decode(v.x).tolist()]), node_match=lambda a, b: a["t"] == b["t"])
                   for v in graphs) == 1


def test_a_union_splits_only_into_that_many_connected_graphs_of_one_size():
    triangle, edge = PartialGraph((0, 0, 0), (frozenset({1, 2}), frozenset({0, 2}), frozenset({0, 1}))), \
        PartialGraph((1, 1), (frozenset({1}), frozenset({0})))
    two_triangles = _disjoint_union([triangle, triangle])
    assert [p.types for p in split_union(two_triangles, 2)] == [(0, 0, 0), (0, 0, 0)]
    assert split_union(two_triangles, 3) is None
    # three components, two graphs asked for: a graph of 3 and two copies of a smaller one's rows
    # look alike, so the union is not read
    assert split_union(_disjoint_union([PartialGraph((0,) * 4, (frozenset({1}), frozenset({0, 2}), frozenset({1, 3}),
                                                                 frozenset({2}))), edge, edge]), 2) is None
