"""Defense-vs-attack sweeps: a spec expanded into federations and attack cells (``spec``), run
in worker processes with resume (``runner``), and :func:`sweep`, the one call that does both."""

from __future__ import annotations

from pathlib import Path

from fedgraph_sim.runtime.sweeps.runner import SweepResult, SweepRunner
from fedgraph_sim.runtime.sweeps.spec import Cell, DefenseSetting, Federation, Sweep, build_sweep, load_sweep


def sweep(spec: str | Path | dict | Sweep, out_dir: str | Path | None = None, jobs: int = 1,
          progress=None) -> SweepResult:
    """Run a sweep: a spec file, a spec mapping (paper tables looked up in the current folder) or
    an expanded :class:`Sweep`, into ``out_dir`` (default a new ``<output.dir>/<stamp>-<name>``).
    Jobs already finished in ``out_dir`` are kept, so the same call resumes an interrupted sweep.
    Everything is validated before anything is written (``ConfigError`` otherwise)."""
    from fedgraph_sim.results import new_run_dir

    if isinstance(spec, dict):
        spec = build_sweep(spec, Path("."))
    elif not isinstance(spec, Sweep):
        spec = load_sweep(spec)
    out = Path(out_dir) if out_dir is not None else new_run_dir(spec.federations[0].config.output.dir, spec.name)
    return SweepRunner(spec, out, jobs=jobs, progress=progress).run()


__all__ = ["Cell", "DefenseSetting", "Federation", "Sweep", "SweepResult", "SweepRunner",
           "build_sweep", "load_sweep", "sweep"]
