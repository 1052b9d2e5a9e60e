"""The Flower apps, one per role, each built by one factory.

``make_server_app(session_for)`` and ``make_client_app(config_for)`` take a function of the
Flower ``Context``: ``run`` passes closures over the session it built (under ``run_simulation`` the
run config is empty), while the module-level ``server_app`` and ``client_app`` serve ``flwr run .``
and read the config file from ``[tool.flwr.app.config]``; there the server opens a fresh
timestamped run directory per run, or the one ``fedgraph-sim deploy`` made (``run-dir``). Clients
learn the run directory from the server's train config (``run-dir``), where they write the audit
records.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Callable

from flwr.app import Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from clients.reply_mods import defense_mods
from clients.secaggplus_mod import secaggplus_mods
from clients.turn import train_reply
from fedgraph_sim.config import RunConfig, load_config
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.run_dirs import new_run_dir
from fedgraph_sim.runtime.session import Session
from fedgraph_sim.runtime.stopping import RunStopped, StoppableGrid
from server.secaggplus import CuriousSecAggPlus, SecAggPlusRounds
from server.strategy import initial_arrays, make_strategy


def make_server_app(session_for: Callable[[Context], Session], finish: bool = False) -> ServerApp:
    """The ServerApp: seed the global model, run the curious strategy for the configured rounds;
    ``finish`` writes the summary at the end (``run`` writes it itself, after the timings)."""
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        session = session_for(context)
        config, ds = session.config, session.scenario.dataset
        session.strategy = make_strategy(config, session.observer, session.run_dir, session.audits,
                                         session.knowledge.aux_graphs)
        grid = session.canary_client_grid(StoppableGrid(grid, session.stop))
        try:
            session.strategy.roll_call(grid)
            initial = initial_arrays(config, ds.num_features, ds.num_classes)
            if config.threat.secure_aggregation == "secaggplus":
                run_secaggplus(grid, context, session.strategy, initial, session.evaluate, config)
            else:
                # the server's halves of the defenses that have one (Flower's central-DP wrappers)
                # go around the curious strategy, which still sees every reply first
                strategy = session.defenses.wrap_strategy(session.strategy, session.replies_per_round(), config.seed)
                strategy.start(grid=grid, initial_arrays=initial, num_rounds=config.federation.rounds,
                               evaluate_fn=session.evaluate)
        except RunStopped:  # ended as a finished ServerApp ends: Flower's engine then stops at once
            pass  # (it waits 3 s for the context of a ServerApp that raised); the caller reports the stop
        if finish:
            session.finish()

    return app


def make_client_app(config_for: Callable[[Context], str]) -> ClientApp:
    """The ClientApp; ``config_for(context)`` gives the run's config JSON."""
    app = ClientApp()

    # outermost Flower's SecAgg+ when the run uses it, then the defenses that are Flower mods
    @app.train(mods=[secaggplus_mods(config_for), defense_mods(config_for)])
    def train(msg: Message, context: Context) -> Message:
        return train_reply(msg, int(context.node_config["partition-id"]), config_for(context), context.state)

    @app.query()
    def query(msg: Message, context: Context) -> Message:
        """The server's roll call: which partition this node trains."""
        partition = int(context.node_config["partition-id"])
        return Message(RecordDict({"metrics": MetricRecord({"partition-id": partition})}), reply_to=msg)

    return app


def run_secaggplus(grid: Grid, context: Context, curious, initial, evaluate_fn, config: RunConfig) -> None:
    """The rounds through Flower's SecAgg+ workflow (``server.secaggplus``), whose legacy strategy
    hands the revealed aggregate to the curious strategy's observer."""
    from flwr.server import ServerConfig
    from flwr.server.compat import LegacyContext
    from flwr.server.workflow import DefaultWorkflow

    fed = config.federation
    strategy = CuriousSecAggPlus(curious, initial, evaluate_fn, fed.sampled_per_round(),
                                 fed.min_available or fed.num_clients)
    legacy = LegacyContext(context=context, config=ServerConfig(num_rounds=fed.rounds), strategy=strategy)
    DefaultWorkflow(fit_workflow=SecAggPlusRounds(**config.threat.secaggplus.model_dump()))(grid, legacy)


def config_from_run_config(run_config: dict) -> RunConfig:
    """``flwr run .``: the config file and overrides come from ``[tool.flwr.app.config]``."""
    return load_config(run_config.get("config-file") or None, shlex.split(str(run_config.get("overrides", ""))))


def _session_from_run_config(context: Context) -> Session:
    config = config_from_run_config(context.run_config)
    run_dir = str(context.run_config.get("run-dir", ""))
    return Session(config, launched_run_dir(Path(run_dir)) if run_dir else new_run_dir(config.output.dir, config.name))


def launched_run_dir(path: Path) -> Path:
    """The run directory ``fedgraph-sim deploy`` made: empty but for its ``deployment/`` logs."""
    if not path.is_dir() or any(p.name != "deployment" for p in path.iterdir()):
        raise ConfigError(f"run-dir: {path} must be a directory holding nothing but deployment/ "
                          "(fedgraph-sim deploy makes one per run)")
    return path


server_app = make_server_app(_session_from_run_config, finish=True)
client_app = make_client_app(lambda context: config_from_run_config(context.run_config).model_dump_json())
