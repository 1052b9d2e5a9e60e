"""A run's ``summary.csv``: one line per :func:`~fedgraph_sim.rows.statistics.summarize` entry
(mean and std per dataset, attack, setting, defense and alignment), a NaN as an empty cell."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from fedgraph_sim.atomic_files import replace_atomically


def write_summary(run_dir: str | Path, summary: list[dict]) -> Path:
    """Write ``summary.csv``, whole or not at all (a full disk leaves no empty or torn file).

    Args:
        run_dir (str or Path): the run or sweep directory the file goes in.
        summary (list[dict]): the :func:`~fedgraph_sim.rows.statistics.summarize` entries, the
            first one's keys as the header; none gives an empty file.

    Returns:
        The path of ``summary.csv``.
    """
    def write(partial: Path) -> None:
        with partial.open("w", newline="") as fh:
            if not summary:
                return
            writer = csv.DictWriter(fh, fieldnames=list(summary[0]))
            writer.writeheader()
            for entry in summary:
                writer.writerow({k: ("" if isinstance(v, float) and math.isnan(v) else v)
                                 for k, v in entry.items()})

    return replace_atomically(Path(run_dir) / "summary.csv", write)
