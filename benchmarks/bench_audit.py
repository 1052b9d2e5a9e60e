"""Audit benchmark: ``fedgraph-sim audit`` of a 10-client, 50-round federation at the default
budget, its wall time against the 15 minutes it should take on 2 cores, and where the time went.

    python benchmarks/bench_audit.py [--config experiments/configs/audits/mutag_grain.yaml] [audit options]

Runs the audit as a user would (a fresh directory under a temporary folder, ``--jobs 2``) and
prints its wall time, the ratio to the 900 s budget, the seconds of each stage (the first stage:
the federation and its three attack cells; the what-if stage), the exact reconstructions it
found, and the slowest attack calls. Noise between runs on 2 shared cores is large.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

BUDGET_SECONDS = 900.0
ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "experiments" / "configs" / "audit" / "mutag_grain.yaml"))
    args, extra = parser.parse_known_args()
    from fedgraph_sim.results import read_rows

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "audit"
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "fedgraph_sim", "audit", "--config", args.config,
                               "--out", str(out), *extra], cwd=ROOT, capture_output=True, text=True)
        wall = time.monotonic() - start
        if done.returncode not in (0, 1):
            sys.exit(f"the audit failed ({done.returncode}): {done.stderr[-2000:]}")
        facts = json.loads((out / "audit.json").read_text())
        stages = {"first stage": out, "what-if stage": out / "what_if"}
        print(f"audit of {args.config}: {wall:.0f} s wall, {wall / BUDGET_SECONDS:.2f} of the "
              f"{BUDGET_SECONDS:.0f} s budget")
        for name, folder in stages.items():
            timing = folder / "timing.json"
            if timing.is_file():
                t = json.loads(timing.read_text())[-1]
                print(f"  {name:<14} {t['wall_seconds']:6.0f} s: {t['federations_run']} federation(s), "
                      f"{t['cells_run']} attack cell(s)")
        for level, entry in facts["levels"].items():
            counts = ", ".join(f"round {r}: {b['exact']}/{b['attacked']}" if b else f"round {r}: -"
                               for r, b in entry["rounds"].items())
            print(f"  exact at level {level:<7} {counts}")
        seconds: dict[str, float] = defaultdict(float)
        for row in read_rows(out):
            seconds[row["attack"]] += row.get("seconds") or 0.0
        top = sorted(seconds.items(), key=lambda kv: -kv[1])[:5]
        print("  attack seconds (first stage, summed over calls): " + ", ".join(f"{a} {s:.0f}" for a, s in top))


if __name__ == "__main__":
    main()
