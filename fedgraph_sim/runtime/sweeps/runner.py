"""Run a sweep: federations (capture), then attack cells (replay), in worker processes.

Layout of a sweep directory::

    sweep.yaml                      the spec, as given (``--resume`` reads it back)
    reference.yaml                  the paper's table, when the spec names one
    .lock                           held by the runner at work (its PID inside)
    federations/<id>/               a run directory with capture/, audit/, utility.parquet, done
    cells/<id>/                     results.parquet and done for one (federation, attack)
    logs/<id>.log                   each job's worker output (Ray, Flower)
    results.parquet, summary.csv    every cell's rows in cell order, and their summary
    timing.json                     one entry per invocation (wall time, cells per minute, the commit)

A job writes into ``<id>.partial`` and renames it to ``<id>`` once its ``done`` marker is written,
so a job directory is whole or absent: a sweep killed at any point and resumed reruns exactly the
unfinished jobs and yields the same rows as an uninterrupted one (attack seeds derive from the
config, never from time or order). One runner at a time holds a sweep directory (a lock; a second
one is refused with the holder's PID), a directory holding another spec is refused with the keys
that differ, and workers die with the runner (no orphans appending to cells after a kill). Workers
are spawned processes, or with ``backend="ray"`` Ray tasks on a cluster
(:mod:`fedgraph_sim.runtime.sweeps.ray_pool`); the terminal shows one progress display for the
whole sweep.
"""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from fedgraph_sim.errors import ConfigError
from fedgraph_sim.processes import kill_descendants
from fedgraph_sim.provenance import project_version
from fedgraph_sim.rows.statistics import summarize
from fedgraph_sim.rows.store import read_rows, write_rows
from fedgraph_sim.rows.summary_csv import write_summary
from fedgraph_sim.runtime.sweeps.jobs import DONE, cell_job, federation_job, init_worker
from fedgraph_sim.runtime.sweeps.spec import Cell, Federation, Sweep, spec_differences
from fedgraph_sim.yaml_files import read_yaml

WAKE_SECONDS = 0.5  # how long the runner waits on its jobs before it checks for a signal
BACKENDS = ("local", "ray")  # a pool of spawned processes | Ray tasks (runtime.sweeps.ray_pool)


def check_backend(backend: str, ray_address: str | None) -> None:
    """``--backend`` and ``--ray-address``, before anything is written."""
    if backend not in BACKENDS:
        raise ConfigError(f"--backend: unknown '{backend}'; valid: {', '.join(BACKENDS)}")
    if ray_address and backend != "ray":
        raise ConfigError("--ray-address: only with --backend ray")
REFERENCE = "reference.yaml"  # the paper table the report sets beside ours


class SpecMismatch(ConfigError):
    """The sweep directory holds a sweep of another spec."""


@dataclass
class SweepResult:
    sweep_dir: Path
    summary: list[dict]
    failures: list[str] = field(default_factory=list)
    timing: dict = field(default_factory=dict)
    out_of_time: int = 0  # jobs not finished when the deadline passed (``run(deadline=...)``)


