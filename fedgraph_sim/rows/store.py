"""A run's rows on disk: every table a run streams is a JSON-lines file while the run goes (each
line appended whole; a killed run leaves its rows there) and a Parquet file of the same rows,
columnar, once the run has ended (:func:`seal`). Every reader takes either, the Parquet rows
first (:meth:`RowFiles.read`).

Two tables: the result rows, one per attack x client x round x graph (``results.jsonl``, then
``results.parquet``), and the global model's utility, one row per round
(``utility.jsonl``, then ``utility.parquet``: :mod:`fedgraph_sim.utility`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from fedgraph_sim.jsonl_files import JsonlWriter, read_jsonl
from fedgraph_sim.parquet_rows import read_parquet, write_parquet
from fedgraph_sim.rows.record import ResultRow, Row

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RowFiles:
    """One table of a run directory: ``<name>.jsonl`` while the run goes, ``<name>.parquet`` once sealed."""

    name: str

    @property
    def jsonl(self) -> str:
        return f"{self.name}.jsonl"

    @property
    def parquet(self) -> str:
        return f"{self.name}.parquet"

    def read(self, run_dir: str | Path, on_broken: Callable[[str], None] | None = None) -> list[dict]:
        """The table's rows in ``run_dir``: the Parquet file's, then any the JSON lines hold (a
        run still going, or killed; a broken line skipped and counted to ``on_broken``, as
        :func:`~fedgraph_sim.jsonl_files.read_jsonl` does); ``[]`` when it holds neither file.

        Args:
            run_dir (str or Path): the run (or sweep) directory.
            on_broken (Callable[[str], None], optional): takes the line counting unreadable JSON
                lines. (default: :obj:`None`: a warning in the log)
        """
        run_dir = Path(run_dir)
        sealed = read_parquet(run_dir / self.parquet) if (run_dir / self.parquet).is_file() else []
        return sealed + read_jsonl(run_dir / self.jsonl, on_broken)

    def exists(self, run_dir: str | Path) -> bool:
        """Whether ``run_dir`` holds the table in either file.

        Args:
            run_dir (str or Path): the run (or sweep) directory.
        """
        return any((Path(run_dir) / name).is_file() for name in (self.parquet, self.jsonl))

    def replace(self, run_dir: str | Path, rows: list[dict]) -> Path:
        """``rows`` as the table, whatever ``run_dir`` held before: the Parquet file, and no JSON
        lines once that is whole.

        Args:
            run_dir (str or Path): the run (or sweep) directory.
            rows (list[dict]): the table's new rows.

        Returns:
            The Parquet file's path.
        """
        path = write_parquet(rows, Path(run_dir) / self.parquet)
        (Path(run_dir) / self.jsonl).unlink(missing_ok=True)
        return path

    def seal(self, run_dir: str | Path) -> Path | None:
        """Move the streamed rows into the Parquet file (kept rows first) and delete the JSON
        lines, once the Parquet file is whole; None when there was nothing to move. A failure to
        write leaves the JSON lines where they are, so nothing written is lost.

        Args:
            run_dir (str or Path): the run's directory.

        Returns:
            The Parquet file's path, or None when nothing was moved (no JSON lines, or the write
            failed and a warning was logged).
        """
        run_dir = Path(run_dir)
        if not (run_dir / self.jsonl).is_file():
            return None
        try:
            return self.replace(run_dir, self.read(run_dir))
        except OSError as exc:  # a full disk: the rows stay readable where they are
            log.warning("%s: rows kept in %s, not sealed into %s (%s)", run_dir, self.jsonl, self.parquet,
                        exc.strerror or exc)
            return None


RESULTS, UTILITY = RowFiles("results"), RowFiles("utility")
RESULTS_JSONL, RESULTS_PARQUET = RESULTS.jsonl, RESULTS.parquet


class ResultWriter(JsonlWriter):
    """Appends rows to ``results.jsonl``, each written whole or not at all
    (:class:`~fedgraph_sim.jsonl_files.JsonlWriter`). A :class:`ResultRow` is stored as its flat
    form (``as_dict``)."""

    def __init__(self, run_dir: str | Path) -> None:
        super().__init__(Path(run_dir) / RESULTS_JSONL)

    def write(self, row: ResultRow | Row) -> None:
        """Append ``row`` as one line of ``results.jsonl``, whole or not at all
        (:meth:`~fedgraph_sim.jsonl_files.JsonlWriter.write`).

        Args:
            row (ResultRow or Row): the row; a :class:`ResultRow` is stored as its ``as_dict()``.
        """
        super().write(row.as_dict() if isinstance(row, ResultRow) else row)


def read_rows(run_dir: str | Path, on_broken: Callable[[str], None] | None = None) -> list[Row]:
    """The result rows of a run or sweep directory, sealed or still streaming (:meth:`RowFiles.read`).

    Args:
        run_dir (str or Path): the run or sweep directory.
        on_broken (Callable[[str], None], optional): takes the line counting unreadable JSON
            lines. (default: :obj:`None`: a warning in the log)
    """
    return RESULTS.read(run_dir, on_broken)


def has_rows(run_dir: str | Path) -> bool:
    """Whether ``run_dir`` holds a results file of either kind.

    Args:
        run_dir (str or Path): the run or sweep directory.
    """
    return RESULTS.exists(run_dir)


def seal(run_dir: str | Path) -> Path | None:
    """Seal a run that has ended: its utility rows into ``utility.parquet`` and its result rows
    into ``results.parquet`` (:meth:`RowFiles.seal`). Returns the results' Parquet file, None
    when there were no streamed result rows to move (or they could not be).

    Args:
        run_dir (str or Path): the run's directory.
    """
    UTILITY.seal(run_dir)
    return RESULTS.seal(run_dir)


def write_rows(run_dir: str | Path, rows: list[Row]) -> Path:
    """``rows`` as ``<run_dir>``'s results, whatever it held before: ``results.parquet``, and no
    ``results.jsonl`` once that is whole (a sweep's merged table; :func:`seal`).

    Args:
        run_dir (str or Path): the run or sweep directory.
        rows (list[Row]): the result rows that make up the table.

    Returns:
        The path of ``results.parquet``.
    """
    return RESULTS.replace(run_dir, rows)
