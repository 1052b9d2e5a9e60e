"""The threat boundary's cost: the default round's attack phase with the attack workers in the
sandbox's namespaces (``attack.boundary: namespaces``) and as plain processes (``process``).

    python benchmarks/bench_boundary.py [--repeats 3] [key=value ...]   # run's overrides

Runs the round ``--repeats`` times per boundary, alternating, and prints the attack phase's
seconds (the strategy's own timing: from the round's replies to its last row; the workers'
start-up overlaps the federation's and is in it only where it is not hidden) and the ratio of the
medians, namespaces / process. The rows of every run are compared (all fields but timings).
Noise between runs on 2 shared cores is large: read the ratio, and repeat.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile

from fedgraph_sim.config import DEFAULT_ROUND, load_config
from fedgraph_sim.rows.store import read_rows
from fedgraph_sim.runtime.simulation import run

BOUNDARIES = ("namespaces", "process")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    args, overrides = parser.parse_known_args()
    seconds: dict[str, list[float]] = {b: [] for b in BOUNDARIES}
    rows = []
    with tempfile.TemporaryDirectory() as out:
        for repeat in range(args.repeats):
            for boundary in BOUNDARIES if repeat % 2 == 0 else BOUNDARIES[::-1]:
                config = load_config(DEFAULT_ROUND, [f"output.dir={out}", f"attack.boundary={boundary}", *overrides])
                result = run(config)
                seconds[boundary].append(result.timings["attacks"])
                rows.append([{k: v for k, v in r.items() if "seconds" not in k and "time" not in k}
                             for r in read_rows(result.run_dir)])
                print(f"attack.boundary={boundary}: attacks {seconds[boundary][-1]:.1f} s, "
                      f"total {result.timings['total']:.1f} s", flush=True)
    median = {b: statistics.median(s) for b, s in seconds.items()}
    print(f"boundary cost (namespaces / process, medians of {args.repeats}) = "
          f"{median['namespaces'] / median['process']:.2f}")
    print(f"rows identical: {all(r == rows[0] for r in rows)} ({len(rows[0])} rows, {len(rows)} runs)")


if __name__ == "__main__":
    main()
