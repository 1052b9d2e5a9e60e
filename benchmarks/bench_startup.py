"""Start-up of the command line: how long ``fedgraph-sim --help``, each subcommand's ``--help``
and the errors a file or an option alone shows (a missing config, a bad value, a wrong report
directory) take, against a bare Python start, in fresh processes.

    python benchmarks/bench_startup.py [--repeats 5]

Prints per command the median wall seconds and its ratio to ``python -c pass``. The heavy
libraries (torch, PyG, Flower, Ray, matplotlib) are imported where a command needs them, so these
lines stay well under a second; ``tests/unit/test_startup.py`` checks which modules they load.
An unknown attack or defense is refused from the declared names; an error that needs a dataset
loaded is not here. Run from another checkout (``cd OTHER && python /path/to/bench_startup.py``)
to compare commits: ``-m fedgraph_sim`` imports the working directory's code.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = (
    ["--help"], ["run", "--help"], ["sweep", "--help"], ["reproduce", "--help"], ["deploy", "--help"],
    ["attacks", "--help"], ["report", "--help"],
    ["run", "--config", "/nonexistent.yaml"], ["run", "federation.rounds=x"], ["run", "no.such.key=1"],
    ["sweep", "--config", "/nonexistent.yaml"], ["reproduce", "--config", "/nonexistent.yaml"],
    ["report", "/nonexistent"], ["run", "attack.names=[nope]"],
)


def seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    bare = statistics.median(seconds([sys.executable, "-c", "pass"]) for _ in range(args.repeats))
    print(f"python -c pass: {bare:.3f} s (median of {args.repeats})")
    for command in COMMANDS:
        median = statistics.median(seconds([sys.executable, "-m", "fedgraph_sim", *command])
                                   for _ in range(args.repeats))
        print(f"fedgraph-sim {' '.join(command):<40} {median:6.3f} s  {median / bare:5.1f}x bare python")


if __name__ == "__main__":
    main()
