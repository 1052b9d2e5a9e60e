import numpy as np
import pytest

from fedgraph_sim.data import dirichlet_partition
from fedgraph_sim.errors import ConfigError

LABELS = np.repeat(np.arange(3), 100)


def test_disjoint_and_complete():
    parts = dirichlet_partition(LABELS, 5, alpha=0.5, seed=1)
    allidx = np.concatenate(parts)
    assert len(allidx) == len(LABELS)
    assert np.array_equal(np.sort(allidx), np.arange(len(LABELS)))


def test_reproducible_per_seed():
    a = dirichlet_partition(LABELS, 4, alpha=1.0, seed=7)
    b = dirichlet_partition(LABELS, 4, alpha=1.0, seed=7)
    c = dirichlet_partition(LABELS, 4, alpha=1.0, seed=8)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def _skew(alpha):
    """Mean over clients and seeds of the largest class share in a client (1/3 = IID)."""
    shares = []
    for seed in range(20):
        for part in dirichlet_partition(LABELS, 4, alpha=alpha, seed=seed, min_partition_size=1):
            shares.append(np.bincount(LABELS[part], minlength=3).max() / len(part))
    return float(np.mean(shares))


def test_skew_grows_as_alpha_shrinks():
    iid, mid, skewed = _skew(100.0), _skew(1.0), _skew(0.05)
    assert iid < 0.4
    assert iid < mid < skewed
    assert skewed > 0.85


def test_min_partition_size_is_met():
    for seed in range(5):
        parts = dirichlet_partition(LABELS, 6, alpha=0.3, seed=seed, min_partition_size=10)
        assert min(len(p) for p in parts) >= 10


@pytest.mark.parametrize("kwargs, key", [
    (dict(num_partitions=2, alpha=0.0), "partition.alpha"),
    (dict(num_partitions=2, alpha=-1.0), "partition.alpha"),
    (dict(num_partitions=301, alpha=1.0), "federation.num_clients"),
    (dict(num_partitions=10, alpha=1.0, min_partition_size=40), "partition.min_partition_size"),
])
def test_impossible_numbers_name_the_key(kwargs, key):
    with pytest.raises(ConfigError, match=key):
        dirichlet_partition(LABELS, **kwargs)


def test_repeated_failure_gives_clear_error():
    with pytest.raises(ConfigError, match="no Dirichlet"):
        dirichlet_partition(LABELS, 10, alpha=0.001, min_partition_size=29, seed=0, max_attempts=5)


def test_sampling_with_replacement_serves_more_clients_than_graphs():
    from fedgraph_sim.data import dirichlet_sample

    labels = np.array([0] * 60 + [1] * 40)
    parts = dirichlet_sample(labels, 1000, alpha=1.0, size=3, seed=0)
    assert len(parts) == 1000 and all(len(p) == 3 for p in parts)
    assert all(0 <= i < 100 for p in parts for i in p)
    assert [p.tolist() for p in parts] == [p.tolist() for p in dirichlet_sample(labels, 1000, 1.0, 3, seed=0)]
    skewed = dirichlet_sample(labels, 500, alpha=0.05, size=10, seed=1)
    assert np.mean([len(set(labels[p])) == 1 for p in skewed]) > 0.8  # small alpha: one class per client


def test_a_thousand_clients_on_a_small_dataset_need_replacement():
    from fedgraph_sim.config import load_config
    from fedgraph_sim.errors import ConfigError
    from fedgraph_sim.scenario import build_scenario

    base = ["data.dataset=synthetic", "data.options={num_graphs: 60}", "federation.num_clients=1000"]
    with pytest.raises(ConfigError, match="partition.with_replacement"):
        build_scenario(load_config(None, base))
    scenario = build_scenario(load_config(None, [*base, "partition.with_replacement=true", "partition.size=2"]))
    assert len(scenario.clients) == 1000 and all(len(c) == 2 for c in scenario.clients)
