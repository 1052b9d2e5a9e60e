import math

import pytest
import torch

from clients.defenses import ClientTurn, build_defenses
from clients.defenses.base import Defense, Noise
from clients.defenses.dp_sgd import DPSGD
from clients.defenses.prune import Prune, prune_smallest
from clients.training import fedsgd_gradient
from fedgraph_sim import registry
from fedgraph_sim.data.synthetic import make_synthetic
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.models import GraphClassifier


def graphs(n=4, seed=0):
    return make_synthetic(num_graphs=n, seed=seed).graphs


def update_like(seed=0):
    gen = torch.Generator().manual_seed(seed)
    return {"a": torch.randn(2, generator=gen), "b": torch.randn(7, generator=gen),
            "c": torch.randn(16, 9, generator=gen), "d": torch.randn(100, generator=gen)}


@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.9, 0.99])
def test_prune_zeroes_exactly_floor_p_numel_per_tensor(p):
    update = update_like()
    out = build_defenses([{"name": "prune", "p": p}]).apply(update, torch.Generator())
    for k, v in update.items():
        zeroed = int((out[k] == 0).sum())
        assert zeroed == math.floor(p * v.numel()), k
        kept = out[k] != 0
        if zeroed and kept.any():  # every zeroed entry is at most as large as every kept one
            assert v[~kept].abs().max() <= v[kept].abs().min()
        assert torch.equal(out[k][kept], v[kept])


def test_prune_floor_keeps_one_of_two_equal_bias_entries():
    out = prune_smallest(torch.tensor([0.3, -0.3]), 0.99)
    assert torch.equal(out, torch.tensor([0.0, -0.3]))  # ties broken by index


def test_global_prune_ranks_all_entries_jointly():
    update = update_like()
    out = build_defenses([{"name": "prune", "p": 0.9, "scope": "global"}]).apply(update, torch.Generator())
    total = sum(v.numel() for v in update.values())
    assert sum(int((v == 0).sum()) for v in out.values()) == math.floor(0.9 * total)
    threshold = min(float(v[v != 0].abs().min()) for v in out.values() if (v != 0).any())
    assert all(float(update[k][out[k] == 0].abs().max()) <= threshold for k in update if (out[k] == 0).any())


@pytest.mark.parametrize("sigma,param,expected", [(0.1, "scale", 2 * 0.1 ** 2), (0.5, "scale", 0.5),
                                                  (0.2, "variance", 0.2)])
def test_laplace_empirical_variance_is_2b_squared(sigma, param, expected):
    noise = Noise(sigma, "laplace", param)
    assert noise.variance == pytest.approx(expected)
    sample = noise.sample(torch.zeros(400_000, dtype=torch.float64), torch.Generator().manual_seed(1))
    assert float(sample.var()) == pytest.approx(expected, rel=0.02)
    assert abs(float(sample.mean())) < 4 * math.sqrt(expected / 400_000)
    # Laplace, not Gaussian: excess kurtosis 3
    centred = sample - sample.mean()
    kurtosis = float((centred ** 4).mean() / centred.var() ** 2) - 3
    assert kurtosis == pytest.approx(3.0, abs=0.3)


def test_gaussian_noise_variance_is_sigma_squared():
    noise = Noise(0.3, "gaussian")
    sample = noise.sample(torch.zeros(200_000), torch.Generator().manual_seed(2))
    assert float(sample.var()) == pytest.approx(0.09, rel=0.02)


def test_dp_gradients_adds_seeded_noise_and_reports_variance():
    update = update_like()
    stack = build_defenses([{"name": "dp_gradients", "sigma": 0.1}])
    a = stack.apply(update, torch.Generator().manual_seed(3))
    b = stack.apply(update, torch.Generator().manual_seed(3))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert all(not torch.equal(a[k], update[k]) for k in a)
    assert stack.report() == {"gradient-noise-variance": pytest.approx(0.02)}


def test_dp_gradients_clipping_bounds_the_update_norm():
    update = update_like()
    out = build_defenses([{"name": "dp_gradients", "sigma": 0.0, "clip": 0.5}]).apply(update, torch.Generator())
    norm = math.sqrt(sum(float((v ** 2).sum()) for v in out.values()))
    assert norm == pytest.approx(0.5, rel=1e-5)
    ratio = out["c"] / update["c"]
    assert torch.allclose(ratio, ratio.flatten()[0].expand_as(ratio))  # direction kept


def test_activation_noise_changes_the_gradient_but_not_the_evaluation_model():
    torch.manual_seed(0)
    model = GraphClassifier(4, 2)
    batch = graphs(3)
    clean, _ = fedsgd_gradient(model, batch)
    stack = build_defenses([{"name": "dp_activations", "sigma": 0.5}])
    g = graphs(2)[0]
    model.eval()
    before = model(g.x, g.edge_index)
    with stack.training(model, torch.Generator().manual_seed(0)):
        noisy, _ = fedsgd_gradient(model, batch)
        model.eval()
        during_eval = model(g.x, g.edge_index)
    model.eval()
    after = model(g.x, g.edge_index)
    assert any(not torch.allclose(noisy[k], clean[k]) for k in clean)
    assert torch.equal(before, during_eval) and torch.equal(before, after)
    assert all(not act._forward_hooks for act in model.acts)
    again, _ = fedsgd_gradient(model, batch)  # hooks gone: the clean gradient again
    assert all(torch.equal(again[k], clean[k]) for k in clean)


def test_dp_hybrid_halves_sigma_for_both_parts():
    stack = build_defenses([{"name": "dp_hybrid", "sigma": 0.2}])
    assert stack.report() == {"activation-noise-variance": pytest.approx(2 * 0.1 ** 2),
                              "gradient-noise-variance": pytest.approx(2 * 0.1 ** 2)}
    stack = build_defenses([{"name": "dp_hybrid", "sigma": 0.2, "laplace_param": "variance"}])
    assert stack.report()["gradient-noise-variance"] == pytest.approx(0.1)


