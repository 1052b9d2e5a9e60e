"""GRAIN on an ``imprinted_nodes`` round: every node's row read, grouped into graphs and each graph
rebuilt from its nodes' states."""

import networkx as nx
import numpy as np
import pytest
import torch

from attacks.base import AttackContext, Budget
from attacks.grain.attack import GRAIN
from attacks.grain.imprinted import node_types, rebuild
from torch_geometric.data import Data
from fedgraph_sim.models import build_model
from fedgraph_sim.threat import AttackerKnowledge
from tests.unit.grain_cases import dense_adj, molecule
from tests.unit.test_imprinted_nodes import GRAIN_GCN, VICTIMS, _round


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
