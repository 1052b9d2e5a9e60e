"""The DP audit in whole federations: canaries in the clients' data, the curious server's guesses,
and the epsilon lower bound beside the defense's claim (``canaries.json``)."""

import json
import time

import pytest

from fedgraph_sim.config import load_config
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.runtime import Session
from fedgraph_sim.runtime.simulation import run

pytestmark = pytest.mark.slow
BASE = ["data.dataset=synthetic", "data.options={num_graphs: 40}", "federation.num_clients=3", "model.hidden=32",
        "attack.names=[]"]


def _audit(tmp_path, overrides):
    config = load_config(None, [*BASE, *overrides, f"output.dir={tmp_path}"])
    done = run(config, session=Session(config), run_dir=tmp_path / "run", engine="in_process")
    return json.loads((done.run_dir / "canaries.json").read_text())


def test_undefended_graph_canaries_are_all_told_apart(tmp_path):
    # one graph per FedSGD step, an epoch walk: every included canary is one round's whole update
    outcome = _audit(tmp_path, ["canaries.count=120", "train.batch_size=1", "train.sampling=epoch",
                                "federation.rounds=40"])
    assert outcome["guesses"] >= 90 and outcome["correct"] == outcome["guesses"]
    assert outcome["epsilon_lower_bound"] > 2.5 and outcome["epsilon_claimed"] is None


GRADIENT = ["canaries.count=400", "canaries.kind=gradient", "train.batch_size=1000", "federation.rounds=1"]


def test_dp_sgd_keeps_its_promise(tmp_path):
    outcome = _audit(tmp_path, [*GRADIENT, "defenses=[{name: dp_sgd, clip: 1.0, target_epsilon: 2}]"])
    assert outcome["epsilon_claimed"] == pytest.approx(2, rel=0.02)
    assert outcome["epsilon_lower_bound"] <= outcome["epsilon_claimed"] and not outcome["claim_refuted"]


def test_an_accountant_that_claims_a_tenth_is_caught(tmp_path):
    outcome = _audit(tmp_path, [*GRADIENT, "plugins=[tests.integration.understated_dp]",
                                "defenses=[{name: dp_sgd_understated, clip: 1.0, target_epsilon: 1}]"])
    assert outcome["epsilon_claimed"] == pytest.approx(1, rel=0.02)
    assert outcome["claim_refuted"] and outcome["epsilon_lower_bound"] > 1


CLIENTS = ["canaries.count=200", "canaries.kind=client", "train.local_steps=2", "train.batch_size=4",
           "federation.rounds=2"]


def test_undefended_canary_clients_show_in_the_released_models(tmp_path):
    outcome = _audit(tmp_path, CLIENTS)
    assert outcome["correct"] == outcome["guesses"] >= 150 and outcome["epsilon_lower_bound"] > 3


def test_flowers_central_dp_keeps_its_client_level_promise(tmp_path):
    central = "defenses=[{name: flwr_central_dp, clipping_norm: 1.0, noise_multiplier: 1.0}]"
    outcome = _audit(tmp_path, [*CLIENTS, central])
    assert outcome["epsilon_claimed"] > 0 and outcome["epsilon_lower_bound"] <= outcome["epsilon_claimed"]
    assert 0 < outcome["epsilon_lower_bound"] and not outcome["claim_refuted"]


def test_canary_clients_need_fedavg_replies(tmp_path):
    config = load_config(None, [*BASE, "canaries.count=10", "canaries.kind=client", f"output.dir={tmp_path}"])
    with pytest.raises(ConfigError, match="canaries.kind: client canaries reply with weights"):
        Session(config)


def test_the_audits_check_runs_a_canary_federation_for_a_dp_setting(tmp_path):
    from fedgraph_sim.runtime.dp_checks import check_claims

    tree = {"data": {"dataset": "synthetic", "options": {"num_graphs": 40}}, "federation": {"num_clients": 3},
            "model": {"hidden": 32}, "defenses": [{"name": "dp_sgd", "clip": 1.0, "noise_multiplier": 1.0}],
            "output": {"dir": str(tmp_path)}}
    (check,) = check_claims({"dp": tree}, tmp_path / "checks", deadline=time.time() + 600).values()
    assert check["kind"] == "gradient" and check["count"] == 1000 and check["epsilon_claimed"] > 0
    assert not check["claim_refuted"]
