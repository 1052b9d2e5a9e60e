import math

import numpy as np
import pytest
import torch

from fedgraph_sim.data.schema import FeatureBlock, FeatureSchema
from fedgraph_sim.metrics.aggregate import bootstrap_ci
from fedgraph_sim.metrics.gsm import GSM_METRICS, EvaluationGNN, gsm

BLOCKS = (FeatureBlock("element", ("C", "N", "O")), FeatureBlock("degree", (0, 1, 2, 3)))
# a 5-ring (0-4) with two substituents: 5 on 0, 6 on 2
EDGES = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (0, 5), (2, 6)]
N = 7
# element, degree per node
CATS = torch.tensor([[0, 3], [0, 2], [0, 3], [1, 2], [0, 2], [2, 1], [1, 1]])
ALL = ("gsm0", "gsm0_f1", "gsm1", "gsm2", "full_repo", "full_iso")


def adjacency(edges, n: int = N) -> torch.Tensor:
    a = torch.zeros(n, n, dtype=torch.float64)
    for i, j in edges:
        a[i, j] = a[j, i] = 1.0
    return a


def plain_schema() -> FeatureSchema:
    return FeatureSchema(BLOCKS, "element")


def standardized_schema() -> FeatureSchema:
    onehot = plain_schema().onehot(CATS)
    mean, std = onehot.mean(0), onehot.std(0)
    return FeatureSchema(BLOCKS, "element", mean=tuple(mean.tolist()), std=tuple(std.tolist()))


SCHEMAS = pytest.mark.parametrize("schema", [plain_schema(), standardized_schema()],
                                  ids=["plain", "standardized"])


def molecule(schema: FeatureSchema) -> tuple[torch.Tensor, torch.Tensor]:
    return schema.encode(CATS).double(), adjacency(EDGES)


@SCHEMAS
def test_a_permuted_graph_scores_one_everywhere(schema):
    x, a = molecule(schema)
    perm = torch.tensor([4, 6, 0, 2, 5, 1, 3])
    out = gsm(x[perm], a[perm][:, perm], x, a, schema)
    for key in ALL:
        assert out[key] == pytest.approx(1.0), key
    assert out["size_factor"] == 1.0
    assert set(GSM_METRICS) <= set(out)


def test_numpy_inputs_score_like_tensors():
    schema = plain_schema()
    x, a = molecule(schema)
    a_hat = adjacency(EDGES[:-1])
    from_numpy = gsm(x.numpy(), a_hat.numpy(), x.numpy(), a.numpy(), schema)
    assert from_numpy == gsm(x, a_hat, x, a, schema)


@SCHEMAS
def test_a_missing_node_scales_every_score_below_one(schema):
    x, a = molecule(schema)
    keep = torch.arange(N - 1)  # drop the substituent on node 2
    out = gsm(x[keep], a[keep][:, keep], x, a, schema)
    assert out["size_factor"] == pytest.approx((N - 1) / N)
    for key in ("gsm0", "gsm0_f1", "gsm1", "gsm2"):
        assert out[key] < 1.0, key
    # at best every kept node is matched to itself; the structural terms of the matching cost
    # may pair a node elsewhere, so only the bound is certain
    assert out["gsm0"] <= (N - 1) / N + 1e-12
    assert out["full_repo"] == 0.0 and out["full_iso"] == 0.0


@SCHEMAS
def test_a_changed_edge_keeps_gsm0_but_not_gsm1(schema):
    x, a = molecule(schema)
    a_hat = adjacency(EDGES[:-1] + [(3, 6)])  # the substituent moves from 2 to 3
    out = gsm(x, a_hat, x, a, schema)
    assert out["gsm0"] == pytest.approx(1.0) and out["size_factor"] == 1.0
    assert out["gsm1"] < 1.0 - 1e-6 and out["gsm2"] < 1.0 - 1e-6
    assert out["full_repo"] == 0.0 and out["full_iso"] == 0.0


