"""The DP audit's cost: one federation with 1000 canaries (``canaries.count``) against the 15
minutes a DP claim's check may take on 2 cores.

    python benchmarks/bench_canary_audit.py [--config experiments/configs/dp_audit/mutag_graph_canaries.yaml]

Runs ``fedgraph-sim run`` on the config (a fresh process, as a user runs it) ``--repeat`` times;
prints the median wall time, its ratio to the budget, and the audit's outcome (the quality
reached: guesses, correct, the epsilon lower bound).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGET_SECONDS = 15 * 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "experiments" / "configs" / "dp_audit" /
                                                "mutag_graph_canaries.yaml"))
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    seconds, outcome = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            start = time.monotonic()
            subprocess.run([sys.executable, "-m", "fedgraph_sim", "run", "--config", args.config,
                            f"output.dir={tmp}/{i}"], check=True, capture_output=True, text=True)
            seconds.append(time.monotonic() - start)
            (written,) = Path(tmp, str(i)).glob("*/canaries.json")
            outcome = json.loads(written.read_text())
    median = statistics.median(seconds)
    print(f"{Path(args.config).name}: {outcome['count']} {outcome['kind']} canaries, median {median:.1f} s "
          f"over {len(seconds)} run(s), {median / BUDGET_SECONDS:.2f} of the 15-minute budget")
    print(f"audit: {outcome['correct']} of {outcome['guesses']} guesses right, epsilon >= "
          f"{outcome['epsilon_lower_bound']:.2f} at delta {outcome['delta']:g} (claimed: {outcome['epsilon_claimed']})")


if __name__ == "__main__":
    main()
