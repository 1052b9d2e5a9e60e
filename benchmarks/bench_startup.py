"""Start-up of the command line: how long ``fedgraph-sim --help``, every subcommand's ``--help``
(the parser's own, ``fedgraph_sim.runtime.cli.subcommands``, so a new one is timed without editing
this file) and the errors a file or an option alone shows (a missing config, a bad value, a wrong
report directory) take, against a bare Python start, in fresh processes.

    python benchmarks/bench_startup.py [--repeats 5]

Prints per command the median and the best wall seconds (the best is the least disturbed by other
work on the machine) and the median's ratio to ``python -c pass``. The heavy
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
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))  # this checkout's code, as ``-m fedgraph_sim`` below

from fedgraph_sim.runtime.cli import subcommands  # noqa: E402

ERRORS = (
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
    print(f"{'command':<53} {'median':>7} {'best':>7} {'/ bare':>7}")
    for command in (["--help"], *([name, "--help"] for name in subcommands()), *ERRORS):
        times = [seconds([sys.executable, "-m", "fedgraph_sim", *command]) for _ in range(args.repeats)]
        median = statistics.median(times)
        print(f"fedgraph-sim {' '.join(command):<40} {median:7.3f} {min(times):7.3f} {median / bare:6.1f}x")


if __name__ == "__main__":
    main()
