"""Defense-vs-attack sweeps: a spec expanded into federations and attack cells (``spec``), run
in worker processes with resume (``runner``), and :func:`sweep`, the one call that does both."""

from __future__ import annotations

from pathlib import Path

from fedgraph_sim.processes import check_main_guard
from fedgraph_sim.run_dirs import new_run_dir
from fedgraph_sim.runtime.sweeps.runner import SpecMismatch, SweepResult, SweepRunner, check_backend
from fedgraph_sim.runtime.sweeps.spec import Cell, DefenseSetting, Federation, Sweep, build_sweep, load_sweep


def open_sweep(plan: Sweep, out_dir: str | Path | None = None, jobs: int = 1, progress=None,
               force_new: bool = False, backend: str = "local", ray_address: str | None = None) -> SweepRunner:
    """A runner holding its sweep directory (``out_dir``, default a new ``<output.dir>/<stamp>-
    <name>``): locked, with the spec stored or checked. A directory of another spec is refused
    (:class:`SpecMismatch`), or with ``force_new`` left alone for a new directory. ``backend``:
    ``local`` (``jobs`` spawned processes) or ``ray`` (tasks on the cluster at ``ray_address``)."""
    check_backend(backend, ray_address)
    how = dict(jobs=jobs, progress=progress, backend=backend, ray_address=ray_address)
    new = lambda: new_run_dir(plan.federations[0].config.output.dir, plan.name)  # noqa: E731
    runner = SweepRunner(plan, Path(out_dir) if out_dir is not None else new(), **how)
    try:
        runner.claim()
    except SpecMismatch:
        if not force_new:
            raise
        runner = SweepRunner(plan, new(), **how)
        runner.claim()
    return runner


def sweep(spec: str | Path | dict | Sweep, out_dir: str | Path | None = None, jobs: int = 1, progress=None,
          force_new: bool = False, backend: str = "local", ray_address: str | None = None) -> SweepResult:
    """Run a sweep: a spec file, a spec mapping (paper tables looked up in the current folder) or
    an expanded :class:`Sweep`, into ``out_dir`` (see :func:`open_sweep`). Jobs already finished
    there are kept, so the same call resumes an interrupted sweep. Everything is validated before
    anything is written (``ConfigError`` otherwise)."""
    if backend == "local":
        check_main_guard("fedgraph_sim.runtime.sweep()")
    if isinstance(spec, dict):
        spec = build_sweep(spec, Path("."))
    elif not isinstance(spec, Sweep):
        spec = load_sweep(spec)
    return open_sweep(spec, out_dir, jobs, progress, force_new, backend, ray_address).run()


__all__ = ["Cell", "DefenseSetting", "Federation", "SpecMismatch", "Sweep", "SweepResult", "SweepRunner",
           "build_sweep", "load_sweep", "open_sweep", "sweep"]
