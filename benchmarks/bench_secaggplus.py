"""SecAgg+ benchmark: a round through Flower's SecAgg+ against a plain round and the strategy's
simulated sum, per number of clients.

    python benchmarks/bench_secaggplus.py [--clients 4 10] [--rounds 6] [key=value ...]

Each setting runs a federation of 1 round and one of ``--rounds`` rounds (synthetic data, no
attacks); a round's seconds are the difference of their round trips (configure to aggregate, all
replies in) over the extra rounds, so Ray's start and the client actors' first imports (round 1)
cancel. Prints seconds per round and the ratio to the plain round. Noise between runs on 2 shared
cores is large: compare ratios, not seconds.
"""

from __future__ import annotations

import argparse
import tempfile

from fedgraph_sim.config import load_config
from fedgraph_sim.runtime.simulation import run

MODES = {"plain": "false", "simulated sum": "true", "SecAgg+": "secaggplus"}


def round_trip(clients: int, rounds: int, secure_aggregation: str, overrides: list[str]) -> float:
    with tempfile.TemporaryDirectory() as out:
        config = load_config(None, ["data.dataset=synthetic", f"federation.num_clients={clients}",
                                    f"federation.rounds={rounds}", "attack.names=[]", "partition.min_partition_size=2",
                                    f"threat.secure_aggregation={secure_aggregation}", f"output.dir={out}", *overrides])
        t = run(config).timings
    return t["ray_and_messaging"] + t["client_training"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[4, 10])
    parser.add_argument("--rounds", type=int, default=6)
    args, overrides = parser.parse_known_args()
    for clients in args.clients:
        per_round = {}
        for name, mode in MODES.items():
            first, more = (round_trip(clients, r, mode, overrides) for r in (1, args.rounds))
            per_round[name] = (more - first) / (args.rounds - 1)
        print(f"{clients} clients, seconds per round after the first ({args.rounds} rounds against 1):")
        for name, seconds in per_round.items():
            print(f"  {name:<14} {seconds:7.3f} s   ratio to plain {seconds / per_round['plain']:5.2f}")


if __name__ == "__main__":
    main()
