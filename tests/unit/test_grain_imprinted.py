"""GRAIN on an ``imprinted_nodes`` round: every node's row read, grouped into graphs and each graph
rebuilt from its nodes' states."""

import networkx as nx
import numpy as np
import torch

from attacks.base import AttackContext, Budget
from attacks.grain.attack import GRAIN
from attacks.grain.imprinted import node_types, rebuild
from fedgraph_sim.models import build_model
from fedgraph_sim.threat import AttackerKnowledge
from tests.unit.grain_cases import dense_adj, molecule
from tests.unit.test_imprinted_nodes import GRAIN_GCN, VICTIMS, _round


def _graph(adj: torch.Tensor, types: list) -> nx.Graph:
    g = nx.from_numpy_array(adj.numpy())
    nx.set_node_attributes(g, dict(enumerate(types)), "t")
    return g


def _rows_of(smiles: str):
    """A molecule, its schema, GRAIN's victim (float64) and the molecule's distinct readout rows
    with their copies: what an imprinted_nodes round gives the server for one graph."""
    g, schema = molecule(smiles)
    torch.manual_seed(0)
    model = build_model(GRAIN_GCN, g.x.size(1), 2).double().eval()
    with torch.no_grad():
        z = model._readout_rows(g.x.double(), model.node_embeddings(g.x.double(), g.edge_index))
    rows, copies = torch.unique(z, dim=0, return_counts=True)
    return g, schema, model, rows, copies


def test_a_graph_is_rebuilt_from_its_node_rows():
    g, schema, model, rows, copies = _rows_of("OCC(O)CO")
    result, info = rebuild(model, schema, rows, copies.tolist(), GRAIN.Params(), expired=lambda: False)
    assert result.exact and info["two_hop_kept"] >= 1
    types, _, _, _ = node_types(rows, copies.tolist(), schema)
    found = torch.zeros(result.graph.num_nodes, result.graph.num_nodes)
    for u, w in result.graph.edges():
        found[u, w] = found[w, u] = 1.0
    truth = _graph(dense_adj(g), [tuple(r) for r in schema.decode(g.x).tolist()])
    mine = _graph(found, [tuple(r) for r in schema.decode(types[list(result.graph.types)]).tolist()])
    assert nx.is_isomorphic(truth, mine, node_match=lambda a, b: a["t"] == b["t"])


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
