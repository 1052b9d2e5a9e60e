import math

import pytest
import torch

from clients.defenses import ClientTurn, build_defenses
from clients.defenses.dp_sgd import epsilon, noise_for_target, per_graph_gradients
from clients.training import fedsgd_gradient, mean_gradient
from fedgraph_sim.data.synthetic import make_synthetic
from fedgraph_sim.models import GraphClassifier


def setup(n=5, **model_kw):
    torch.manual_seed(0)
    return GraphClassifier(4, 2, **model_kw), make_synthetic(num_graphs=n, seed=1).graphs


GRAIN_VICTIM = {"hidden": 32, "conv_bias": False, "last_activation": False, "readout": "mlp",
                "readout_hidden": [32, 8], "readout_input": "concat_input", "readout_placement": "per_node"}


@pytest.mark.parametrize("model_kw, loss", [({}, "cross_entropy"), ({"pool": "sum", "layers": 3}, "cross_entropy"),
                                            ({"readout": "mlp"}, "cross_entropy"), (GRAIN_VICTIM, "bce")])
def test_per_graph_gradients_equal_the_per_graph_loop(model_kw, loss):
    model, graphs = setup(**model_kw)
    assert len({g.num_nodes for g in graphs}) > 1  # padding is exercised
    grads, losses = per_graph_gradients(model, graphs, loss)
    for i, g in enumerate(graphs):
        single, loss_i = mean_gradient(model, [g], loss)
        assert float(losses[i]) == pytest.approx(loss_i, rel=1e-5)
        for name, value in single.items():
            assert torch.allclose(grads[name][i], value, atol=1e-6), (i, name)


def dp_step(model, graphs, seed=0, **params):
    stack = build_defenses([{"name": "dp_sgd", **params}])
    stack.begin(ClientTurn(partition_size=50, batch_size=len(graphs), local_steps=1, rounds=1), {})
    rng = torch.Generator().manual_seed(seed)
    grads, _ = fedsgd_gradient(model, graphs, stack.gradient_fn(rng))
    return grads, stack


def test_without_noise_and_with_a_loose_clip_dp_sgd_is_the_mean_gradient():
    model, graphs = setup()
    grads, _ = dp_step(model, graphs, clip=1e6, noise_multiplier=0.0)
    clean, _ = mean_gradient(model, graphs)
    assert all(torch.allclose(grads[k], clean[k], atol=1e-6) for k in clean)


def test_clipping_bounds_each_graph_contribution():
    model, graphs = setup()
    clip = 1e-3
    grads, _ = dp_step(model, graphs, clip=clip, noise_multiplier=0.0)
    norm = math.sqrt(sum(float((g.double() ** 2).sum()) for g in grads.values()))
    assert norm <= clip + 1e-9
    per, _ = per_graph_gradients(model, graphs)
    expected = {k: sum(per[k][i] * min(1.0, clip / math.sqrt(sum(float((per[n][i] ** 2).sum()) for n in per)))
                       for i in range(len(graphs))) / len(graphs) for k in per}
    assert all(torch.allclose(grads[k], expected[k], atol=1e-9) for k in per)


def test_noise_std_is_z_times_clip_over_batch():
    model, graphs = setup(n=4)
    a, _ = dp_step(model, graphs, seed=0, clip=0.5, noise_multiplier=2.0)
    b, _ = dp_step(model, graphs, seed=1, clip=0.5, noise_multiplier=2.0)
    diff = torch.cat([(a[k] - b[k]).flatten() for k in a])  # two draws: variance 2 (zC/B)^2
    assert float(diff.std()) / math.sqrt(2) == pytest.approx(2.0 * 0.5 / 4, rel=0.15)


def test_accountant_reproduces_opacus_reference_value():
    # Opacus' own test: z = 1.5, q = 0.04, 2250 steps -> epsilon 7.3291 at delta 1e-5
    assert epsilon([(1.5, 0.04, 2250)], 1e-5) == pytest.approx(7.3291, abs=1e-3)
    assert epsilon([(1.5, 0.04, 1000), (1.5, 0.04, 1250)], 1e-5) == pytest.approx(7.3291, abs=1e-3)


