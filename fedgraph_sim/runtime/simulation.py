"""Run one federation: build the apps from a validated config and run Flower's simulation engine
(Ray, one process per client actor); replay captured federations under other attacks."""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import signal
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from fedgraph_sim.capture import CaptureStore
from fedgraph_sim.config import RunConfig, config_hash, to_yaml
from fedgraph_sim.errors import Stopped
from fedgraph_sim.local_ray import prepare_local_ray
from fedgraph_sim.provenance import provenance
from fedgraph_sim.rows.store import read_rows, seal
from fedgraph_sim.run_dirs import claim_run_dir, new_run_dir
from fedgraph_sim.runtime.session import Session, attack_pipeline
from fedgraph_sim.runtime.stopping import quiet_console, startup_checkpoint
from fedgraph_sim.utility import final_utility
from server.strategy import last_line

log = logging.getLogger("fedgraph_sim")

FLOWER_ENV = {"FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1",
              "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0",
              # Ray's driver would otherwise install absl's failure handler for SIGTERM over ours
              # (runtime.stopping) and abort the run on it, its rows unsummarised
              "RAY_DISABLE_FAILURE_SIGNAL_HANDLER": "1",
              # No task events (they feed Ray's dashboard, unused here): after a SIGTERM to the
              # process group has ended Ray's GCS, ray.shutdown() waited 5 s for their buffer
              "RAY_task_events_report_interval_ms": "0"}


@dataclass
class RunResult:
    run_dir: Path
    summary: list[dict]
    timings: dict = field(default_factory=dict)
    failed_turns: list[str] = field(default_factory=list)  # every failed client turn's reason, all rounds


def one_line(record: logging.LogRecord) -> logging.LogRecord:
    """``record``, or a copy showing only the last line of a message that spans several (Flower logs
    a failed client turn with its whole traceback, a Ray one 30 lines; the last is the error)."""
    message = record.getMessage()
    if record.exc_info and record.exc_info[1] is not None:
        message = traceback.format_exception_only(record.exc_info[1])[-1]
    elif len(message.strip().splitlines()) <= 1:
        return record
    short = copy.copy(record)
    short.msg, short.args, short.exc_info, short.exc_text = (
        f"{last_line(message)} (the traceback is in the run's log.txt)", None, None, None)
    return short


class OneLineConsole(logging.Filter):
    """On a console handler: print a multi-line record as :func:`one_line` does (Flower's console
    handler formats records itself, so a formatter cannot do it); other handlers, log.txt among
    them, still receive the whole record."""

    def __init__(self, handler: logging.Handler) -> None:
        super().__init__()
        self.handler = handler

    def filter(self, record: logging.LogRecord) -> bool:
        short = one_line(record)
        if short is record:
            return True
        with self.handler.lock:
            self.handler.emit(short)
        return False


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
            # deprecation note) goes to log.txt only; errors still reach the terminal, one line each
            if not any(isinstance(f, OneLineConsole) for f in h.filters):
                h.addFilter(OneLineConsole(h))
    return handler


def ray_init_args(config: RunConfig) -> dict:
    """``ray.init``'s arguments: a local Ray for the run, or the cluster at ``federation.ray_address``."""
    address = config.federation.ray_address
    return {"log_to_driver": False, **({"address": address} if address else {})}


