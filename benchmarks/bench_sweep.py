"""Sweep throughput: wall time, cells per minute, and how well the worker processes overlap.

    python benchmarks/bench_sweep.py [--jobs 2] [CONFIG ...]     # run the sweeps, then report
    python benchmarks/bench_sweep.py --from SWEEP_DIR [...]      # report on finished sweeps

Default configs: the GraphDLG Table 9 and Fig. 4 reproductions. Prints, per sweep, the wall time,
federations and attack cells per minute, the mean seconds of a federation and of a cell, and
``parallel efficiency = (sum of job seconds) / (wall time x jobs)`` (1.0 = the workers never idle).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

DEFAULT = ["experiments/configs/reproduce/graphdlg_table9.yaml", "experiments/configs/reproduce/graphdlg_fig4.yaml"]


def job_seconds(folder: Path) -> list[float]:
    return [json.loads(p.read_text())["seconds"] for p in folder.glob("*/done")]


def report(sweep_dir: Path) -> float:
    timing = json.loads((sweep_dir / "timing.json").read_text())[-1]
    feds, cells = job_seconds(sweep_dir / "federations"), job_seconds(sweep_dir / "cells")
    wall, jobs = timing["wall_seconds"], timing["jobs"]
    print(f"{sweep_dir.name}: wall {wall:.0f} s with {jobs} job(s); {len(feds)} federations "
          f"(mean {sum(feds) / max(len(feds), 1):.1f} s), {len(cells)} attack cells "
          f"(mean {sum(cells) / max(len(cells), 1):.1f} s); {timing['cells_per_minute']:.2f} cells/min; "
          f"parallel efficiency {(sum(feds) + sum(cells)) / (wall * jobs):.2f}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("configs", nargs="*", default=DEFAULT)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--from", dest="existing", nargs="+", default=None, help="finished sweep directories")
    args = parser.parse_args()
    if args.existing:
        dirs = [Path(d) for d in args.existing]
    else:
        from fedgraph_sim.runtime.sweeps import SweepRunner, load_sweep

        base = Path(tempfile.mkdtemp(prefix="bench_sweep_"))
        dirs = []
        for config in args.configs:
            sweep = load_sweep(ROOT / config)
            dirs.append(base / sweep.name)
            SweepRunner(sweep, dirs[-1], jobs=args.jobs).run()
    total = sum(report(d) for d in dirs)
    print(f"total wall time {total:.0f} s ({total / 60:.1f} min)")


if __name__ == "__main__":
    main()
