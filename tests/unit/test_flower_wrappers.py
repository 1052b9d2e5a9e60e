"""Flower's clipping, guarded: an update of norm 0 is left as it is instead of ending the round
with ``ZeroDivisionError`` (Flower 1.41's own function still raises, which this file checks, so an
upgrade that fixes it shows the guard can go); every other update is clipped by Flower's code."""

import numpy as np
import pytest
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict
from flwr.supercore import differential_privacy as flower_dp

from clients.defenses import build_defenses
from clients.defenses.flower_wrappers import guard_zero_norm_clipping
from server.strategy import CuriousFedAvg
from tests.unit.test_strategy import FakeGrid, global_arrays, replies

pytestmark = pytest.mark.usefixtures("flower_task")


def test_flowers_own_clipping_divides_by_a_zero_norm():
    guard_zero_norm_clipping()
    for guarded in (flower_dp.clip_inputs_inplace, flower_dp.adaptive_clip_inputs_inplace):
        with pytest.raises(ZeroDivisionError):
            guarded.flowers([np.zeros((2, 3))], 1.0)


def test_a_zero_update_is_left_as_it_is_and_any_other_is_clipped_by_flowers_code():
    guard_zero_norm_clipping()
    guard_zero_norm_clipping()  # idempotent: one guard, not a guard of a guard
    assert flower_dp.clip_inputs_inplace.flowers.__module__ == flower_dp.__name__
    sent = [np.ones((2, 3)), np.zeros(2)]
    same = [a.copy() for a in sent]
    flower_dp.compute_clip_model_update(same, sent, 0.5)  # the reply is the sent model: norm 0
    assert all(np.array_equal(a, b) for a, b in zip(same, sent))
    assert flower_dp.compute_adaptive_clip_model_update([a.copy() for a in sent], sent, 0.5) is False  # not clipped
    update = [np.full((2, 3), 2.0), np.ones(2)]
    ours, flowers = [a.copy() for a in update], [a.copy() for a in update]
    flower_dp.clip_inputs_inplace(ours, 0.5)
    flower_dp.clip_inputs_inplace.flowers(flowers, 0.5)
    assert all(np.array_equal(a, b) for a, b in zip(ours, flowers))
    assert flower_dp.get_norm(ours) == pytest.approx(0.5)


def test_a_server_side_round_with_a_zero_update_is_aggregated():
    """The round that ended the MUTAG federation under flwr_server_dp: one client's model replies
    the weights it was sent."""
    curious = CuriousFedAvg(lr=0.1, local_steps=5, batch_size=1, min_train_nodes=3, min_available_nodes=3,
                            observer=lambda updates, failures: None)
    (defense,) = build_defenses([{"name": "flwr_server_dp", "clipping_norm": 0.5, "noise_multiplier": 0.0}]).defenses
    server = defense.wrap_strategy(curious, 3, seed=0)
    list(server.configure_train(1, global_arrays(), ConfigRecord({}), FakeGrid()))
    answers = replies(np.random.default_rng(0))
    unchanged = RecordDict({"arrays": ArrayRecord({k: Array(v.numpy()) for k, v in global_arrays().items()}),
                            "metrics": MetricRecord({"num-examples": 1, "partition-id": 0, "loss": 0.5,
                                                     "train-seconds": 0.1})})
    answers[0] = Message(unchanged, reply_to=_sent())
    arrays, _ = server.aggregate_train(1, answers)
    assert arrays is not None and all(np.isfinite(arrays[k].numpy()).all() for k in arrays)


def test_the_servers_noise_is_seeded_per_round_and_leaves_numpys_global_state():
    aggregates = []
    for global_seed in (5, 6):  # another global state before the round: the same noise
        curious = CuriousFedAvg(lr=0.1, local_steps=5, batch_size=1, min_train_nodes=3, min_available_nodes=3,
                                observer=lambda updates, failures: None)
        (defense,) = build_defenses([{"name": "flwr_server_dp", "clipping_norm": 0.5,
                                      "noise_multiplier": 1.0}]).defenses
        server = defense.wrap_strategy(curious, 3, seed=0)
        list(server.configure_train(1, global_arrays(), ConfigRecord({}), FakeGrid()))
        np.random.seed(global_seed)
        before = np.random.get_state()[1].copy()
        arrays, _ = server.aggregate_train(1, replies(np.random.default_rng(0)))
        assert np.array_equal(np.random.get_state()[1], before)
        aggregates.append(arrays)
    first, again = aggregates
    assert all(np.array_equal(first[k].numpy(), again[k].numpy()) for k in first)


def _sent() -> Message:
    return Message(RecordDict({"config": ConfigRecord({})}), dst_node_id=11, message_type="train")
