"""FedGIG's masked graph auto-encoder (attacks/fedgig/mgae.py)."""

import torch
from torch_geometric.data import Data
from torch_geometric.utils import dense_to_sparse

from attacks.fedgig.mgae import calibrated, drop_edges, train_mgae
from fedgraph_sim.metrics.ranking import roc_auc
from fedgraph_sim.models.convs import gcn_normalised


def ring(n=6):
    a = torch.zeros(n, n)
    for i in range(n):
        a[i, (i + 1) % n] = a[(i + 1) % n, i] = 1
    return a


def test_it_overfits_a_six_ring_and_completes_it_from_a_masked_copy():
    a, x = ring(), torch.eye(6)
    graphs = [Data(x=x, edge_index=dense_to_sparse(a)[0], num_nodes=6, graph_id=i) for i in range(32)]
    model = train_mgae(graphs, 6, seed=0)
    masked = a.clone()
    masked[0, 1] = masked[1, 0] = masked[3, 4] = masked[4, 3] = 0  # two of six edges missing
    with torch.no_grad():
        scores = model(x, masked)
    iu = torch.triu_indices(6, 6, offset=1)
    assert roc_auc(a[iu[0], iu[1]].numpy(), scores[iu[0], iu[1]].numpy()) > 0.9
    assert scores.diagonal().abs().sum() == 0 and torch.allclose(scores, scores.t())


def test_edge_dropping_removes_both_directions_and_keeps_no_new_edge():
    a = ring(10).expand(4, 10, 10)
    dropped = drop_edges(a, 0.5, torch.Generator().manual_seed(0))
    assert torch.equal(dropped, dropped.transpose(-1, -2)) and (dropped <= a).all()
    assert 0 < dropped.sum() < a.sum()


def test_the_normalisation_is_gcns():
    a = ring(4)
    n = gcn_normalised(a)
    assert torch.allclose(n, torch.full((4, 4), 1 / 3) * (a + torch.eye(4)))  # every degree 2 + 1


def test_calibration_keeps_the_ranking_and_puts_exactly_the_asked_edges_above_one_half():
    logits = torch.tensor([[9.0, 3.0, 2.0, 1.0], [3.0, 9.0, 0.5, 4.0], [2.0, 0.5, 9.0, 2.5], [1.0, 4.0, 2.5, 9.0]])
    iu = torch.triu_indices(4, 4, offset=1)
    for edges in range(7):
        p = calibrated(logits, edges)
        assert int((p[iu[0], iu[1]] > 0.5).sum()) == edges
        assert p.diagonal().abs().sum() == 0 and torch.allclose(p, p.t())
        assert torch.equal(p[iu[0], iu[1]].argsort(), logits[iu[0], iu[1]].argsort())
    top = calibrated(logits, 2).triu(1) > 0.5
    assert top.nonzero().tolist() == [[0, 1], [1, 3]]  # the two largest logits, 3.0 and 4.0
