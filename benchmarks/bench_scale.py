"""Scale: peak memory and wall time per round of many-client federations, and the Deployment
Engine's per-round overhead over the simulation engine on loopback.

    python benchmarks/bench_scale.py [--clients 100 1000] [--rounds 3] [--engines]

Each federation is ``fedgraph-sim run`` in a child process: MUTAG (synthetic without
``FEDGRAPH_DATA_ROOT``), clients sampled with replacement (``partition.with_replacement``, 3 graphs
each), 10% of them training per round, one of those attacked per round (iDLG and the adjacency
prior). Memory is the peak over time of the summed proportional set size (PSS, shared pages split
between the processes sharing them) of the whole process tree: the driver, Ray's services and
its actors, the attack workers. ``--engines`` times a 2-client synthetic federation of 1 and
1 + ``rounds`` rounds in the simulation and under the Deployment Engine, with our SuperNodes
(polling every 0.1 s) and forked ClientApps and with Flower's own processes, under two workloads
(iDLG attacking every round; the random baseline in round 1 only, which leaves the engines' own
cost), and prints each one's wall time per extra round (start-up cancels) and its ratio to the
simulation's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fedgraph_sim.processes import descendants  # noqa: E402


def pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def measured(command: list[str]) -> tuple[float, float]:
    """Run ``command``; its wall seconds and the peak summed PSS of its process tree, in GB."""
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = [0]

    def sample() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], sum(pss_kib(p) for p in [proc.pid, *descendants(proc.pid)]))
            time.sleep(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    start = time.perf_counter()
    sampler.start()
    _, err = proc.communicate()
    seconds = time.perf_counter() - start
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{err[-2000:]}")
    return seconds, peak[0] / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, nargs="*", default=[100, 1000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--engines", action="store_true", help="also time the Deployment Engine against the simulation")
    args = parser.parse_args()
    dataset = "MUTAG" if os.environ.get("FEDGRAPH_DATA_ROOT") else "synthetic"
    out = tempfile.mkdtemp(prefix="bench-scale-")
    run = [sys.executable, "-m", "fedgraph_sim", "run"]
    for k in args.clients:
        seconds, gb = measured([*run, f"data.dataset={dataset}", f"federation.num_clients={k}",
                                f"federation.rounds={args.rounds}", "federation.fraction_train=0.1",
                                "partition.with_replacement=true", "partition.size=3",
                                "attack.names=[idlg,aux_mean_adjacency]", "attack.clients_per_round=1",
                                f"output.dir={out}"])
        print(f"{dataset}, {k} clients, {args.rounds} rounds, {max(1, k // 10)} training per round, one attacked: "
              f"peak PSS {gb:.2f} GB, wall {seconds:.0f} s "
              f"({seconds / args.rounds:.1f} s per round, start-up included)")
    if args.engines:
        # per round = (T(1 + R rounds) - T(1 round)) / R: start-up (Ray, the SuperLink) cancels out.
        tiny = ["data.dataset=synthetic", "data.options={num_graphs: 60}", "federation.num_clients=2",
                f"output.dir={out}"]
        workloads = {"iDLG attacks every round": ["attack.names=[idlg]"],
                     "the random baseline in round 1 only": ["attack.names=[random]", "attack.rounds=[1]"]}
        engines = {"simulation": ["run"], "deploy, polling SuperNodes and forked ClientApps": ["deploy"],
                   "deploy, Flower's own SuperNodes and SuperExec": ["deploy", "--clientapps", "flower"]}
        for workload, attacks in workloads.items():
            print(f"2 clients, synthetic, {workload}:")
            per_round = {}
            for engine, words in engines.items():
                command = [sys.executable, "-m", "fedgraph_sim", *words, *tiny, *attacks]
                one, _ = measured([*command, "federation.rounds=1"])
                more, _ = measured([*command, f"federation.rounds={1 + args.rounds}"])
                per_round[engine] = (more - one) / args.rounds
                print(f"  {engine}: 1 round {one:.1f} s, {1 + args.rounds} rounds {more:.1f} s, "
                      f"{per_round[engine]:.2f} s per extra round, "
                      f"{per_round[engine] / per_round['simulation']:.2f} x the simulation's")

if __name__ == "__main__":
    main()