class SweepRunner:
    def __init__(self, sweep: Sweep, sweep_dir: Path, jobs: int = 1, progress=None, backend: str = "local",
                 ray_address: str | None = None) -> None:
        self.sweep, self.dir, self.jobs, self.progress = sweep, Path(sweep_dir), jobs, progress
        self.backend, self.ray_address = backend, ray_address

    def fed_dir(self, fed: Federation) -> Path:
        return self.dir / "federations" / fed.id

    def cell_dir(self, cell: Cell) -> Path:
        return self.dir / "cells" / cell.id

    def log_of(self, job_id: str) -> str:
        return str(self.dir / "logs" / f"{job_id}.log")

    def _done(self, path: Path) -> bool:
        return (path / DONE).is_file()

    def claim(self) -> None:
        """Take the sweep directory: create it, lock it against a second runner, and store the
        spec, or check that the one stored there is this spec. Raises ConfigError otherwise."""
        if getattr(self, "_lock", None) is not None:
            return
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            lock = open(self.dir / ".lock", "a+")
        except OSError as exc:
            raise ConfigError(f"--out: cannot use {self.dir} as a sweep directory ({exc.strerror})") from None
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.seek(0)
            holder = lock.read().strip() or "?"
            lock.close()
            raise ConfigError(f"{self.dir}: another sweep runner (PID {holder}) is working in this directory; "
                              "wait for it to finish or stop it") from None
        self._lock = lock
        spec = {k: v for k, v in self.sweep.spec.items() if k != "reference"}
        spec_file = self.dir / "sweep.yaml"
        if spec_file.exists():
            try:
                stored = read_yaml(spec_file, "--out")
            except ConfigError:  # unreadable: it differs from this spec, which the check says
                stored = None
            differences = spec_differences(stored, spec)
            if differences:
                self.release()
                raise SpecMismatch(f"{self.dir} holds a sweep of another spec (differs in {', '.join(differences)}); "
                                  "give a new --out, or --force-new for a new directory")
        else:  # the paper table is stored beside it, so resuming needs no lookup
            spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))
            if self.sweep.reference:
                (self.dir / REFERENCE).write_text(yaml.safe_dump(self.sweep.reference, sort_keys=False))
        lock.seek(0), lock.truncate(), lock.write(str(os.getpid())), lock.flush()  # only once it is ours to run

    def release(self) -> None:
        lock, self._lock = getattr(self, "_lock", None), None
        if lock is not None:
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()

    def run(self, deadline: float | None = None) -> SweepResult:
        """Run every unfinished job. ``deadline`` (a ``time.time()``): jobs still queued or running
        then are stopped as an interrupt stops them (``--resume`` runs them), and counted."""
        self.claim()
        try:
            return self._run(deadline)
        finally:
            self.release()

    def _stop_jobs(self, pool) -> None:
        """Cancel the queued jobs and kill the running ones with everything they started (their
        directories lack a done marker, so a resume reruns them)."""
        pool.shutdown(wait=False, cancel_futures=True)
        if isinstance(pool, ProcessPoolExecutor):
            kill_descendants()

    def _run(self, deadline: float | None) -> SweepResult:
        feds = [f for f in self.sweep.federations if not self._done(self.fed_dir(f))]
        cells = [c for c in self.sweep.cells if not self._done(self.cell_dir(c))]
        self._counts = {"federation": len(self.sweep.federations) - len(feds),
                        "cell": len(self.sweep.cells) - len(cells)}
        self._overall = None
        if self.progress is not None:
            total = len(self.sweep.federations) + len(self.sweep.cells)
            self._overall = self.progress.add_task("", total=total, completed=sum(self._counts.values()))
            self._describe()
        start, failures, ran = time.time(), [], {"federation": 0, "cell": 0}
        pool = self._pool()
        running: dict[Future, tuple[str, object]] = {}

        def submit_cells(ready) -> None:  # in the sweep's order: a planner may put the long ones first
            for cell in ready:
                fed = cell.federation
                columns = {"sweep": self.sweep.name, "cell": cell.id, **fed.columns(), **cell.columns}
                job = pool.submit(cell_job, cell.config.model_dump_json(), str(self.fed_dir(fed)),
                                  str(self.cell_dir(cell)), columns, self.log_of(cell.id))
                running[job] = ("cell", cell)

        try:
            pending = {f.id for f in feds}
            for fed in self.sweep.federations:
                if fed.id in pending:
                    job = pool.submit(federation_job, self._federation_config(fed, pool), str(self.fed_dir(fed)),
                                      self.log_of(fed.id))
                    running[job] = ("federation", fed)
            submit_cells([c for c in cells if c.federation.id not in pending])
            while running:
                if deadline is not None and time.time() >= deadline:
                    self._stop_jobs(pool)
                    late = (sum(not self._done(self.fed_dir(f)) for f in feds)
                            + sum(not self._done(self.cell_dir(c)) for c in cells))
                    return SweepResult(self.dir, self.merge(), failures, {}, out_of_time=late)
                # Wake up now and then: a Ctrl-C or SIGTERM the kernel hands to another of this
                # process's threads only runs its handler once the main thread runs Python again,
                # and a wait without a timeout would hold it until some job finishes.
                finished, _ = wait(running, timeout=WAKE_SECONDS, return_when=FIRST_COMPLETED)
                for job in finished:
                    kind, item = running.pop(job)
                    try:
                        job.result()
                    except Exception as exc:  # one failed job must not stop the sweep
                        failures.append(f"{kind} {item.id}: {type(exc).__name__}: {exc}".splitlines()[0])
                        if kind == "federation":
                            n = sum(c.federation is item for c in cells)
                            failures.append(f"  its {n} attack cell(s) were not run")
                            self._advance("cell", n)
                    else:
                        ran[kind] += 1
                        if kind == "federation":
                            submit_cells([c for c in cells if c.federation is item])
                    self._advance(kind, 1)
        except KeyboardInterrupt:
            self._stop_jobs(pool)  # stop now
            raise
        pool.shutdown()
        timing = self._timing(time.time() - start, ran["federation"], ran["cell"])
        return SweepResult(self.dir, self.merge(), failures, timing)

    def _pool(self):
        """Where the jobs run: ``--jobs`` spawned processes, or Ray tasks on a cluster."""
        if self.backend == "ray":
            from fedgraph_sim.runtime.sweeps.ray_pool import RayPool

            return RayPool(self.ray_address)
        context = multiprocessing.get_context("spawn")  # fresh interpreters: Ray and torch threads
        return ProcessPoolExecutor(max_workers=self.jobs, mp_context=context, initializer=init_worker,
                                   initargs=(os.getpid(),))

    def _federation_config(self, fed: Federation, pool) -> str:
        """The federation's config; on the Ray backend its Flower actors join the sweep's cluster."""
        config = fed.config
        if self.backend == "ray" and config.federation.ray_address is None:
            config = config.model_copy(update={"federation": config.federation.model_copy(
                update={"ray_address": pool.address})})
        return config.model_dump_json()

    def _advance(self, kind: str, n: int) -> None:
        self._counts[kind] += n
        if self._overall is not None:
            self.progress.advance(self._overall, n)
            self._describe()

    def _describe(self) -> None:
        self.progress.update(self._overall, description=(
            f"sweep {self.sweep.name}: {self._counts['federation']}/{len(self.sweep.federations)} "
            f"federations, {self._counts['cell']}/{len(self.sweep.cells)} attack cells"))

    def merge(self) -> list[dict]:
        """Every finished cell's rows, in cell order, into one table and its summary."""
        rows = []
        for cell in self.sweep.cells:
            if self._done(self.cell_dir(cell)):
                rows.extend(read_rows(self.cell_dir(cell)))
        write_rows(self.dir, rows)
        summary = summarize(rows)
        write_summary(self.dir, summary)
        return summary

    def _timing(self, wall: float, feds: int, cells: int) -> dict:
        entry = {"finished": time.strftime("%Y-%m-%d %H:%M:%S"), "project": project_version(),
                 "backend": self.backend, "jobs": self.jobs,
                 "wall_seconds": wall,
                 "federations_run": feds, "cells_run": cells,
                 "cells_per_minute": cells / (wall / 60) if wall > 0 else float("nan")}
        path = self.dir / "timing.json"
        history = json.loads(path.read_text()) if path.is_file() else []
        path.write_text(json.dumps(history + [entry], indent=2))
        return entry
