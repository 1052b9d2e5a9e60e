"""Attack workers: the default round's attack phase in the server's process, in one isolated
worker, and in two parallel workers.

    python benchmarks/bench_attack_workers.py [key=value ...]   # same overrides as fedgraph-sim run

Runs the round three times with ``attack.workers`` 0 (in the server's process, no isolation), 1
and 2, and prints the attack phase's seconds (the strategy's own timing: from the round's replies
to its last row) and two ratios: isolation cost (1 worker / in-process) and parallel speed-up
(1 worker / 2 workers). The rows of the three runs are compared too (they must be identical).
Noise between runs on 2 shared cores is large: compare ratios, and repeat.
"""

from __future__ import annotations

import sys
import tempfile

from fedgraph_sim.config import DEFAULT_ROUND, load_config
from fedgraph_sim.results import read_rows
from fedgraph_sim.runtime.simulation import run


def main(overrides: list[str]) -> None:
    seconds, rows = {}, {}
    with tempfile.TemporaryDirectory() as out:
        for workers in (0, 1, 2):
            config = load_config(DEFAULT_ROUND, [f"output.dir={out}", f"attack.workers={workers}", *overrides])
            result = run(config)
            seconds[workers] = result.timings["attacks"]
            rows[workers] = [{k: v for k, v in r.items() if k != "seconds"} for r in read_rows(result.run_dir)]
            print(f"attack.workers={workers}: attacks {seconds[workers]:.1f} s, total {result.timings['total']:.1f} s",
                  flush=True)
    print(f"isolation cost  (1 worker / in-process)  = {seconds[1] / seconds[0]:.2f}")
    print(f"parallel speed-up (1 worker / 2 workers) = {seconds[1] / seconds[2]:.2f}")
    print(f"rows identical: {rows[0] == rows[1] == rows[2]} ({len(rows[0])} rows)")


if __name__ == "__main__":
    main(sys.argv[1:])
