import math

import numpy as np
import pytest
import torch

from fedgraph_sim.errors import ConfigError
from fedgraph_sim.metrics import aggregate, graph_metrics, matched_alignment

# A 3-node path 0-1-2 with hand-computed scores (see the comments for the arithmetic).
A = torch.tensor([[0., 1, 0], [1, 0, 1], [0, 1, 0]])
S = torch.tensor([[0.1, 0.8, 0.6], [0.8, 0.3, 0.4], [0.6, 0.4, 0.2]])
X = torch.tensor([[1., 0], [0, 1], [1, 0]])
X_HAT = torch.tensor([[0.8, 0.1], [0.3, 0.2], [0.4, 0.9]])


def test_full_entry_set_by_hand():
    m = graph_metrics(X_HAT, S, X, A, entries="full")
    # positives 0.8,0.8,0.4,0.4 vs negatives 0.1,0.6,0.3,0.6,0.2: 16 of 20 pairs ordered right
    assert m["adj_auc"] == pytest.approx(16 / 20)
    # thresholds 0.8 (P=1, R=.5), 0.6 (P=.5, R=.5), 0.4 (P=4/6, R=1)
    assert m["adj_ap"] == pytest.approx(0.5 * 1 + 0.5 * 4 / 6)
    # correct at (0,0) (0,1) (1,0) (1,1) (2,2)
    assert m["edge_accuracy"] == pytest.approx(5 / 9)
    # argmax 0,0,1 vs 0,1,0
    assert m["node_type_accuracy"] == pytest.approx(1 / 3)
    assert m["feature_mse"] == pytest.approx((.04 + .01 + .09 + .64 + .36 + .81) / 6)
    assert m["structure_skipped"] == 0


def test_upper_offdiag_entry_set_by_hand():
    m = graph_metrics(X_HAT, S, X, A)  # the default entry set
    assert m["adj_auc"] == pytest.approx(0.5)  # 0.8 > 0.6 but 0.4 < 0.6
    assert m["adj_ap"] == pytest.approx(0.5 + 0.5 * 2 / 3)
    assert m["edge_accuracy"] == pytest.approx(1 / 3)


def test_glg_metrics_by_hand():
    m = graph_metrics(X_HAT, S, X, A)
    # RNMSE per node: ||(-.2, .1)|| / 1, ||(.3, -.8)|| / 1, ||(-.6, .9)|| / 1
    rnmse = (math.hypot(.2, .1) + math.hypot(.3, .8) + math.hypot(.6, .9)) / 3
    assert m["feature_rnmse"] == pytest.approx(rnmse)
    # lower triangle with the diagonal: (0,0) .1, (1,0) .2, (1,1) .3, (2,0) .6, (2,1) .6, (2,2) .2
    assert m["adj_mae"] == pytest.approx((.1 + .2 + .3 + .6 + .6 + .2) / 6)
    # upper pairs (0,1) .8 edge, (0,2) .6 non-edge, (1,2) .4 edge: predicted at 0.5 are (0,1), (0,2)
    assert m["edge_precision"] == pytest.approx(1 / 2)
    # two edges, one non-edge: the 1:1 sample keeps both edges and the non-edge, the full AP
    assert m["adj_ap_balanced"] == pytest.approx(m["adj_ap"])


def test_balanced_ap_lifts_the_ap_of_a_sparse_graph():
    """Two edges scored 0.5 below ten non-edges at 0.9 (the other 54 at 0.1): AP 2/12; on a 1:1
    sample (two non-edges) at least 1/2 whichever two are drawn."""
    n = 12
    a, scores = torch.zeros(n, n), torch.full((n, n), 0.1)
    for i, j in ((0, 1), (2, 3)):
        a[i, j] = a[j, i] = 1.0
        scores[i, j] = scores[j, i] = 0.5
    for k in range(10):
        i, j = 4 + k % 8, (5 + k) % n
        if a[i, j] == 0 and i != j:
            scores[i, j] = scores[j, i] = 0.9
    high = int(((torch.triu(scores, 1) == 0.9)).sum())
    x = torch.eye(n)
    m = graph_metrics(x, scores, x, a)
    assert m["adj_ap"] == pytest.approx(2 / (high + 2))
    assert m["adj_ap_balanced"] >= 0.5
    assert math.isnan(graph_metrics(x, torch.zeros(n, n), x, a)["edge_precision"])  # nothing predicted


