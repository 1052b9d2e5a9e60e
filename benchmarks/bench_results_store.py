"""The size of a run's rows as JSON lines (what a run streams) and as Parquet (what it keeps),
and the time to read each back, on the rows of a run or sweep directory you give it.

    python benchmarks/bench_results_store.py RUN_OR_SWEEP_DIR [RUN_OR_SWEEP_DIR ...]

A sweep's cells are read one by one (its merged table repeats them). Prints per directory the
rows, distinct keys, bytes per row in each store and their ratio, and the read time of each
(median of 3) with its ratio; the rows read back from Parquet are checked equal to the JSON ones.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fedgraph_sim.jsonl_files import read_jsonl  # noqa: E402
from fedgraph_sim.parquet_rows import read_parquet, write_parquet  # noqa: E402
from fedgraph_sim.rows.store import read_rows  # noqa: E402


def _rows(directory: Path) -> list[dict]:
    cells = sorted(p for p in (directory / "cells").glob("*") if p.is_dir()) if (directory / "cells").is_dir() else []
    return [row for d in (cells or [directory]) for row in read_rows(d)]


def _median_seconds(read, path: Path) -> float:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        read(path)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directories", nargs="+", type=Path)
    args = parser.parse_args()
    for directory in args.directories:
        rows = _rows(directory)
        if not rows:
            print(f"{directory}: no rows")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            jsonl = Path(tmp) / "results.jsonl"
            jsonl.write_text("".join(json.dumps(row, allow_nan=True) + "\n" for row in rows))
            parquet = write_parquet(rows, Path(tmp) / "results.parquet")
            same = json.dumps(read_parquet(parquet), allow_nan=True) == json.dumps(rows, allow_nan=True)
            sizes = jsonl.stat().st_size / len(rows), parquet.stat().st_size / len(rows)
            reads = _median_seconds(read_jsonl, jsonl), _median_seconds(read_parquet, parquet)
        keys = len({key for row in rows for key in row})
        print(f"{directory.name}: {len(rows)} rows, {keys} keys; bytes per row JSON lines {sizes[0]:.0f}, "
              f"Parquet {sizes[1]:.0f} ({sizes[0] / sizes[1]:.1f}x smaller); read {reads[0]:.2f} s vs "
              f"{reads[1]:.2f} s ({reads[0] / reads[1]:.2f}x); rows equal: {same}")


if __name__ == "__main__":
    main()
