"""Round benchmark: the default round end to end, seconds per phase and overhead ratio.

    python benchmarks/bench_round.py [key=value ...]      # same overrides as run_round.py

Prints setup, Ray start + messaging, client training and attack seconds, and the ratio of total
wall time to the time spent in client training plus attacks (1.0 would mean no overhead).
Noise between runs on 2 shared cores is large: compare ratios, not seconds.
"""

from __future__ import annotations

import sys
import tempfile


from fedgraph_sim.config import DEFAULT_ROUND, load_config
from fedgraph_sim.runtime.simulation import run


def main(overrides: list[str]) -> None:
    with tempfile.TemporaryDirectory() as out:
        config = load_config(DEFAULT_ROUND, [f"output.dir={out}", *overrides])
        result = run(config)
    t = result.timings
    work = t["client_training"] + t["attacks"]
    print(f"dataset {config.data.dataset}, {config.federation.num_clients} clients, "
          f"{config.federation.rounds} round(s), attacks {', '.join(config.attack.names)}")
    for phase in ("setup", "ray_and_messaging", "client_training", "attacks", "total"):
        print(f"  {phase:<18} {t[phase]:8.2f} s")
    print(f"  total / (client training + attacks) = {t['total'] / work:.2f}")
    per_attack = {}
    for entry in result.summary:
        if entry["alignment"] == "identity":
            per_attack[entry["attack"]] = entry["graphs"]
    print(f"  attacked graphs per attack: {per_attack}")


if __name__ == "__main__":
    main(sys.argv[1:])
