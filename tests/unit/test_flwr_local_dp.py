"""Flower's LocalDpMod as the ``flwr_local_dp`` defense: its parameters, its noise scale, and the
rules it carries (FedAvg replies only; after the project's own defenses)."""

import math

import pytest
from flwr.clientapp.mod import LocalDpMod

from clients.defenses import ClientTurn, build_defenses
from clients.defenses.flwr_local_dp import FlowerLocalDP
from fedgraph_sim.errors import ConfigError

LOCAL_DP = {"name": "flwr_local_dp", "clipping_norm": 1.0, "sensitivity": 1.0, "epsilon": 0.5, "delta": 1e-5}


def test_the_noise_is_the_gaussian_mechanisms_and_the_mod_is_flowers():
    defense = FlowerLocalDP(clipping_norm=1.0, sensitivity=2.0, epsilon=0.5, delta=1e-5)
    assert defense.noise_std == pytest.approx(2.0 * math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.5)
    mod = defense.mod()
    assert isinstance(mod, LocalDpMod)
    assert (mod.clipping_norm, mod.sensitivity, mod.epsilon, mod.delta) == (1.0, 2.0, 0.5, 1e-5)
    assert defense.report() == {"flwr-local-dp-noise-std": defense.noise_std, "flwr-local-dp-epsilon": 0.5,
                                "flwr-local-dp-delta": defense.delta}


@pytest.mark.parametrize("key, value, message", [
    ("clipping_norm", 0, "defenses.0.clipping_norm: must be a number > 0 (got 0)"),
    ("sensitivity", -1, "defenses.0.sensitivity: must be a number >= 0 (got -1)"),
    ("epsilon", 0, "defenses.0.epsilon: must be a number > 0 (got 0)"),
    ("delta", 1.0, "defenses.0.delta: must be in (0, 1) (got 1.0)"),
    ("delta", 0, "defenses.0.delta: must be in (0, 1) (got 0)")])
def test_bad_parameters_name_the_key(key, value, message):
    with pytest.raises(ConfigError) as err:
        build_defenses([{**LOCAL_DP, key: value}])
    assert str(err.value) == message


def test_a_fedsgd_turn_is_refused_before_anything_runs():
    stack = build_defenses([LOCAL_DP])
    stack.validate([ClientTurn(10, 2, 3, 5)])  # FedAvg: weights in the reply
    with pytest.raises(ConfigError, match=r"^defenses\.0\.name: flwr_local_dp is a Flower mod .*FedAvg replies"):
        stack.validate([ClientTurn(10, 2, 1, 5)])


def test_it_comes_after_the_projects_own_defenses():
    assert [d.name for d in build_defenses([{"name": "prune", "p": 0.5}, LOCAL_DP]).defenses] == [
        "prune", "flwr_local_dp"]
    with pytest.raises(ConfigError, match=r"^defenses\.0\.name: flwr_local_dp is a Flower mod acting on the reply "
                                          r"after the turn; list it after prune$"):
        build_defenses([LOCAL_DP, {"name": "prune", "p": 0.5}])
