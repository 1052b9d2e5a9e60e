"""The defenses that are Flower mods run on the turn's reply, through the real ClientApp: clipped
and noised as Flower's mod does, seeded per turn, and a failed turn's reply left alone."""

import numpy as np
import pytest
import torch
from flwr.app import Context, RecordDict

from fedgraph_sim.config import load_config
from fedgraph_sim.models import GraphClassifier
from fedgraph_sim.runtime.apps import make_client_app
from tests.unit.test_client import instruction

pytestmark = pytest.mark.usefixtures("flower_task")


def _local_dp(clip: float, sensitivity: float) -> str:
    return (f"defenses=[{{name: flwr_local_dp, clipping_norm: {clip}, sensitivity: {sensitivity}, "
            "epsilon: 0.5, delta: 1.0e-5}]")


def client_reply(tmp_path, overrides=(), partition=1, server_config=None, **kw):
    """The train instruction and the ClientApp's reply (a FedAvg turn of 3 steps at lr 0.5);
    ``server_config``: what a server-side wrapper adds to the train config."""
    config = load_config(None, ["data.dataset=synthetic", "federation.num_clients=2", *overrides])
    app = make_client_app(lambda context: config.model_dump_json())
    torch.manual_seed(0)
    msg = instruction(GraphClassifier(4, 2), tmp_path, steps=3, lr=0.5, **kw)
    for key, value in (server_config or {}).items():
        msg.content["config"][key] = value
    context = Context(run_id=1, node_id=1, node_config={"partition-id": partition}, state=RecordDict(),
                      run_config={})
    return msg, app(msg, context)


def delta_of(tmp_path, overrides=(), partition=1, **kw) -> np.ndarray:
    """The replied weights minus the sent ones, flat, from the ClientApp's train handler."""
    msg, reply = client_reply(tmp_path, overrides, partition, **kw)
    assert not reply.has_error() and "failed" not in reply.content["metrics"]
    sent, back = msg.content["arrays"].to_numpy_ndarrays(), reply.content["arrays"].to_numpy_ndarrays()
    return np.concatenate([(b - s).ravel() for b, s in zip(back, sent)]).astype(np.float64)


def test_the_update_is_clipped_as_flowers_mod_clips_it(tmp_path):
    plain = delta_of(tmp_path)
    assert np.linalg.norm(plain) > 0.5  # the clip below binds
    clipped = delta_of(tmp_path, [_local_dp(0.5, 0.0)])  # sensitivity 0: no noise
    assert np.linalg.norm(clipped) == pytest.approx(0.5, rel=1e-4)
    assert np.allclose(clipped, plain * 0.5 / np.linalg.norm(plain), atol=1e-6)  # same direction


def noise_of(tmp_path, clip: float, sensitivity: float, partition: int = 1) -> np.ndarray:
    """What the mod added beyond the clipped update."""
    plain = delta_of(tmp_path, partition=partition)
    clipped = plain * min(1.0, clip / np.linalg.norm(plain))
    return delta_of(tmp_path, [_local_dp(clip, sensitivity)], partition=partition) - clipped


def test_the_noise_has_the_mechanisms_scale_and_is_seeded_per_turn(tmp_path):
    noise = noise_of(tmp_path, 0.5, 0.01)
    std = 0.01 * np.sqrt(2 * np.log(1.25 / 1e-5)) / 0.5
    assert noise.std() == pytest.approx(std, rel=0.2) and abs(noise.mean()) < 4 * std / np.sqrt(noise.size)
    assert np.array_equal(noise, noise_of(tmp_path, 0.5, 0.01))  # the same turn, the same draw
    assert not np.allclose(noise, noise_of(tmp_path, 0.5, 0.01, partition=0))  # another client's, another


def test_a_failed_turns_reply_reaches_the_server_untouched(tmp_path):
    config = load_config(None, ["data.dataset=synthetic", "federation.num_clients=2", _local_dp(0.5, 1.0)])
    app = make_client_app(lambda context: config.model_dump_json())
    msg = instruction(GraphClassifier(4, 2), tmp_path, steps=3)
    del msg.content["config"]["lr"]  # the turn fails on it
    reply = app(msg, Context(run_id=1, node_id=1, node_config={"partition-id": 1}, state=RecordDict(),
                             run_config={}))
    assert not reply.has_error()
    assert reply.content["metrics"]["failed"] == 1 and "lr" in reply.content["config"]["error"]
