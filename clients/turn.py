"""One client's turn inside the ClientApp: load the partition, train locally, write the audit
record, defend, reply. The app itself is built by the runtime (``fedgraph_sim.runtime.apps``)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict

from clients.defenses import ClientTurn, build_defenses
from clients.training import defended_update, per_node_gradients, round_batches
from fedgraph_sim.audit import AuditRecord, AuditStore
from fedgraph_sim.config import RunConfig
from fedgraph_sim.models import build_model
from fedgraph_sim.plugins import load_plugins
from fedgraph_sim.scenario import cached_scenario
from fedgraph_sim.threat import PER_NODE_PREFIX

DEFENSE_STATE = "defense-state"
DEFENSE_NOISE_STREAM = 1  # Flower's mods among the defenses draw from another (clients.reply_mods)
TRAIN_STREAM = 2  # a user's model's own randomness (dropout) during the turn
_first_turn_in_process = True


def replaced_process() -> bool:
    """True for the first turn in a Ray actor that replaced one that died (the simulation restarts
    a dead client process and runs the turn it was running once more, there); False otherwise."""
    global _first_turn_in_process
    first, _first_turn_in_process = _first_turn_in_process, False
    ray = sys.modules.get("ray")
    try:
        return first and bool(ray and ray.is_initialized() and
                              ray.get_runtime_context().was_current_actor_reconstructed)
    except Exception:  # outside an actor (deployment, tests)
        return False


def turn_seed(seed: int, round_: int, partition_id: int, stream: int) -> int:
    """The seed of one random stream of a client's turn."""
    return int(np.random.SeedSequence([seed, round_, partition_id, stream]).generate_state(1)[0])


def _saved_state(state: RecordDict) -> dict:
    record = state.get(DEFENSE_STATE)
    return json.loads(record["json"]) if record is not None else {}


def failure_reply(msg: Message, partition_id: int, reason: str) -> Message:
    """The reply of a turn that failed: no arrays, the partition and the reason, so the server
    records a ``client_failed`` row instead of losing the turn (``server.strategy.failed``)."""
    content = RecordDict({"metrics": MetricRecord({"partition-id": partition_id, "failed": 1, "num-examples": 0}),
                          "config": ConfigRecord({"error": reason})})
    return Message(content=content, reply_to=msg)


def turn_batches(config: RunConfig, scenario, partition_id: int, settings) -> list[list]:
    """The graphs of each local step of this turn (the server's train config ``settings``: round,
    local steps, batch size), and what the server's evaluator scores against: the turn's audit
    record, written when the server audits the round and the client. A user's model is trained
    from the turn's own torch seed, so that its dropout masks repeat run after run."""
    round_, steps, batch_size = int(settings["server-round"]), int(settings["local-steps"]), int(settings["batch-size"])
    indices = scenario.clients[partition_id]
    chosen = round_batches(config.train.sampling, indices, batch_size, steps, round_, config.seed, partition_id)
    batches = [[scenario.dataset.graphs[i] for i in b] for b in chosen]
    if bool(settings.get("audit", True)) and config.attack.selects_client(partition_id):
        trained = batches[:1] if config.train.sampling == "repeat" else batches  # the graphs behind the update
        AuditStore(Path(str(settings["run-dir"]))).write(
            AuditRecord(round_, partition_id, [g for b in trained for g in b], steps))
    if config.model.module is not None:
        torch.manual_seed(turn_seed(config.seed, round_, partition_id, TRAIN_STREAM))
    return batches


def train_reply(msg: Message, partition_id: int, config_json: str, state: RecordDict | None = None) -> Message:
    """One client's turn, or its :func:`failure_reply` if anything in it raises. ``state`` is
    the node's Flower context state, which persists across rounds (DP-SGD's accountant history
    lives there)."""
    try:
        return _turn(msg, partition_id, config_json, state)
    except Exception as exc:  # an empty partition, a failing defense, a bug: a row, not a lost turn
        return failure_reply(msg, partition_id, f"{type(exc).__name__}: {exc}".splitlines()[0])


def _turn(msg: Message, partition_id: int, config_json: str, state: RecordDict | None) -> Message:
    start = time.perf_counter()
    config = RunConfig.model_validate_json(config_json)
    load_plugins(config.plugins)  # this actor's own imports: a plugin may define a defense
    scenario = cached_scenario(config_json)
    indices = scenario.clients[partition_id]
    if len(indices) == 0:
        raise RuntimeError(f"client {partition_id} has an empty partition")
    settings = msg.content["config"]
    round_ = int(settings["server-round"])
    lr, steps, batch_size = float(settings["lr"]), int(settings["local-steps"]), int(settings["batch-size"])

    ds = scenario.dataset
    model = build_model(config.model, ds.num_features, ds.num_classes)
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    batches = turn_batches(config, scenario, partition_id, settings)

    # The leaky client's extra channel (threat.per_node_gradients), at the sent weights, undefended.
    leaked = per_node_gradients(model, batches[0][0], config.train.loss) if config.threat.per_node_gradients else {}
    state = state if state is not None else RecordDict()
    defenses = build_defenses(config.defenses, config.model.task)
    fed = config.federation
    defenses.begin(ClientTurn(len(indices), batch_size, steps, fed.rounds, config.train.sampling, round=round_,
                              sampled_clients=fed.sampled_per_round(), num_clients=fed.num_clients),
                   _saved_state(state))
    defense_rng = torch.Generator().manual_seed(turn_seed(config.seed, round_, partition_id, DEFENSE_NOISE_STREAM))
    update, loss = defended_update(model, batches, defenses, defense_rng, lr, config.train.loss)
    if defenses:
        state[DEFENSE_STATE] = ConfigRecord({"json": json.dumps(defenses.state())})

    metrics = MetricRecord({"num-examples": len(batches[0]), "partition-id": partition_id,
                            "loss": loss, "train-seconds": time.perf_counter() - start,
                            "replaced-process": int(replaced_process()),
                            **{f"defense-{k}": v for k, v in defenses.report().items()}})
    arrays = {**update, **{PER_NODE_PREFIX + k: v for k, v in leaked.items()}}
    content = RecordDict({"arrays": ArrayRecord({k: v.contiguous() for k, v in arrays.items()}),
                          "metrics": metrics})
    return Message(content=content, reply_to=msg)
