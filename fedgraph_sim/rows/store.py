"""A run's result rows on disk: ``results.jsonl`` (one row per attack x client x round x graph,
each line appended whole while the run goes; a killed run leaves its rows here), then
``results.parquet`` (the same rows, columnar, once the run has ended: :func:`seal`). Every reader
takes either, through :func:`read_rows`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

from fedgraph_sim.jsonl_files import JsonlWriter, read_jsonl
from fedgraph_sim.parquet_rows import read_parquet, write_parquet
from fedgraph_sim.rows.record import ResultRow, Row

log = logging.getLogger(__name__)

#: A run's rows: streamed to the JSON-lines file while it goes, sealed into Parquet when it ends.
RESULTS_JSONL, RESULTS_PARQUET = "results.jsonl", "results.parquet"


class ResultWriter(JsonlWriter):
    """Appends rows to ``results.jsonl``, each written whole or not at all
    (:class:`~fedgraph_sim.jsonl_files.JsonlWriter`). A :class:`ResultRow` is stored as its flat
    form (``as_dict``)."""

    def __init__(self, run_dir: str | Path) -> None:
        super().__init__(Path(run_dir) / RESULTS_JSONL)

    def write(self, row: ResultRow | Row) -> None:
        super().write(row.as_dict() if isinstance(row, ResultRow) else row)


def read_rows(run_dir: str | Path, on_broken: Callable[[str], None] | None = None) -> list[Row]:
    """The rows of a run or sweep directory: ``results.parquet``'s, then any ``results.jsonl``
    holds (a run still going, or killed; a broken line skipped and counted to ``on_broken``, as
    :func:`~fedgraph_sim.jsonl_files.read_jsonl` does)."""
    run_dir = Path(run_dir)
    sealed = read_parquet(run_dir / RESULTS_PARQUET) if (run_dir / RESULTS_PARQUET).is_file() else []
    return sealed + read_jsonl(run_dir / RESULTS_JSONL, on_broken)


def has_rows(run_dir: str | Path) -> bool:
    """Whether ``run_dir`` holds a results file of either kind."""
    return any((Path(run_dir) / name).is_file() for name in (RESULTS_PARQUET, RESULTS_JSONL))


def seal(run_dir: str | Path) -> Path | None:
    """Move a run's streamed rows into ``results.parquet`` (kept rows first) and delete
    ``results.jsonl``, once the Parquet file is whole; None when there was nothing to move. A
    failure to write leaves the JSON lines where they are, so nothing written is lost."""
    run_dir = Path(run_dir)
    if not (run_dir / RESULTS_JSONL).is_file():
        return None
    try:
        path = write_rows(run_dir, read_rows(run_dir))
    except OSError as exc:  # a full disk: the rows stay readable where they are
        log.warning("%s: rows kept in %s, not sealed into %s (%s)", run_dir, RESULTS_JSONL, RESULTS_PARQUET,
                    exc.strerror or exc)
        return None
    return path


def write_rows(run_dir: str | Path, rows: list[Row]) -> Path:
    """``rows`` as ``<run_dir>``'s results, whatever it held before: ``results.parquet``, and no
    ``results.jsonl`` once that is whole (a sweep's merged table; :func:`seal`)."""
    path = write_parquet(rows, Path(run_dir) / RESULTS_PARQUET)
    (Path(run_dir) / RESULTS_JSONL).unlink(missing_ok=True)
    return path
