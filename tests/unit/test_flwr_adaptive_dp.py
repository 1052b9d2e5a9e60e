"""Flower's central DP with adaptive clipping as ``flwr_adaptive_dp``: the clients clip to the
round's norm with Flower's ``adaptiveclipping_mod`` and report their bit; Flower's wrapper moves the
norm from the bits of the turns that trained, after the curious strategy has seen every reply."""

import math

import numpy as np
import pytest
from flwr.app import ConfigRecord
from flwr.clientapp.mod import adaptiveclipping_mod
from flwr.serverapp.strategy import DifferentialPrivacyClientSideAdaptiveClipping

from clients.defenses import build_defenses
from clients.turn import failure_reply
from fedgraph_sim.errors import ConfigError
from server.strategy import CuriousFedAvg
from tests.unit.test_reply_mods import client_reply
from tests.unit.test_strategy import FakeGrid, global_arrays, replies

pytestmark = pytest.mark.usefixtures("flower_task")
ADAPTIVE = {"name": "flwr_adaptive_dp", "noise_multiplier": 0.0, "initial_clipping_norm": 1.0,
            "clipped_count_stddev": 0.0}


def test_the_parts_are_flowers_and_bad_values_name_their_key():
    (defense,) = build_defenses([ADAPTIVE]).defenses
    assert defense.mod() is adaptiveclipping_mod
    wrapper = defense.wrap_strategy(CuriousFedAvg(lr=0.1, local_steps=2, batch_size=1), 3, seed=0)
    assert isinstance(wrapper, DifferentialPrivacyClientSideAdaptiveClipping)
    assert (wrapper.clipping_norm, wrapper.target_clipped_quantile, wrapper.clip_norm_lr) == (1.0, 0.5, 0.2)
    for key, value, message in (("initial_clipping_norm", 0, "must be a number > 0 (got 0)"),
                                ("target_clipped_quantile", 1.5, "must be in [0, 1] (got 1.5)"),
                                ("clip_norm_lr", 0, "must be a number > 0 (got 0)"),
                                ("noise_multiplier", -1, "must be a number >= 0 (got -1)")):
        with pytest.raises(ConfigError) as err:
            build_defenses([{**ADAPTIVE, key: value}])
        assert str(err.value) == f"defenses.0.{key}: {message}"


def test_the_client_clips_to_the_rounds_norm_and_reports_its_bit(tmp_path):
    msg, reply = client_reply(tmp_path, ["defenses=[{name: flwr_adaptive_dp, noise_multiplier: 0.0}]"],
                              server_config={"clipping_norm": 0.5})  # the round's norm, from the server
    sent, back = msg.content["arrays"].to_numpy_ndarrays(), reply.content["arrays"].to_numpy_ndarrays()
    delta = np.concatenate([(b - s).ravel() for b, s in zip(back, sent)]).astype(np.float64)
    assert np.linalg.norm(delta) == pytest.approx(0.5, rel=1e-4)
    assert reply.content["metrics"]["norm_bit"] == 1  # Flower's bit: the update was clipped
    for accountant in ("flower", "opacus"):  # z 0: no noise, no guarantee
        assert reply.content["metrics"][f"defense-flwr-adaptive-dp-epsilon-{accountant}"] == math.inf


def test_a_failed_turn_is_a_row_and_the_norm_moves_on_the_others_bits():
    seen, failed = [], []
    curious = CuriousFedAvg(lr=0.1, local_steps=5, batch_size=1, min_train_nodes=3, min_available_nodes=3,
                            observer=lambda updates, failures: (seen.extend(updates), failed.extend(failures)))
    (defense,) = build_defenses([ADAPTIVE]).defenses
    server = defense.wrap_strategy(curious, 3, seed=0)
    sent = list(server.configure_train(1, global_arrays(), ConfigRecord({}), FakeGrid()))
    assert all(m.content["config"]["clipping_norm"] == 1.0 for m in sent)
    trained = replies(np.random.default_rng(0))[:2]
    for reply in trained:  # both clipped, as the clients' mod reports it
        reply.content["metrics"]["norm_bit"] = 1
    arrays, _ = server.aggregate_train(1, trained + [failure_reply(sent[2], 2, "RuntimeError: empty partition")])
    assert arrays is not None and [u.client_key for u in seen] == [0, 1] and [f.client_key for f in failed] == [2]
    # the clipped fraction of the turns that trained is 1 (no count noise). Flower 1.41 then
    # shrinks the norm, C exp(-lr (1 - 0.5)): the sign Andrew et al. give the unclipped fraction
    # (the module's docstring); the failed turn is not counted
    assert server.clipping_norm == pytest.approx(1.0 * math.exp(-0.2 * (1.0 - 0.5)))


def test_flowers_own_checks_refuse_a_noise_split_before_the_run():
    stack = build_defenses([{"name": "flwr_adaptive_dp", "noise_multiplier": 0.5}])
    with pytest.raises(ConfigError, match=r"^defenses\.0: If not specified, `clipped_count_stddev` is set to "):
        stack.check_server(4)  # Flower's default count noise, 4 / 20, cannot carry z 0.5
    build_defenses([{"name": "flwr_adaptive_dp", "noise_multiplier": 0.5, "clipped_count_stddev": 1.0}]).check_server(4)
