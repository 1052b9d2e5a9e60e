"""The two jobs of a sweep, run in worker processes (spawned by the runner, or Ray tasks through
:mod:`fedgraph_sim.runtime.sweeps.ray_pool`): a federation with capture on, and an attack cell
replaying one. Each writes its directory whole or not at all (:func:`_job`)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from fedgraph_sim.processes import die_with_parent

DONE = "done"  # the marker a finished job's directory holds


@contextmanager
def _output_to(log_path: Path):
    """Send this process' stdout and stderr (file descriptors, so Ray's too) to ``log_path``."""
    sys.stdout.flush(), sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a") as fh:
        os.dup2(fh.fileno(), 1), os.dup2(fh.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush(), sys.stderr.flush()
            os.dup2(saved[0], 1), os.dup2(saved[1], 2)
            os.close(saved[0]), os.close(saved[1])


@contextmanager
def _job(final: Path, start: float, **info):
    """A job's directory: written as ``<final>.partial`` (an interrupted attempt's leftovers
    removed first), renamed to ``final`` once its done marker is in."""
    partial = final.with_name(final.name + ".partial")
    for stale in (partial, final):
        if stale.exists():
            shutil.rmtree(stale)  # an interrupted job: start it over
    partial.parent.mkdir(parents=True, exist_ok=True)
    yield partial, info
    (partial / DONE).write_text(json.dumps({"seconds": time.time() - start, **info}))
    partial.rename(final)


def init_worker(parent: int) -> None:
    # Die with the runner: a killed sweep leaves no worker writing on (elsewhere than Linux a
    # worker finishes its job, whose .partial directory the next run discards).
    die_with_parent(parent)
    # One thread per worker: parallel jobs do not oversubscribe the cores, and float reductions
    # run in the same order whatever --jobs is, so rows do not depend on it.
    import torch

    torch.set_num_threads(1)


def federation_job(config_json: str, fed_dir: str, log: str) -> dict:
    """Worker: run one federation with capture on and no attacks, its ClientApps in this process
    (the pool is the sweep's parallelism) unless it runs on a Ray cluster of its own."""
    from fedgraph_sim.config import RunConfig
    from fedgraph_sim.runtime import Session, run
    from fedgraph_sim.runtime.in_process_backend import IN_PROCESS, RAY

    with _job(Path(fed_dir), time.time()) as (path, _), _output_to(Path(log)):
        config = RunConfig.model_validate_json(config_json)
        engine = RAY if config.federation.ray_address else IN_PROCESS
        run(config, session=Session(config, capture=True), run_dir=path, engine=engine)
    return {}


def cell_job(config_json: str, fed_dir: str, cell_dir: str, columns: dict, log: str) -> dict:
    """Worker: replay a finished federation's capture to one attack."""
    from fedgraph_sim.config import RunConfig
    from fedgraph_sim.runtime.simulation import replay

    with _job(Path(cell_dir), time.time()) as (path, info), _output_to(Path(log)):
        info["rows"] = len(replay(RunConfig.model_validate_json(config_json), Path(fed_dir), path,
                                  extra_columns=columns))
    return info
