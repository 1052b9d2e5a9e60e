"""Audit benchmark: ``fedgraph-sim audit`` of a 10-client, 50-round federation at the default
budget, its wall time against the 30 minutes it may take on 2 cores, where the time went, and
whether its claims were decided in that time.

    python benchmarks/bench_audit.py [--config experiments/configs/audits/mutag_grain.yaml] [audit options]

Runs the audit as a user would (a fresh directory under a temporary folder, ``--jobs 2``) and
prints its wall time, the ratio to the 1800 s budget, each stage's seconds and jobs (the first
stage: the federation and its attack cells; the what-if stage: its federations and units; the DP
checks' seconds and bounds), the exact reconstructions per level, the federation as configured's
leak and the cheapest stop with their counts and test, the stop's accuracy cost with its interval
over seeds, and the slowest attacks. ``--keep DIR`` keeps the audit directory. Noise between runs
on 2 shared cores is large.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

BUDGET_SECONDS = 1800.0
ROOT = Path(__file__).resolve().parents[1]


def _timing(folder: Path) -> str:
    path = folder / "timing.json"
    if not path.is_file():
        return "not run"
    entries = json.loads(path.read_text())
    wall = sum(e["wall_seconds"] for e in entries)
    return (f"{wall:6.0f} s over {len(entries)} pass(es): {sum(e['federations_run'] for e in entries)} "
            f"federation(s), {sum(e['cells_run'] for e in entries)} attack cell(s)")


def _dp_checks(folder: Path) -> str:
    """The DP checks' canary federations: how many, their seconds (config written to
    ``canaries.json``), and each bound beside its claim."""
    runs = sorted((folder / "dp_checks").glob("*/canaries.json"))
    if not runs:
        return "not run"
    seconds = sum(p.stat().st_mtime - (p.parent / "config.yaml").stat().st_mtime for p in runs)
    bounds = "; ".join(f"{o['epsilon_lower_bound']:.2f} against {o['epsilon_claimed']:.3g}"
                       for o in (json.loads(p.read_text()) for p in runs))
    return f"{seconds:6.0f} s over {len(runs)} canary federation(s): {bounds}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "experiments" / "configs" / "audits" / "mutag_grain.yaml"))
    parser.add_argument("--keep", default=None, help="copy the audit directory here")
    args, extra = parser.parse_known_args()
    from fedgraph_sim.report.audit_facts import describe, price
    from fedgraph_sim.rows.store import read_rows

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "audit"
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "fedgraph_sim", "audit", "--config", args.config,
                               "--out", str(out), *extra], cwd=ROOT, capture_output=True, text=True)
        wall = time.monotonic() - start
        if done.returncode not in (0, 1):
            sys.exit(f"the audit failed ({done.returncode}): {done.stderr[-2000:]}")
        if args.keep:
            shutil.copytree(out, args.keep, dirs_exist_ok=True)
        facts = json.loads((out / "audit.json").read_text())
        print(f"audit of {args.config}: {wall:.0f} s wall, {wall / BUDGET_SECONDS:.2f} of the "
              f"{BUDGET_SECONDS:.0f} s budget; {facts.get('unfinished', 0)} job(s) left unfinished")
        print(f"  first stage    {_timing(out)}")
        print(f"  what-if stage  {_timing(out / 'what_if')}")
        print(f"  DP checks      {_dp_checks(out)}")
        for level, entry in facts["levels"].items():
            counts = ", ".join(f"round {r}: {c['outcome']}" + (f" {c['exact']}/{c['attacked']}" if "exact" in c else "")
                               for r, c in entry["rounds"].items())
            print(f"  level {level:<7} {counts}")
        if facts["what_if"]:
            own = facts["what_if"][0]
            print(f"  as configured: {describe(own['best'])}")
            for setting in facts["what_if"][1:]:
                print(f"  {setting['setting']:<18} {setting['stop'] or '-':<14} {describe(setting['best'])}")
            stop = facts["cheapest_stop"]
            if stop:
                print(f"  cheapest stop: {stop['setting']}, p = {stop['stop_p']:.2g}, against "
                      f"{describe(stop['against'])}; {price(stop['accuracy_cost'])}")
            else:
                print(f"  cheapest stop: none decided ({facts.get('what_if_note') or 'see the table above'})")
        seconds: dict[str, float] = defaultdict(float)
        for row in read_rows(out) + (read_rows(out / "what_if") if (out / "what_if").is_dir() else []):
            seconds[row["attack"]] += row.get("seconds") or 0.0
        top = sorted(seconds.items(), key=lambda kv: -kv[1])[:5]
        print("  attack seconds (summed over calls): " + ", ".join(f"{a} {s:.0f}" for a, s in top))


if __name__ == "__main__":
    main()