def test_one_class_entry_set_is_skipped_and_counted():
    empty = torch.zeros(2, 2)
    m = graph_metrics(torch.eye(2), torch.full((2, 2), 0.2), torch.eye(2), empty, entries="full")
    assert math.isnan(m["adj_auc"]) and math.isnan(m["adj_ap"])
    assert m["structure_skipped"] == 1
    assert m["edge_accuracy"] == 1.0  # accuracy stays defined: all four entries below 0.5
    rows = [m, graph_metrics(X_HAT, S, X, A, entries="full")]
    agg = aggregate(rows, "adj_auc")
    assert agg == {"mean": pytest.approx(0.8), "std": 0.0, "count": 1, "skipped": 1}


def test_aggregate_mean_std_count():
    agg = aggregate([{"m": 1.0}, {"m": 3.0}, {"m": float("nan")}, {}], "m")
    assert agg == {"mean": 2.0, "std": 1.0, "count": 2, "skipped": 2}


def test_matched_alignment_undoes_a_permutation():
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(5, 4, generator=gen)
    adj = torch.tensor([[0, 1, 0, 0, 1], [1, 0, 1, 0, 0], [0, 1, 0, 1, 0], [0, 0, 1, 0, 1],
                        [1, 0, 0, 1, 0]], dtype=torch.float)
    perm = torch.tensor([3, 0, 4, 1, 2])
    x_hat, adj_hat = x[perm], adj[perm][:, perm]
    ident = graph_metrics(x_hat, adj_hat, x, adj)
    matched = graph_metrics(x_hat, adj_hat, x, adj, alignment="matched")
    assert matched["feature_mse"] == pytest.approx(0.0)
    assert matched["adj_auc"] == pytest.approx(1.0) and matched["edge_accuracy"] == 1.0
    assert ident["feature_mse"] > 0.01
    order = matched_alignment(x_hat.numpy(), x.numpy())
    assert np.array_equal(perm.numpy()[order], np.arange(5))


def test_reconstruction_size_mismatch_is_cut_or_padded():
    # Larger reconstruction: only the true-n block counts.
    big = torch.zeros(5, 5)
    big[:3, :3] = A
    m = graph_metrics(torch.cat([X, torch.ones(2, 2)]), big, X, A, entries="full")
    assert m["adj_auc"] == 1.0 and m["feature_mse"] == 0.0
    # Smaller reconstruction: missing nodes count as zero features and zero scores.
    m = graph_metrics(X[:2], A[:2, :2], X, A, entries="full")
    assert m["feature_mse"] == pytest.approx(1 / 6)
    assert m["edge_accuracy"] == pytest.approx(7 / 9)


def test_bad_names_raise():
    with pytest.raises(ConfigError, match="metrics.alignment"):
        graph_metrics(X, A, X, A, alignment="greedy")
    with pytest.raises(ConfigError, match="metrics.entries"):
        graph_metrics(X, A, X, A, entries="lower")


def test_invariant_structure_distances_by_hand_and_under_permutation():
    from fedgraph_sim.metrics.reconstruction import Aligned, degree_distance, spectral_distance

    path = A.numpy()
    same = Aligned(X.numpy(), path, X.numpy(), path)
    assert degree_distance(same) == 0.0 and spectral_distance(same) == 0.0
    triangle = np.ones((3, 3))
    np.fill_diagonal(triangle, 0)
    pair = Aligned(X.numpy(), triangle, X.numpy(), path)
    # degrees (2,2,2) vs sorted (1,1,2): mean |diff| = 2/3
    assert degree_distance(pair) == pytest.approx(2 / 3)
    # normalised Laplacian spectra: triangle (0, 1.5, 1.5), path (0, 1, 2)
    assert spectral_distance(pair) == pytest.approx(np.sqrt(0.25 + 0.25) / np.sqrt(3))
    perm = [2, 0, 1]
    m = graph_metrics(X_HAT[perm], A[perm][:, perm], X, A)
    assert m["degree_distance"] == 0.0 and m["spectral_distance"] == pytest.approx(0.0, abs=1e-12)