def test_stack_applies_in_order():
    update = update_like()
    stack = build_defenses([{"name": "dp_gradients", "sigma": 0.01}, {"name": "prune", "p": 0.5}])
    out = stack.apply(update, torch.Generator().manual_seed(0))
    assert all(int((v == 0).sum()) == math.floor(0.5 * v.numel()) for v in out.values())


@pytest.mark.parametrize("entries,message", [
    ([{"name": "nope"}], "defenses.0.name: unknown defense 'nope'; valid defenses: "),
    ([{"name": "prune", "p": 1.0}], "defenses.0.p: must be in [0, 1) (got 1.0)"),
    ([{"name": "prune", "p": -0.1}], "defenses.0.p: must be in [0, 1)"),
    ([{"name": "prune"}], "defenses.0.p: prune needs a value for 'p'"),
    ([{"name": "prune", "p": 0.5, "q": 1}], "defenses.0.q: prune has no parameter 'q'; valid: p, scope"),
    ([{"name": "prune", "p": 0.5, "scope": "row"}], "defenses.0.scope: unknown value 'row'; valid: tensor, global"),
    ([{"name": "prune", "p": 0.1}, {"name": "dp_gradients", "sigma": -1}], "defenses.1.sigma: must be a number >= 0"),
    ([{"name": "dp_gradients", "sigma": 0.1, "clip": -1}], "defenses.0.clip: must be a number > 0"),
    ([{"name": "dp_gradients", "sigma": 0.1, "noise": "cauchy"}], "defenses.0.noise: unknown value 'cauchy'"),
    ([{"name": "dp_sgd", "clip": 0}], "defenses.0.clip: must be a number > 0"),
    ([{"name": "dp_sgd", "target_epsilon": -1}], "defenses.0.target_epsilon: must be a number > 0"),
    ([{"name": "dp_sgd"}, {"name": "dp_activations", "sigma": 0.1}],
     "defenses: dp_sgd cannot be combined with dp_activations (its per-graph pass"),
    ([{"name": "dp_sgd"}, {"name": "dp_sgd"}], "defenses: dp_sgd appears more than once; one per stack"),
    (["prune"], "defenses.0: each defense is a mapping with a name"),
])
def test_bad_defense_entries_name_the_key(entries, message):
    with pytest.raises(ConfigError) as info:
        build_defenses(entries)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_a_defense_for_graph_classifiers_is_refused_for_a_node_classifier():
    serving = [n for n in registry.defenses.names() if "node" in registry.defenses.get(n).tasks]  # their own word
    assert "prune" in serving and "dp_sgd" not in serving
    with pytest.raises(ConfigError) as info:
        build_defenses([{"name": "dp_sgd"}], task="node")
    assert str(info.value) == ("defenses.0.name: dp_sgd serves model.task graph, not node; with model.task: node use "
                               f"one of {', '.join(serving)}")
    assert build_defenses([{"name": "prune", "p": 0.5}], task="node")


class Counting(Defense):
    """A throwaway defense that declares its own rules: it counts its turns per client (stateful)
    and hooks the forward pass."""

    name = "counting_for_test"
    stateful = True
    hooks_forward = True

    def begin(self, turn, state):
        self.turns = (state or 0) + 1

    def state(self):
        return self.turns


def test_the_stack_follows_the_rules_a_defense_declares(monkeypatch):
    monkeypatch.setattr(registry, "defenses", registry.Registry("defense"))
    for name in ("dp_sgd", "prune"):
        registry.defenses.add(name, {"dp_sgd": DPSGD, "prune": Prune}[name])
    registry.defenses.register(Counting)
    stack = build_defenses([{"name": "prune", "p": 0.1}, {"name": "counting_for_test"}])
    turn = ClientTurn(partition_size=10, batch_size=1, local_steps=1, rounds=3)
    state = {}
    for expected in (1, 2, 3):  # the state survives the client's turns, under the defense's stack key
        stack.begin(turn, state)
        state = stack.state()
        assert state == {"1.counting_for_test": expected}
    with pytest.raises(ConfigError, match="^defenses: dp_sgd cannot be combined with counting_for_test"):
        build_defenses([{"name": "counting_for_test"}, {"name": "dp_sgd"}])


def test_unreachable_target_epsilon_is_caught_before_the_run():
    stack = build_defenses([{"name": "dp_sgd", "target_epsilon": 0.01}])
    with pytest.raises(ConfigError, match=r"^defenses\.0\.target_epsilon: 0\.01 cannot be reached"):
        stack.validate([ClientTurn(partition_size=40, batch_size=4, local_steps=1, rounds=10)])


def test_clipped_gaussian_dp_gradients_claims_the_gaussian_mechanisms_epsilon():
    from clients.defenses.accounting import epsilon

    stack = build_defenses([{"name": "dp_gradients", "sigma": 2.0, "clip": 1.0, "noise": "gaussian"}])
    assert "epsilon" not in stack.report()  # before any round
    stack.begin(ClientTurn(10, 1, 1, 5, round=3), {})
    # sensitivity 2C: noise multiplier sigma / 2C = 1, three unsampled steps
    assert stack.report()["epsilon"] == pytest.approx(epsilon([(1.0, 1.0, 3)], 1e-5))
    laplace = build_defenses([{"name": "dp_gradients", "sigma": 2.0, "clip": 1.0}])
    laplace.begin(ClientTurn(10, 1, 1, 5, round=3), {})
    assert "epsilon" not in laplace.report()