def test_accountant_accumulates_across_rounds_through_saved_state():
    model, graphs = setup(n=4)
    stack = build_defenses([{"name": "dp_sgd", "noise_multiplier": 1.0}])
    turn = ClientTurn(partition_size=40, batch_size=4, local_steps=3, rounds=2)
    eps, state = [], {}
    for _ in range(2):
        stack.begin(turn, state)
        rng = torch.Generator().manual_seed(0)
        for _ in range(turn.local_steps):
            stack.gradient_fn(rng)(model, graphs)
        state = stack.state()
        eps.append(stack.report()["epsilon"])
    assert state == {"0.dp_sgd": {"history": [[1.0, 0.1, 6]], "exposure": {}}}
    assert eps[0] == pytest.approx(epsilon([(1.0, 0.1, 3)], 1e-5))
    assert eps[1] == pytest.approx(epsilon([(1.0, 0.1, 6)], 1e-5)) and eps[1] > eps[0]


def test_target_epsilon_sets_the_noise_multiplier():
    z = noise_for_target(2.0, 1e-5, 0.1, 20)
    assert epsilon([(z, 0.1, 20)], 1e-5) == pytest.approx(2.0, abs=0.011)
    stack = build_defenses([{"name": "dp_sgd", "target_epsilon": 2.0}])
    stack.begin(ClientTurn(partition_size=40, batch_size=4, local_steps=2, rounds=10), {})
    assert stack.report()["noise-multiplier"] == pytest.approx(z)


def _walk(sampling: str, steps: int, rounds: int, z: float = 1.0, target=None, partition: int = 4):
    """A client's turns on one batch of 4 graphs at every step (of a partition of ``partition``)."""
    model, graphs = setup(n=4)
    params = {"noise_multiplier": z} if target is None else {"target_epsilon": target}
    stack = build_defenses([{"name": "dp_sgd", **params}])
    turn = ClientTurn(partition_size=partition, batch_size=4, local_steps=steps, rounds=rounds, sampling=sampling)
    state = {}
    for _ in range(rounds):
        stack.begin(turn, state)
        rng = torch.Generator().manual_seed(0)
        for _ in range(steps):
            stack.gradient_fn(rng)(model, graphs)
        state = stack.state()
    return stack.report(), state


def test_repeated_steps_on_one_batch_are_one_gaussian_at_z_over_root_k():
    """K steps at z on the same batch of 4 of 40 graphs: Opacus' own RDP functions for one Gaussian
    step at z / sqrt(K), not K steps subsampled at q = 0.1 (which understated epsilon)."""
    from opacus.accountants.analysis.rdp import compute_rdp, get_privacy_spent

    orders = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))
    for k, z in ((5, 1.0), (3, 2.0)):
        report, _ = _walk("repeat", steps=k, rounds=1, z=z, partition=40)
        rdp = compute_rdp(q=1.0, noise_multiplier=z / math.sqrt(k), steps=1, orders=orders)
        expected, _ = get_privacy_spent(orders=orders, rdp=rdp, delta=1e-5)
        assert report["epsilon"] == pytest.approx(expected, rel=1e-6)
        assert report["epsilon"] > 2 * epsilon([(z, 0.1, k)], 1e-5)  # what K sampled steps claimed


def test_a_shuffles_walk_counts_each_graphs_uses_across_rounds():
    report, state = _walk("epoch", steps=2, rounds=3)  # every graph in all 6 steps
    assert set(state["0.dp_sgd"]["exposure"].values()) == {6.0} and state["0.dp_sgd"]["history"] == []
    assert report["epsilon"] == pytest.approx(epsilon([(1 / math.sqrt(6), 1.0, 1)], 1e-5))


def test_target_epsilon_under_a_shuffle_is_met_at_the_planned_uses():
    turn = ClientTurn(partition_size=4, batch_size=4, local_steps=2, rounds=3, sampling="repeat")
    assert turn.planned_uses == 6
    assert ClientTurn(partition_size=10, batch_size=4, local_steps=2, rounds=3, sampling="epoch").planned_uses == 3
    report, _ = _walk("repeat", steps=2, rounds=3, target=4.0)
    assert report["epsilon"] == pytest.approx(4.0, abs=0.03)
