"""Composition root: build the Flower apps from a validated config and run Flower's simulation
engine (Ray, one process per client actor).

This is the one module of ``fedgraph_sim`` that imports ``clients``, ``server`` and ``attacks``
(lazily, inside functions): it wires them together; the rest of the library stays independent.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from fedgraph_sim.capture import CaptureStore
from fedgraph_sim.config import RunConfig, defense_label, load_config, to_yaml
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.results import library_versions, new_run_dir, read_rows, summarize, write_summary
from fedgraph_sim.scenario import attacker_knowledge, build_scenario
from fedgraph_sim.utility import evaluate, final_utility, with_utility, write_utility

log = logging.getLogger("fedgraph_sim")

FLOWER_ENV = {"FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1",
              "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0"}


class Session:
    """Everything the server side needs, built and validated before anything is written."""

    def __init__(self, config: RunConfig, run_dir: Path | None = None, progress=None,
                 capture: bool = False) -> None:
        import attacks  # noqa: F401  (registers the attacks)
        from attacks.base import build_attack
        from clients.defenses import ClientTurn, build_defenses

        self.config, self.progress, self.capture = config, progress, capture
        self.defenses = build_defenses(config.defenses)
        self.attacks = {name: build_attack(name.split("@")[0], config.attack.params.get(name))
                        for name in config.attack.names}
        for name in config.attack.params:
            if name not in config.attack.names:
                raise ConfigError(f"attack.params.{name}: '{name}' is not in attack.names")
        self.scenario = build_scenario(config)
        train, rounds = config.train, config.federation.rounds
        self.defenses.validate([ClientTurn(len(c), train.batch_size, train.local_steps, rounds)
                                for c in self.scenario.clients])
        self.knowledge = attacker_knowledge(config, self.scenario)
        self.run_dir = None
        self.runner = None
        self.rounds_task = None
        if run_dir is not None:
            self.open(run_dir)

    def open(self, run_dir: Path) -> None:
        from server.attack_runner import AttackRunner

        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        versions = {"versions": library_versions()}
        (self.run_dir / "config.yaml").write_text(to_yaml(self.config, versions))
        variances = {k: v for k, v in self.defenses.report().items() if "variance" in k}
        if variances:  # the effective noise (DESIGN.md: log the variance)
            log.info("defenses %s: %s", defense_label(self.config.defenses), variances)
        self.runner = AttackRunner(self.config, self.run_dir, self.knowledge, self.attacks, self.progress)
        if self.progress is not None:
            self.rounds_task = self.progress.add_task("rounds", total=self.config.federation.rounds)

    def observer(self, updates) -> None:
        if self.capture and updates:
            from server.attack_runner import is_selected

            CaptureStore(self.run_dir).write(updates[0].round,
                                             [u for u in updates if is_selected(self.config, u)])
        self.runner(updates)
        if self.rounds_task is not None:
            self.progress.advance(self.rounds_task)

    def evaluate(self, server_round: int, arrays):
        """Flower's ``evaluate_fn``: the global model on the held-out test split."""
        from flwr.app import MetricRecord

        from fedgraph_sim.models import GraphClassifier

        test = self.scenario.test
        if len(test) == 0:
            return None
        ds = self.scenario.dataset
        model = GraphClassifier(ds.num_features, ds.num_classes, **self.config.model.model_dump())
        model.load_state_dict(arrays.to_torch_state_dict())
        metrics = evaluate(model, [ds.graphs[i] for i in test], self.config.train.loss)
        write_utility(self.run_dir, server_round, metrics)
        return MetricRecord(metrics)

    def finish(self) -> list[dict]:
        summary = summarize(with_utility(read_rows(self.run_dir), final_utility(self.run_dir)))
        write_summary(self.run_dir, summary)
        return summary


@dataclass
class RunResult:
    run_dir: Path
    summary: list[dict]
    timings: dict = field(default_factory=dict)


def _log_to_file(run_dir: Path) -> logging.Handler:
    handler = logging.FileHandler(run_dir / "log.txt")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    for name in ("fedgraph_sim", "flwr"):
        logging.getLogger(name).addHandler(handler)
    flwr_logger = logging.getLogger("flwr")
    flwr_logger.propagate = False
    for h in flwr_logger.handlers:
        if h is not handler:
            h.setLevel(logging.ERROR)  # Flower's console chatter (and its run_simulation
            # deprecation note) goes to log.txt only; errors still reach the terminal
    return handler


def run(config: RunConfig, progress=None, session: Session | None = None,
        run_dir: Path | None = None) -> RunResult:
    """Run one federation with the configured attacks (into ``run_dir``, default a new
    timestamped directory under ``output.dir``); returns the run directory and summary."""
    from flwr.simulation import run_simulation

    from clients.app import make_client_app
    from server.app import make_server_app, make_strategy

    for key, value in FLOWER_ENV.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault("FLWR_HOME", str(Path(config.output.dir).resolve() / ".flwr"))
    start = time.time()
    session = session or Session(config, progress=progress)
    run_dir = Path(run_dir) if run_dir is not None else new_run_dir(config.output.dir, config.name)
    run_dir.mkdir(parents=True, exist_ok=True)
    handler = _log_to_file(run_dir)
    try:
        session.open(run_dir)
        strategy = make_strategy(config, session.observer)
        ds = session.scenario.dataset
        server_app = make_server_app(config, ds.num_features, ds.num_classes, strategy, session.evaluate)
        client_app = make_client_app(config, run_dir)
        run_simulation(server_app=server_app, client_app=client_app,
                       num_supernodes=config.federation.num_clients,
                       backend_config={"client_resources": {"num_cpus": config.federation.num_cpus,
                                                            "num_gpus": 0.0},
                                       "init_args": {"log_to_driver": False}})
        end = time.time()
        t = strategy.timings
        # The round trip (configure -> all replies) holds Ray's actor start-up in round 1, the
        # messaging, and the clients' own compute; the clients report the latter.
        timings = {"setup": (t["first_configure"] or end) - start,
                   "ray_and_messaging": t["round_trip"] - t["client_compute"],
                   "client_training": t["client_compute"], "attacks": t["attacks"],
                   "total": end - start}
        summary = session.finish()
        log.info("timings: %s", timings)
        return RunResult(run_dir, summary, timings)
    finally:
        for name in ("fedgraph_sim", "flwr"):
            logging.getLogger(name).removeHandler(handler)
        handler.close()


def replay(config: RunConfig, federation_dir: Path, out_dir: Path, progress=None,
           extra_columns: dict | None = None) -> list[dict]:
    """Run ``config``'s attacks on the updates a captured federation observed; rows (with the
    federation's final test accuracy) go to ``out_dir/results.jsonl``."""
    from server.attack_runner import AttackRunner

    session = Session(config, progress=progress)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.yaml").write_text(to_yaml(config, {"versions": library_versions()}))
    columns = {**final_utility(federation_dir), **(extra_columns or {})}
    runner = AttackRunner(config, out_dir, session.knowledge, session.attacks, progress,
                          audit_dir=federation_dir, extra_columns=columns)
    store = CaptureStore(federation_dir)
    for round_ in store.rounds():
        runner(store.read(round_))
    return read_rows(out_dir)


def config_from_run_config(run_config: dict) -> tuple[RunConfig, Path]:
    """``flwr run .``: the config file and run directory come from ``[tool.flwr.app.config]``."""
    config = load_config(run_config.get("config-file") or None,
                         [o for o in str(run_config.get("overrides", "")).split() if o])
    run_dir = Path(str(run_config.get("run-dir") or Path(config.output.dir) / "flwr-app"))
    return config, run_dir
