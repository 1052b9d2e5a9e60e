"""How often the clients' ``crafted_check`` flags, from the run directories of
``experiments/configs/crafted_check/*.yaml`` (each row of a run is one client's turn in an attacked
round, with the check's report): flagged turns over all turns with a Wilson 95% interval, the
median and largest fraction of dead units, the largest of zeroed units, the median and largest
weight-norm factor from the initialisation (``scale-factor``) a turn saw, and the run's
final test utility (the mean over the last tenth of the rounds).

    fedgraph-sim run --config experiments/configs/crafted_check/honest_fedsgd.yaml
    python experiments/crafted_check_rates.py runs/<stamp>-crafted_check_honest_fedsgd [more runs]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from fedgraph_sim.metrics.aggregate import wilson_interval
from fedgraph_sim.utility import final_utility


def rates(run_dir: Path) -> dict:
    rows = pd.read_parquet(run_dir / "results.parquet")
    turns = rows.drop_duplicates(["round", "client"])  # one row per client turn (the first graph's)
    flagged = int((turns["defense_crafted_flag"] == 1.0).sum())
    low, high = wilson_interval(flagged, len(turns))
    dead = turns["defense_dead_fraction"]
    return {"run": run_dir.name, "turns": len(turns), "flagged": flagged,
            "flagged %": f"{100 * flagged / len(turns):.1f} [{100 * low:.1f}, {100 * high:.1f}]",
            "dead fraction (median, max)": f"{dead.median():.3f}, {dead.max():.3f}",
            "zero fraction (max)": f"{turns['defense_zero_fraction'].max():.3f}",
            **_scale(turns),
            **{k: round(v, 4) for k, v in final_utility(run_dir).items() if k in ("test_accuracy", "test_auc")}}


def _scale(turns: pd.DataFrame) -> dict:
    """The scale-factor column, for runs whose check reported one (older runs did not)."""
    if "defense_scale_factor" not in turns:
        return {}
    factor = turns["defense_scale_factor"]
    return {"scale factor (median, max)": f"{factor.median():.3f}, {factor.max():.3f}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories")
    args = parser.parse_args(argv)
    missing = [str(r) for r in args.runs if not (r / "results.parquet").is_file()]
    if missing:
        print(f"runs: no results.parquet in {', '.join(missing)}", file=sys.stderr)
        return 2
    table = [rates(r) for r in args.runs]
    columns = list(dict.fromkeys(k for row in table for k in row))
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in table:
        print("| " + " | ".join(str(row.get(c, "-")) for c in columns) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