def run(config: RunConfig, progress=None, session: Session | None = None,
        run_dir: Path | None = None, engine: str = "ray") -> RunResult:
    """Run one federation with the configured attacks (into ``run_dir``, default a new
    timestamped directory under ``output.dir``); returns the run directory and summary.
    ``engine``: where the ClientApps run, Ray's client actors (``"ray"``) or this process
    (``"in_process"``, for a federation that is one job of a pool:
    :mod:`fedgraph_sim.runtime.in_process_backend`); the rows are the same. A user's ClientApp
    (``federation.client_app``) always runs in this process."""
    from flwr.simulation import run_simulation

    from fedgraph_sim.runtime import ray_backend
    from fedgraph_sim.runtime.apps import make_client_app, make_server_app
    from fedgraph_sim.runtime.in_process_backend import ENGINE, ENGINES, IN_PROCESS, RAY, SECTION

    for key, value in FLOWER_ENV.items():  # before Ray is imported: it reads some at import
        os.environ.setdefault(key, value)
    if engine not in ENGINES:
        raise ValueError(f"engine: unknown '{engine}'; valid: {', '.join(ENGINES)}")
    if config.federation.client_app is not None:  # imported from its file here, which Ray's actors cannot
        engine = IN_PROCESS
    ray_backend.install()
    if engine == RAY:
        prepare_local_ray(config.federation.ray_address)  # Flower's backend calls ray.init
    start = time.time()
    session = session or Session(config, progress=progress)
    startup_checkpoint()  # a command's start-up signal, if one came, before anything is written
    run_dir = claim_run_dir(run_dir) if run_dir is not None else new_run_dir(config.output.dir, config.name)
    os.environ.setdefault("FLWR_HOME", str(run_dir.parent.resolve() / ".flwr"))
    handler = _log_to_file(run_dir)
    try:
        session.open(run_dir)
        config_json = config.model_dump_json()
        server_app = make_server_app(lambda context: session)
        if config.federation.client_app is not None:  # a user's own ClientApp
            from fedgraph_sim.runtime.client_apps import client_app_of
            client_app = client_app_of(config)
        else:
            client_app = make_client_app(lambda context: config_json)
        session.stop.callbacks += [quiet_console, ray_backend.kill_actors]
        with session.stop.on_signals():
            try:
                run_simulation(server_app=server_app, client_app=client_app,
                               num_supernodes=config.federation.num_clients,
                               # max_restarts: Ray replaces a client process that dies (its turn
                               # fails, the next turn runs in the new one); Flower does not
                               backend_config={"client_resources": {"num_cpus": config.federation.num_cpus,
                                                                    "num_gpus": 0.0, "max_restarts": -1,
                                                                    "max_task_retries": 1},
                                               "init_args": ray_init_args(config),
                                               SECTION: {ENGINE: engine}})
            except Exception:  # after a stop: RunStopped from the ServerApp thread, or an error of
                if not session.stop:  # what the stop killed, neither of them the run's
                    raise
                log.debug("after the stop request", exc_info=True)
            except SystemExit as exc:  # SIGTERM during ray.init, whose handler is sys.exit(15)
                if exc.code != signal.SIGTERM:
                    raise
                session.stop.set("SIGTERM")
            if session.stop:  # summarised once, by the handler below, as for any run that ends early
                raise Stopped(f"stopped by {session.stop.signal_name}: the rows written so far are in {run_dir}, "
                              "summarised in summary.csv")
        end = time.time()
        t = session.strategy.timings
        # The round trip (configure -> all replies) holds Ray's actor start-up in round 1, the
        # messaging, and the clients' own compute; the clients report the latter.
        timings = {"setup": (t["first_configure"] or end) - start,
                   "ray_and_messaging": t["round_trip"] - t["client_compute"],
                   "client_training": t["client_compute"], "attacks": t["attacks"],
                   "total": end - start}
        summary = session.finish()
        log.info("timings: %s", timings)
        session.check_trained()
        return RunResult(run_dir, summary, timings, [f.reason for f in session.failed_turns])
    except BaseException:
        with contextlib.suppress(Exception):
            session.finish()  # the rows written so far, summarised: nothing already written is lost
        raise
    finally:
        session.close()
        for name in ("fedgraph_sim", "flwr"):
            logging.getLogger(name).removeHandler(handler)
        handler.close()


def replay(config: RunConfig, federation_dir: Path, out_dir: Path, progress=None,
           extra_columns: dict | None = None) -> list[dict]:
    """Run ``config``'s attacks on the updates a captured federation observed; rows (with the
    federation's final test accuracy) go to ``out_dir``'s results (``results.parquet`` once done)."""
    session = Session(config, progress=progress)
    out_dir = claim_run_dir(out_dir)
    (out_dir / "config.yaml").write_text(to_yaml(config, provenance(config_hash(config))))
    columns = {**final_utility(federation_dir), **(extra_columns or {})}
    runner = attack_pipeline(config, session.attacks, session.knowledge, out_dir, progress, boundary=session.boundary,
                             audit_dir=Path(federation_dir), extra_columns=columns)
    store = CaptureStore(federation_dir)
    try:
        for round_ in store.rounds():
            runner(*store.read(round_))
    finally:
        runner.close()
    seal(out_dir)
    return read_rows(out_dir)