@SCHEMAS
def test_a_wrong_type_costs_its_block_weight_over_n(schema):
    x, a = molecule(schema)
    cats = CATS.clone()
    cats[4, 0] = 2  # C -> O
    out = gsm(schema.encode(cats), a, x, a, schema)
    widths = (3, 4)
    assert out["gsm0"] == pytest.approx(1.0 - (widths[0] / sum(widths)) / N)
    assert out["gsm0_f1"] < 1.0 and out["gsm1"] < 1.0
    assert out["full_repo"] == 0.0 and out["full_iso"] == 0.0


@SCHEMAS
def test_soft_reconstructions_are_discretised_first(schema):
    x, a = molecule(schema)
    adj_hat = 0.6 * a + 0.3 * (1 - a)
    adj_hat.fill_diagonal_(0.0)
    noise = torch.randn(x.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    out = gsm(x + 0.05 * noise, adj_hat, x, a, schema)
    for key in ALL:
        assert out[key] == pytest.approx(1.0), key


def test_gsm1_cannot_tell_c6_from_two_triangles():
    # known weakness of the repo-compatible exactness (GSM-1 = 1): both graphs are 2-regular, so
    # with equal features every 1-hop aggregate is equal; only full_iso tells them apart
    schema = plain_schema()
    x = schema.encode(torch.tensor([[0, 2]] * 6)).double()
    c6 = adjacency([(i, (i + 1) % 6) for i in range(6)], 6)
    two_c3 = adjacency([(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3)], 6)
    out = gsm(x, two_c3, x, c6, schema)
    assert out["gsm1"] == pytest.approx(1.0) and out["full_repo"] == 1.0
    assert out["full_iso"] == 0.0


def test_an_empty_reconstruction_scores_zero():
    schema = plain_schema()
    x, a = molecule(schema)
    out = gsm(torch.zeros(0, x.shape[1]), torch.zeros(0, 0), x, a, schema)
    assert out == {key: 0.0 for key in ALL + ("size_factor",)}


def test_the_evaluator_is_seeded_privately():
    state = torch.get_rng_state()
    first, second = EvaluationGNN(7, seed=0), EvaluationGNN(7, seed=0)
    assert torch.equal(torch.get_rng_state(), state)
    x, a = molecule(plain_schema())
    f1, f2 = first.features(a, x), second.features(a, x)
    assert len(f1) == 5 and f1[-1].shape == (N, 300) and f1[0].dtype == torch.float64
    assert all(torch.equal(u, v) for u, v in zip(f1, f2))
    assert not torch.equal(EvaluationGNN(7, seed=1).features(a, x)[0], f1[0])
    assert (f1[-1] < 0).any() and (f1[0] >= 0).all()  # no activation after the last layer only


def test_bootstrap_ci_covers_the_mean_and_is_seeded():
    values = np.random.default_rng(1).normal(0.5, 0.2, size=200)
    low, high = bootstrap_ci(values)
    assert low < values.mean() < high
    assert high - low < 0.1  # about 4 standard errors (0.2 / sqrt(200) = 0.014)
    assert bootstrap_ci(values, seed=0) == (low, high)
    assert bootstrap_ci(values, seed=1) != (low, high)
    narrow = bootstrap_ci(values, level=0.5)
    assert low < narrow[0] < narrow[1] < high


def test_bootstrap_ci_drops_nan_and_handles_tiny_inputs():
    values = [0.2, float("nan"), 0.4, 0.9]
    assert bootstrap_ci(values) == bootstrap_ci([0.2, 0.4, 0.9])
    assert bootstrap_ci([0.7]) == (0.7, 0.7)
    assert bootstrap_ci([0.7, float("nan")]) == (0.7, 0.7)
    assert all(math.isnan(v) for v in bootstrap_ci([]))
    assert all(math.isnan(v) for v in bootstrap_ci([float("nan")]))


def test_the_wilson_interval_of_a_count_is_honest_at_zero_and_matches_known_values():
    from fedgraph_sim.metrics import wilson_interval

    low, high = wilson_interval(0, 10)
    assert low == 0 and abs(high - 0.2775) < 1e-3  # 0 of 10 rules out little
    low, high = wilson_interval(44, 100)
    assert abs(low - 0.3467) < 1e-3 and abs(high - 0.5377) < 1e-3
    assert wilson_interval(5, 5)[1] == 1.0
    assert all(math.isnan(v) for v in wilson_interval(0, 0))
