"""A learning federation attacked at every round: wall time against the 10-minute aim.

    python benchmarks/bench_learning.py [--rounds 50] [key=value ...]

Runs ``experiments/configs/learning/mutag.yaml`` (10 clients, FedAvg with 10 local steps on
batches of 8, client 0 attacked every round by multi-step-aware Inverting Gradients and the two
priors) for ``--rounds`` rounds and prints the phases (Ray start and messaging, client training,
attacks and scoring) and total / 600 s. Noise between runs on 2 shared cores is large.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from fedgraph_sim.config import load_config
from fedgraph_sim.runtime.simulation import run

CONFIG = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "learning" / "mutag.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        config = load_config(CONFIG, [f"federation.rounds={args.rounds}", f"output.dir={out}", *args.overrides])
        result = run(config)
        attacked = sum(e["graphs"] for e in result.summary if e["alignment"] == "identity"
                       and e["attack"] == config.attack.names[0])
    t = result.timings
    print(f"{config.name}: {config.federation.num_clients} clients, {args.rounds} rounds, client 0 attacked every "
          f"round ({attacked} graphs scored for {config.attack.names[0]})")
    for phase in ("setup", "ray_and_messaging", "client_training", "attacks", "total"):
        print(f"  {phase:<18} {t[phase]:8.1f} s")
    print(f"  total / 600 s (the aim) = {t['total'] / 600:.2f}")


if __name__ == "__main__":
    main()
