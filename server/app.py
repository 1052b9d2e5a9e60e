"""The ServerApp: seed the global model, run the curious strategy for the configured rounds.

``make_server_app(config, run_dir, observer)`` builds it by closure for ``run_simulation``; the
module-level ``app`` serves ``flwr run .`` and builds the attack runner itself from the run config.
"""

from __future__ import annotations

from pathlib import Path

import torch
from flwr.app import ArrayRecord, Context
from flwr.serverapp import Grid, ServerApp

from fedgraph_sim.config import RunConfig
from fedgraph_sim.models import GraphClassifier
from server.strategy import CuriousFedAvg, Observer


def initial_arrays(config: RunConfig, num_features: int, num_classes: int) -> ArrayRecord:
    torch.manual_seed(config.seed)
    model = GraphClassifier(num_features, num_classes, **config.model.model_dump())
    return ArrayRecord(model.state_dict())


def make_strategy(config: RunConfig, observer: Observer | None) -> CuriousFedAvg:
    k = config.federation.num_clients
    return CuriousFedAvg(lr=config.train.lr, local_steps=config.train.local_steps,
                         batch_size=config.train.batch_size, observer=observer,
                         secure_aggregation=config.threat.secure_aggregation,
                         fraction_train=1.0, min_train_nodes=k, min_available_nodes=k)


def make_server_app(config: RunConfig, num_features: int, num_classes: int,
                    strategy: CuriousFedAvg, evaluate_fn=None) -> ServerApp:
    """``evaluate_fn(round, arrays)``: Flower's central evaluation (the held-out test split)."""
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        strategy.start(grid=grid, initial_arrays=initial_arrays(config, num_features, num_classes),
                       num_rounds=config.federation.rounds, evaluate_fn=evaluate_fn)

    return app


app = ServerApp()


@app.main()
def _main_from_run_config(grid: Grid, context: Context) -> None:
    from fedgraph_sim.simulation import Session, config_from_run_config

    config, run_dir = config_from_run_config(context.run_config)
    session = Session(config, Path(run_dir))
    strategy = make_strategy(config, session.observer)
    ds = session.scenario.dataset
    strategy.start(grid=grid, initial_arrays=initial_arrays(config, ds.num_features, ds.num_classes),
                   num_rounds=config.federation.rounds, evaluate_fn=session.evaluate)
    session.finish()
