"""The ClientApp: load the partition, train locally, write the audit record, defend, reply.

``make_client_app(config, run_dir)`` builds the app by closure (under ``run_simulation`` the Flower
run config is empty); the module-level ``app`` serves ``flwr run .`` and reads the config file and
run directory from the run config.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from clients.defenses import build_defenses
from clients.training import batch_rng, epoch_batches, fedavg_weights, fedsgd_gradient, sample_batches
from fedgraph_sim.audit import AuditRecord, AuditStore
from fedgraph_sim.config import RunConfig
from fedgraph_sim.models import GraphClassifier
from fedgraph_sim.scenario import cached_scenario


def train_reply(msg: Message, partition_id: int, config_json: str, run_dir: Path) -> Message:
    start = time.perf_counter()
    config = RunConfig.model_validate_json(config_json)
    scenario = cached_scenario(config_json)
    indices = scenario.clients[partition_id]
    if len(indices) == 0:
        raise RuntimeError(f"client {partition_id} has an empty partition")
    settings = msg.content["config"]
    round_ = int(settings["server-round"])
    lr, steps, batch_size = float(settings["lr"]), int(settings["local-steps"]), int(settings["batch-size"])

    ds = scenario.dataset
    model = GraphClassifier(ds.num_features, ds.num_classes, **config.model.model_dump())
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    if config.train.sampling == "epoch":
        chosen = epoch_batches(indices, batch_size, steps, round_, config.seed, partition_id)
    else:
        chosen = sample_batches(indices, batch_size, steps, batch_rng(config.seed, round_, partition_id))
    batches = [[ds.graphs[i] for i in b] for b in chosen]
    if steps == 1:
        update, loss = fedsgd_gradient(model, batches[0])
    else:
        update, loss = fedavg_weights(model, batches, lr)

    AuditStore(run_dir).write(AuditRecord(round_, partition_id, [g for b in batches for g in b], steps))
    noise_seed = int(np.random.SeedSequence([config.seed, round_, partition_id, 1]).generate_state(1)[0])
    defense_rng = torch.Generator().manual_seed(noise_seed)
    kind = "gradient" if steps == 1 else "weights"
    for defense in build_defenses(config.defenses):
        update = defense(update, kind, defense_rng)

    metrics = MetricRecord({"num-examples": len(batches[0]), "partition-id": partition_id,
                            "loss": loss, "train-seconds": time.perf_counter() - start})
    content = RecordDict({"arrays": ArrayRecord({k: v.contiguous() for k, v in update.items()}),
                          "metrics": metrics})
    return Message(content=content, reply_to=msg)


def make_client_app(config: RunConfig, run_dir: str | Path) -> ClientApp:
    app = ClientApp()
    config_json, run_dir = config.model_dump_json(), Path(run_dir)

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        return train_reply(msg, int(context.node_config["partition-id"]), config_json, run_dir)

    return app


app = ClientApp()


@app.train()
def _train_from_run_config(msg: Message, context: Context) -> Message:
    from fedgraph_sim.simulation import config_from_run_config

    config, run_dir = config_from_run_config(context.run_config)
    return train_reply(msg, int(context.node_config["partition-id"]), config.model_dump_json(), run_dir)
