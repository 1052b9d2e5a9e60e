"""How long ``fedgraph-sim --help`` and every subcommand's ``--help`` take, each in a fresh process,
against a bare Python start.

    python benchmarks/bench_help.py [--repeats 3]

The subcommands are the parser's own (``fedgraph_sim.runtime.cli.subcommands``), so a new one is
timed without editing this file. Prints per command the best of ``--repeats`` wall seconds (the
least disturbed by other work on the machine) and its ratio to ``python -c pass``; the table is
this checkout's (the processes run from its root). ``tests/unit/test_startup.py`` checks the
cause, which modules a help loads; ``benchmarks/bench_startup.py`` also times the errors a file or
an option alone shows.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fedgraph_sim.runtime.cli import subcommands  # noqa: E402


def best_seconds(argv: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    bare = best_seconds([sys.executable, "-c", "pass"], args.repeats)
    print(f"python -c pass: {bare:.3f} s (best of {args.repeats})")
    print(f"{'command':<32} {'seconds':>8} {'/ bare':>7}")
    for command in ([], *([name] for name in subcommands())):
        best = best_seconds([sys.executable, "-m", "fedgraph_sim", *command, "--help"], args.repeats)
        print(f"{' '.join(['fedgraph-sim', *command, '--help']):<32} {best:8.3f} {best / bare:6.1f}x")


if __name__ == "__main__":
    main()
