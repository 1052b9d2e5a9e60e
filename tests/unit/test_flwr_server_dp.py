"""Flower's central DP with server-side fixed clipping as ``flwr_server_dp``: the server's Flower
wrapper clips each reply and noises the aggregate, after the curious strategy has seen every reply
as the client sent it, so the attacks get the undefended update."""

import numpy as np
import pytest
from flwr.app import Array, ArrayRecord, ConfigRecord
from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg

from clients.defenses import ClientTurn, build_defenses
from clients.defenses.accounting import client_level_epsilons
from fedgraph_sim.errors import ConfigError
from server.strategy import CuriousFedAvg
from tests.unit.test_reply_mods import client_reply
from tests.unit.test_strategy import FakeGrid, global_arrays, replies

pytestmark = pytest.mark.usefixtures("flower_task")
CLIP = 0.5


def server_dp(noise_multiplier: float = 1.0) -> dict:
    return {"name": "flwr_server_dp", "clipping_norm": CLIP, "noise_multiplier": noise_multiplier}


def test_the_part_is_flowers_it_has_no_client_half_and_bad_values_name_their_key():
    (defense,) = build_defenses([server_dp()]).defenses
    assert defense.mod() is None and not defense.reply_mod
    wrapper = defense.wrap_strategy(FedAvg(), 3, seed=0)
    assert isinstance(wrapper, DifferentialPrivacyServerSideFixedClipping)
    assert (wrapper.clipping_norm, wrapper.noise_multiplier, wrapper.num_sampled_clients) == (CLIP, 1.0, 3)
    for key, value, message in (("clipping_norm", 0, "must be a number > 0 (got 0)"),
                                ("noise_multiplier", -1, "must be a number >= 0 (got -1)")):
        with pytest.raises(ConfigError) as err:
            build_defenses([{**server_dp(), key: value}])
        assert str(err.value) == f"defenses.0.{key}: {message}"
    with pytest.raises(ConfigError, match=r"^defenses\.0\.name: flwr_server_dp is Flower's server-side clipping "
                                          r"of the replied weights .*FedAvg replies"):
        build_defenses([server_dp()]).validate([ClientTurn(10, 2, 1, 5)])
    build_defenses([server_dp()]).validate([ClientTurn(10, 2, 5, 5)])  # FedAvg: fine


def test_the_clients_rows_carry_the_released_models_epsilon_by_flower_and_by_opacus(tmp_path):
    entry = f"{{name: flwr_server_dp, clipping_norm: {CLIP}, noise_multiplier: 2.0, delta: 1.0e-6}}"
    _, reply = client_reply(tmp_path, [f"defenses=[{entry}]"], round_=4)  # both clients every round
    metrics = reply.content["metrics"]
    flower, opacus = client_level_epsilons(2.0, 2, 2, 4, 1e-6)
    assert flower == pytest.approx(opacus, rel=1e-9)  # no sampling, no amplification: the same Gaussian
    assert metrics["defense-flwr-server-dp-epsilon-flower"] == pytest.approx(flower)
    assert metrics["defense-flwr-server-dp-epsilon-opacus"] == pytest.approx(opacus)
    assert metrics["defense-flwr-server-dp-delta"] == 1e-6


def _round(noise_multiplier: float, seed: int = 0):
    seen = []
    curious = CuriousFedAvg(lr=0.1, local_steps=5, batch_size=1, min_train_nodes=3, min_available_nodes=3,
                            observer=lambda updates, failures: seen.extend(updates))
    (defense,) = build_defenses([server_dp(noise_multiplier)]).defenses
    server = defense.wrap_strategy(curious, 3, seed=seed)
    list(server.configure_train(1, global_arrays(), ConfigRecord({}), FakeGrid()))
    arrays, _ = server.aggregate_train(1, replies(np.random.default_rng(0)))
    return arrays, seen


def _clipped_mean() -> ArrayRecord:
    """FedAvg of the replies, each update clipped to ``CLIP`` against the sent weights."""
    sent = global_arrays()
    clipped = replies(np.random.default_rng(0))
    for reply in clipped:
        arrays = reply.content["arrays"]
        delta = {k: arrays[k].numpy() - sent[k].numpy() for k in arrays}
        scale = min(1.0, CLIP / np.sqrt(sum(float((d ** 2).sum()) for d in delta.values())))
        assert scale < 1  # the clip binds on every reply
        reply.content["arrays"] = ArrayRecord({k: Array(sent[k].numpy() + scale * d) for k, d in delta.items()})
    mean, _ = FedAvg(min_train_nodes=3, min_available_nodes=3).aggregate_train(1, clipped)
    return mean


def test_the_curious_server_sees_the_replies_unclipped_and_the_aggregate_is_clipped():
    arrays, seen = _round(noise_multiplier=0.0)
    assert [u.client_key for u in seen] == [0, 1, 2]
    for update, reply in zip(seen, replies(np.random.default_rng(0))):  # what the attacks get: the replies
        assert all(np.array_equal(update.returned[k], reply.content["arrays"][k].numpy()) for k in update.returned)
    expected = _clipped_mean()
    assert all(np.allclose(arrays[k].numpy(), expected[k].numpy(), atol=1e-6) for k in expected)
    plain, _ = FedAvg(min_train_nodes=3, min_available_nodes=3).aggregate_train(1, replies(np.random.default_rng(0)))
    assert not all(np.allclose(arrays[k].numpy(), plain[k].numpy()) for k in plain)  # the clip changed it


def test_the_servers_noise_is_on_the_aggregate_and_seeded_per_round():
    arrays, _ = _round(noise_multiplier=1.0)
    expected = _clipped_mean()
    noise = np.concatenate([(arrays[k].numpy() - expected[k].numpy()).ravel() for k in expected])
    assert np.abs(noise).max() > 0 and np.abs(noise).max() < 6 * 1.0 * CLIP / 3  # N(0, (z C / n)^2)
    again, _ = _round(noise_multiplier=1.0)
    assert all(np.array_equal(arrays[k].numpy(), again[k].numpy()) for k in arrays)
    other, _ = _round(noise_multiplier=1.0, seed=1)
    assert not all(np.array_equal(arrays[k].numpy(), other[k].numpy()) for k in arrays)
