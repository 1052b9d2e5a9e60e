"""Attack workers: the default round's attack phase in the server's process, in one isolated
worker, in two parallel workers, and in two Ray actors on the federation's own Ray.

    python benchmarks/bench_attack_workers.py [key=value ...]   # same overrides as fedgraph-sim run

Runs the round four times: ``attack.workers`` 0 (in the server's process, no isolation), 1 and 2
in the pool of the server's machine, and 2 with ``attack.executor=ray`` (each actor owning one
sandboxed worker). Prints the attack phase's seconds (the strategy's own timing: from the round's
replies to its last row) and three ratios: isolation cost (1 worker / in-process), parallel
speed-up (1 worker / 2 workers) and the cost of Ray (2 Ray actors / 2 pool workers). The rows of
the runs are compared too, wall times aside (they must be identical). Noise between runs on 2 shared cores is
large: compare ratios, and repeat.
"""

from __future__ import annotations

import json
import sys
import tempfile

from fedgraph_sim.config import DEFAULT_ROUND, load_config
from fedgraph_sim.rows.store import read_rows
from fedgraph_sim.runtime.simulation import run

SETUPS = {"in process": ["attack.workers=0"], "1 worker": ["attack.workers=1"], "2 workers": ["attack.workers=2"],
          "2 Ray actors": ["attack.workers=2", "attack.executor=ray"]}


def _timing(key: str) -> bool:
    """A column that is a wall time (the call's, GRAIN's phases'), not a result."""
    return key == "seconds" or key.startswith("info_seconds")


def main(overrides: list[str]) -> None:
    seconds, rows = {}, {}
    with tempfile.TemporaryDirectory() as out:
        for name, setup in SETUPS.items():
            config = load_config(DEFAULT_ROUND, [f"output.dir={out}", *setup, *overrides])
            result = run(config)
            seconds[name] = result.timings["attacks"]
            rows[name] = [{k: v for k, v in r.items() if not _timing(k)} for r in read_rows(result.run_dir)]
            print(f"{name}: attacks {seconds[name]:.1f} s, total {result.timings['total']:.1f} s", flush=True)
    print(f"isolation cost  (1 worker / in-process)      = {seconds['1 worker'] / seconds['in process']:.2f}")
    print(f"parallel speed-up (1 worker / 2 workers)     = {seconds['1 worker'] / seconds['2 workers']:.2f}")
    print(f"cost of Ray (2 Ray actors / 2 pool workers)  = {seconds['2 Ray actors'] / seconds['2 workers']:.2f}")
    first_name, first = next(iter(rows.items()))
    same = all(json.dumps(r, sort_keys=True) == json.dumps(first, sort_keys=True) for r in rows.values())  # NaN too
    print(f"rows identical: {same} ({len(first)} rows)")
    for name, other in rows.items():
        for a, b in zip(first, other):
            differing = sorted(k for k in a.keys() | b.keys() if repr(a.get(k)) != repr(b.get(k)))
            if differing:
                print(f"  {name} vs {first_name}: {a['attack']} client {a['client']}: {', '.join(differing[:8])}"
                      f"{' ...' if len(differing) > 8 else ''}")


if __name__ == "__main__":
    main(sys.argv[1:])
