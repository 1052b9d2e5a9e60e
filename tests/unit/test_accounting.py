"""The RDP accounting of the central-DP defenses: Flower's ``RdpAccountant`` and Opacus'
``RDPAccountant`` on the same DP-FedAvg rounds, and the epsilon columns the defenses report."""

import math

import pytest

from clients.defenses import ClientTurn, build_defenses, dp_sgd
from clients.defenses.accounting import client_level_epsilons, epsilon, flower_epsilon
from fedgraph_sim.errors import ConfigError

pytestmark = pytest.mark.filterwarnings("ignore:Optimal order is the largest alpha")


@pytest.mark.parametrize("z, sampled, population, rounds", [
    (1.0, 10, 100, 10), (1.1, 1, 100, 100), (2.0, 10, 1000, 1000), (0.8, 5, 50, 50)])
def test_flower_and_opacus_agree_under_poisson_sampling(z, sampled, population, rounds):
    # measured: relative gaps 9e-5, 6e-9, 4e-14 and 2.5e-3 (epsilons 3.44, 0.956, 0.686, 9.26);
    # the libraries' series at fractional orders differ, so 0.5% is the stated tolerance
    flower, opacus = client_level_epsilons(z, sampled, population, rounds, 1e-5)
    assert opacus == pytest.approx(epsilon([(z, sampled / population, rounds)], 1e-5))
    assert flower == pytest.approx(opacus, rel=5e-3)


@pytest.mark.parametrize("z, clients, rounds", [(1.0, 4, 1), (1.0, 4, 100), (2.0, 4, 10), (5.0, 10, 3)])
def test_every_client_every_round_is_the_unamplified_gaussian_in_both(z, clients, rounds):
    flower, opacus = client_level_epsilons(z, clients, clients, rounds, 1e-5)
    assert flower == pytest.approx(opacus, rel=1e-9)
    assert opacus == pytest.approx(epsilon([(z, 1.0, rounds)], 1e-5), rel=1e-12)


def test_epsilon_grows_with_the_rounds_and_falls_with_the_noise():
    by_rounds = [client_level_epsilons(1.0, 2, 20, t, 1e-5) for t in (1, 5, 25)]
    by_noise = [client_level_epsilons(z, 2, 20, 5, 1e-5) for z in (0.7, 1.0, 2.0)]
    for accountant in (0, 1):
        assert by_rounds[0][accountant] < by_rounds[1][accountant] < by_rounds[2][accountant]
        assert by_noise[0][accountant] > by_noise[1][accountant] > by_noise[2][accountant]
    assert client_level_epsilons(1.0, 2, 20, 5, 1e-5)[0] < client_level_epsilons(1.0, 2, 20, 5, 1e-6)[0]


def test_the_edges_and_bad_counts():
    assert client_level_epsilons(1.0, 2, 4, 0, 1e-5) == (0.0, 0.0)  # nothing released yet
    assert client_level_epsilons(0.0, 2, 4, 3, 1e-5) == (math.inf, math.inf)  # no noise
    with pytest.raises(ConfigError) as err:
        client_level_epsilons(1.0, 5, 4, 3, 1e-5)
    assert str(err.value) == ("federation: 5 clients sampled per round out of 4: need 1 <= sampled <= clients")
    with pytest.raises(ConfigError, match=r"^sampling: unknown value 'shuffle'; valid: poisson, without_replacement$"):
        flower_epsilon(1.0, 2, 4, 3, 1e-5, sampling="shuffle")


def test_without_replacement_is_the_replace_one_relation_at_half_the_noise_multiplier():
    # with every client sampled, replace-one is the Gaussian at sensitivity 2C: z / 2 against C
    assert flower_epsilon(1.0, 4, 4, 10, 1e-5, "without_replacement") == pytest.approx(
        flower_epsilon(0.5, 4, 4, 10, 1e-5), rel=1e-9)
    assert flower_epsilon(1.0, 10, 100, 10, 1e-5, "without_replacement") > flower_epsilon(1.0, 10, 100, 10, 1e-5)


def test_dp_sgd_accounts_with_the_same_opacus_function():
    assert dp_sgd.epsilon is epsilon


@pytest.mark.parametrize("entry, prefix", [
    ({"name": "flwr_central_dp", "clipping_norm": 1.0, "noise_multiplier": 1.1}, "flwr-central-dp"),
    ({"name": "flwr_server_dp", "clipping_norm": 1.0, "noise_multiplier": 1.1, "delta": 1e-4}, "flwr-server-dp"),
    ({"name": "flwr_adaptive_dp", "noise_multiplier": 1.1, "clipped_count_stddev": 1.0}, "flwr-adaptive-dp")])
def test_the_defenses_report_both_epsilons_after_the_turns_round(entry, prefix):
    stack = build_defenses([entry])
    assert not any("epsilon" in k for k in stack.report())  # no turn yet: nothing released
    stack.begin(ClientTurn(10, 2, 5, 20, round=7, sampled_clients=3, num_clients=30), {})
    report = stack.report()
    delta = entry.get("delta", 1e-5)
    flower, opacus = client_level_epsilons(1.1, 3, 30, 7, delta)
    assert report[f"{prefix}-epsilon-flower"] == flower and report[f"{prefix}-epsilon-opacus"] == opacus
    assert report[f"{prefix}-delta"] == delta and 0 < flower < math.inf


def test_a_bad_delta_is_one_line():
    with pytest.raises(ConfigError) as err:
        build_defenses([{"name": "flwr_central_dp", "clipping_norm": 1.0, "noise_multiplier": 1.0, "delta": 1}])
    assert str(err.value) == "defenses.0.delta: must be in (0, 1) (got 1)"
