"""The DP-SGD epsilon replay (``experiments/dp_epsilon_replay.py``): without training, it gives
what the client's accountant gives. Under ``repeat`` sampling a graph's K repeated steps are one
Gaussian at z / sqrt(K); once the shuffle comes round to it again its 2K uses are one at
z / sqrt(2K), accounted unsampled (``clients.defenses.dp_sgd``)."""

import importlib.util
import math
from pathlib import Path

import pytest

from clients.defenses.accounting import epsilon
from fedgraph_sim.config import validate_config
from fedgraph_sim.scenario import build_scenario

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "dp_epsilon_replay.py"


def replay_module():
    spec = importlib.util.spec_from_file_location("dp_epsilon_replay", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_repeated_steps_and_a_graph_coming_round_again_compose_as_the_accountant_says():
    config = validate_config({"data": {"dataset": "synthetic", "options": {"num_graphs": 24}},
                              "federation": {"num_clients": 2, "rounds": 20},
                              "train": {"batch_size": 1, "local_steps": 2, "sampling": "repeat", "lr": 0.1},
                              "defenses": [{"name": "dp_sgd", "clip": 1.0, "noise_multiplier": 1.0}]})
    scenario = build_scenario(config)
    size = len(scenario.clients[0])
    eps = replay_module().replay_client(config, scenario, 0, size + 1)
    once, twice = (epsilon([(1.0 / math.sqrt(uses), 1.0, 1)], 1e-5) for uses in (2, 4))
    assert eps[0] == pytest.approx(once) and eps[size - 1] == pytest.approx(once)  # one epoch: each graph once
    assert eps[size] == pytest.approx(twice)  # the shuffle's second epoch begins: a graph's second round


def test_a_federation_that_samples_clients_is_refused_in_one_line():
    from fedgraph_sim.errors import ConfigError

    config = validate_config({"data": {"dataset": "synthetic", "options": {"num_graphs": 24}},
                              "federation": {"num_clients": 4, "rounds": 2, "fraction_train": 0.5},
                              "defenses": [{"name": "dp_sgd", "clip": 1.0, "noise_multiplier": 1.0}]})
    with pytest.raises(ConfigError, match="federation.fraction_train"):
        replay_module().replay_client(config, build_scenario(config), 0, 1)