def test_matched_alignment_tells_same_type_nodes_apart_by_structure():
    """All nodes share one type: only the structural signature can undo the permutation."""
    x = torch.ones(5, 1)
    star = torch.zeros(5, 5)
    star[0, 1:] = star[1:, 0] = 1
    star[1, 2] = star[2, 1] = 1  # a star with one extra edge: centre, two degree-2 leaves, two leaves
    perm = torch.tensor([4, 2, 0, 3, 1])
    adj_hat = star[perm][:, perm]
    assert graph_metrics(x, adj_hat, x, star, alignment="matched")["adj_auc"] == pytest.approx(1.0)
    assert graph_metrics(x, adj_hat, x, star)["adj_auc"] < 1.0


def test_gsm_alignment_undoes_a_permutation_of_a_symmetric_molecule():
    """Benzene-like ring with one substituent: ``matched`` cannot tell the symmetric atoms apart,
    the ``gsm`` alignment maps the isomorphism and scores a perfect reconstruction 1."""
    from fedgraph_sim.data.schema import FeatureBlock, FeatureSchema
    from fedgraph_sim.metrics import score_reconstruction

    schema = FeatureSchema((FeatureBlock("type", ("CH", "C", "CH3")),), "type")
    types = torch.tensor([[1], [0], [0], [0], [0], [0], [2]])
    x = schema.encode(types)
    adj = torch.zeros(7, 7)
    for u, w in [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0), (0, 6)]:
        adj[u, w] = adj[w, u] = 1
    perm = torch.tensor([3, 6, 1, 0, 5, 2, 4])
    scores = score_reconstruction(x[perm], adj[perm][:, perm], x, adj, schema=schema)
    assert scores["gsm"]["adj_auc"] == 1.0 and scores["gsm"]["node_type_accuracy"] == 1.0
    assert scores["gsm"]["full_iso"] == 1.0 and scores["identity"]["adj_auc"] < 1.0


def test_target_rnmse_scores_one_target_and_pairs_a_batch_of_them_by_the_hungarian_method():
    x = np.array([[3.0, 4.0], [1.0, 0.0], [0.0, 2.0]])
    recovered = np.array([[0.0, 2.0], [3.0, 4.0]])  # targets 2 and 0, in another order
    one = graph_metrics(torch.tensor(np.array([[3.0, 3.0]])), torch.zeros(1, 1), torch.tensor(x),
                        torch.zeros(3, 3), target=([0], [0]))
    assert one["target_rnmse"] == pytest.approx(1 / 5)  # ||(0, -1)|| / ||(3, 4)||
    batch = graph_metrics(torch.tensor(recovered), torch.zeros(2, 2), torch.tensor(x), torch.zeros(3, 3),
                          target=([0, 1], [0, 2]))
    assert batch["target_rnmse"] == pytest.approx(0.0)
    assert np.isnan(graph_metrics(torch.tensor(recovered), torch.zeros(2, 2), torch.tensor(x),
                                  torch.zeros(3, 3))["target_rnmse"])


def test_jaccard_and_adjacency_mse_on_hand_made_matrices():
    truth = torch.tensor([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=torch.float)  # edges 01, 12
    pred = torch.tensor([[0, 0.9, 0.6], [0.9, 0, 0.2], [0.6, 0.2, 0]])  # predicted 01, 02
    scores = graph_metrics(torch.zeros(3, 1), pred, torch.zeros(3, 1), truth)
    assert scores["edge_jaccard"] == pytest.approx(1 / 3)  # {01} / {01, 02, 12}
    assert scores["adj_mse"] == pytest.approx((0.1 ** 2 + 0.6 ** 2 + 0.8 ** 2) / 3)
    empty = graph_metrics(torch.zeros(3, 1), torch.zeros(3, 3), torch.zeros(3, 1), torch.zeros(3, 3))
    assert empty["edge_jaccard"] == 1.0 and empty["adj_mse"] == 0.0
