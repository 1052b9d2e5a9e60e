"""Flower's central DP with client-side fixed clipping as ``flwr_central_dp``: the clients clip
with Flower's ``fixedclipping_mod``, the server's Flower wrapper adds the noise to the aggregate
after the curious strategy has seen every clipped, noise-free reply."""

import numpy as np
import pytest
from flwr.app import ConfigRecord, Error, Message
from flwr.clientapp.mod import fixedclipping_mod
from flwr.serverapp.strategy import DifferentialPrivacyClientSideFixedClipping, FedAvg

from clients.defenses import ClientTurn, build_defenses
from clients.defenses.accounting import client_level_epsilons
from fedgraph_sim.errors import ConfigError
from server.strategy import CuriousFedAvg
from tests.unit.test_reply_mods import client_reply, delta_of
from tests.unit.test_strategy import FakeGrid, global_arrays, replies

pytestmark = pytest.mark.usefixtures("flower_task")
CENTRAL_DP = {"name": "flwr_central_dp", "clipping_norm": 0.5, "noise_multiplier": 1.0}


def test_the_parts_are_flowers_and_bad_values_name_their_key():
    (defense,) = build_defenses([CENTRAL_DP]).defenses
    assert defense.mod() is fixedclipping_mod
    wrapper = defense.wrap_strategy(FedAvg(), 3, seed=0)
    assert isinstance(wrapper, DifferentialPrivacyClientSideFixedClipping)
    assert (wrapper.clipping_norm, wrapper.noise_multiplier, wrapper.num_sampled_clients) == (0.5, 1.0, 3)
    for key, value, message in (("clipping_norm", 0, "must be a number > 0 (got 0)"),
                                ("noise_multiplier", -1, "must be a number >= 0 (got -1)")):
        with pytest.raises(ConfigError) as err:
            build_defenses([{**CENTRAL_DP, key: value}])
        assert str(err.value) == f"defenses.0.{key}: {message}"
    with pytest.raises(ConfigError, match=r"^defenses\.0\.name: flwr_central_dp is a Flower mod .*FedAvg replies"):
        build_defenses([CENTRAL_DP]).validate([ClientTurn(10, 2, 1, 5)])


def test_the_client_clips_to_the_norm_the_server_sends(tmp_path):
    delta = delta_of(tmp_path, ["defenses=[{name: flwr_central_dp, clipping_norm: 0.5, noise_multiplier: 1.0}]"],
                     server_config={"clipping_norm": 0.5})  # what Flower's server wrapper sends
    assert np.linalg.norm(delta) == pytest.approx(0.5, rel=1e-4)  # no noise at the client


def test_the_reply_carries_the_released_models_epsilon_by_flower_and_by_opacus(tmp_path):
    _, reply = client_reply(tmp_path, ["defenses=[{name: flwr_central_dp, clipping_norm: 0.5, noise_multiplier: 1.0}]",
                                       "federation.fraction_train=0.5"],  # 1 of the 2 clients a round
                            server_config={"clipping_norm": 0.5}, round_=3)
    metrics = reply.content["metrics"]
    flower, opacus = client_level_epsilons(1.0, 1, 2, 3, 1e-5)  # after round 3's release
    assert metrics["defense-flwr-central-dp-epsilon-flower"] == pytest.approx(flower)
    assert metrics["defense-flwr-central-dp-epsilon-opacus"] == pytest.approx(opacus)
    assert metrics["defense-flwr-central-dp-delta"] == 1e-5 and flower == pytest.approx(opacus, rel=5e-3)


def _round(replies_, seed=0):
    seen, failed = [], []
    curious = CuriousFedAvg(lr=0.1, local_steps=5, batch_size=1, min_train_nodes=3, min_available_nodes=3,
                            observer=lambda updates, failures: (seen.extend(updates), failed.extend(failures)))
    (defense,) = build_defenses([CENTRAL_DP]).defenses
    server = defense.wrap_strategy(curious, 3, seed=seed)
    sent = list(server.configure_train(1, global_arrays(), ConfigRecord({}), FakeGrid()))
    assert all(m.content["config"]["clipping_norm"] == 0.5 for m in sent)  # the clients' mod reads it
    arrays, _ = server.aggregate_train(1, replies_(sent))
    return arrays, seen, failed


def test_the_curious_server_sees_the_replies_before_the_servers_noise():
    arrays, seen, _ = _round(lambda sent: replies(np.random.default_rng(0)))
    assert [u.client_key for u in seen] == [0, 1, 2]
    clean = replies(np.random.default_rng(0))
    for update, reply in zip(seen, clean):  # what the attacks get: the replies themselves, no noise
        assert all(np.array_equal(update.returned[k], reply.content["arrays"][k].numpy()) for k in update.returned)
    mean, _ = FedAvg(min_train_nodes=3, min_available_nodes=3).aggregate_train(1, replies(np.random.default_rng(0)))
    noise = np.concatenate([(arrays[k].numpy() - mean[k].numpy()).ravel() for k in mean])
    assert np.abs(noise).max() > 0 and np.abs(noise).max() < 6 * 1.0 * 0.5 / 3  # N(0, (z C / n)^2)
    again, _, _ = _round(lambda sent: replies(np.random.default_rng(0)))
    assert all(np.array_equal(arrays[k].numpy(), again[k].numpy()) for k in arrays)  # seeded per round
    other, _, _ = _round(lambda sent: replies(np.random.default_rng(0)), seed=1)
    assert not all(np.array_equal(arrays[k].numpy(), other[k].numpy()) for k in arrays)


def test_a_round_flower_refuses_to_aggregate_is_still_witnessed():
    def with_a_dead_client(sent):
        ok = replies(np.random.default_rng(0))[:2]
        return ok + [Message(Error(code=1, reason="the client process died"), reply_to=sent[2])]

    arrays, seen, failed = _round(with_a_dead_client)
    assert arrays is None  # Flower's wrapper skips a round with an error reply
    assert [u.client_key for u in seen] == [0, 1] and len(failed) == 1 and "died" in failed[0].reason


def test_a_failed_turn_is_a_row_and_the_others_are_aggregated_with_the_noise():
    from clients.turn import failure_reply

    def with_an_empty_partition(sent):
        return replies(np.random.default_rng(0))[:2] + [failure_reply(sent[2], 2, "RuntimeError: empty partition")]

    arrays, seen, failed = _round(with_an_empty_partition)
    assert [u.client_key for u in seen] == [0, 1] and [f.client_key for f in failed] == [2]
    mean, _ = FedAvg(min_train_nodes=2, min_available_nodes=2).aggregate_train(
        1, replies(np.random.default_rng(0))[:2])
    assert all(not np.array_equal(arrays[k].numpy(), mean[k].numpy()) for k in mean)  # noised, not skipped
