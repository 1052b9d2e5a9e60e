"""The client's side of SecAgg+: Flower's mod only when the run asks for it, the legacy fit layout
translated both ways with the arrays' names, and a failed turn an error reply naming its partition.
(The protocol itself, through this mod, is tested in test_secaggplus.py.)"""

import json

import numpy as np
import pytest
import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.common import FitIns, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.compat.common import recorddict_compat as compat

from clients.secaggplus_mod import _as_fitres, _as_train_message, secaggplus_mods
from fedgraph_sim.config import load_config
from fedgraph_sim.models import GraphClassifier
from fedgraph_sim.threat import ARRAY_KEYS
from tests.unit.test_client import instruction

pytestmark = pytest.mark.usefixtures("flower_task")
CONTEXT = Context(run_id=1, node_id=1, node_config={"partition-id": 0}, state=RecordDict(), run_config={})


def test_without_secaggplus_the_mod_passes_the_message_through(tmp_path):
    config = load_config(None, ["data.dataset=synthetic", "threat.secure_aggregation=true"])
    msg = instruction(GraphClassifier(4, 2), tmp_path)
    seen = []
    reply = secaggplus_mods(lambda ctx: config.model_dump_json())(msg, CONTEXT, lambda m, c: seen.append(m) or "reply")
    assert reply == "reply" and seen == [msg]


def test_the_legacy_fit_layout_is_translated_both_ways_with_the_names():
    torch.manual_seed(0)
    state = GraphClassifier(4, 2).state_dict()
    keys = list(state)
    fitins = FitIns(ndarrays_to_parameters([state[k].numpy() for k in keys]),
                    {"server-round": 2, "lr": 0.1, ARRAY_KEYS: json.dumps(keys)})
    legacy = Message(compat.fitins_to_recorddict(fitins, True), dst_node_id=1, message_type="train")
    assert _as_train_message(legacy) == keys
    arrays, config = legacy.content["arrays"], legacy.content["config"]
    assert list(arrays) == keys and ARRAY_KEYS not in config and config["server-round"] == 2
    for k in keys:
        np.testing.assert_array_equal(arrays[k].numpy(), state[k].numpy())

    gradient = {k: np.full(state[k].shape, i, np.float32) for i, k in enumerate(reversed(keys[1:]))}  # fewer, shuffled
    reply = Message(RecordDict({"arrays": ArrayRecord({k: Array(v) for k, v in gradient.items()}),
                                "metrics": MetricRecord({"num-examples": 3, "partition-id": 0})}), reply_to=legacy)
    fitres = compat.recorddict_to_fitres(_as_fitres(reply, keys), keep_input=True)
    named = json.loads(fitres.metrics[ARRAY_KEYS])
    assert named == keys[1:] and fitres.num_examples == 3  # in the sent order
    for k, v in zip(named, parameters_to_ndarrays(fitres.parameters)):
        np.testing.assert_array_equal(v, gradient[k])


def test_a_failed_turn_is_an_error_reply_naming_its_partition(tmp_path, monkeypatch):
    """The mod's masked-vector stage calls the turn; a turn that failed raises out of Flower's mod
    and becomes Flower's error reply (the client drops out), without a traceback."""
    import clients.secaggplus_mod as module

    config = load_config(None, ["data.dataset=synthetic", "threat.secure_aggregation=secaggplus"])

    def flower_mod(msg, context, call_next):  # Flower's mod in its masked-vector stage: it calls the turn
        return call_next(msg, context)

    monkeypatch.setattr(module, "secaggplus_mod", flower_mod)
    fitins = FitIns(ndarrays_to_parameters([]), {"server-round": 1, ARRAY_KEYS: "[]"})
    msg = Message(compat.fitins_to_recorddict(fitins, True), dst_node_id=1, message_type="train")
    failed = Message(RecordDict({"metrics": MetricRecord({"partition-id": 0, "failed": 1, "num-examples": 0}),
                                 "config": ConfigRecord({"error": "RuntimeError: client 0 has an empty partition"})}),
                     reply_to=msg)
    reply = secaggplus_mods(lambda ctx: config.model_dump_json())(msg, CONTEXT, lambda m, c: failed)
    assert reply.has_error()
    assert reply.error.reason == "partition 0 failed its turn: RuntimeError: client 0 has an empty partition"
