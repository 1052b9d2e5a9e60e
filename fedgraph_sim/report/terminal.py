"""Summary grids on the terminal: rich tables sized to its width, labels never cut.

Label columns whose value is the same on every row move into the title; metric columns empty on
every row are dropped. When the rest is wider than the terminal, the metric columns are split over
several tables, each repeating the labels. Cells wrap (``overflow="fold"``) rather than being cut,
so a long defense stack or attack name is always shown whole.
"""

from __future__ import annotations

import os

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table

from fedgraph_sim.metrics import shown_in
from fedgraph_sim.report.tables import SUMMARY_LABELS, Grid, summary_grid

PIPE_WIDTH = 190  # when output is not a terminal (a log file) and COLUMNS is not set


def console(stderr: bool = False) -> Console:
    """The terminal's console; not a terminal: ``COLUMNS`` or :data:`PIPE_WIDTH` columns."""
    out = Console(stderr=stderr)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out = Console(stderr=stderr, width=PIPE_WIDTH)
    return out


def job_progress(display: Console):
    """The progress display of a sweep or an audit: one line per task (a spinner, its description,
    a bar, done of total, the time elapsed), cleared when it ends."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=display, transient=True)


def _width(grid: Grid, column: int, cap: int | None = None) -> int:
    # one border and a space either side per column (rich's default box and padding)
    natural = max(cell_len(text) for text in [grid.header[column], *(row[column] for row in grid.rows)])
    return min(natural, cap or natural) + 3


def _label_caps(grid: Grid, labels: list[int], budget: int) -> dict[int, int]:
    """Text widths for the label columns within ``budget``: narrow labels keep their width, the
    wide ones share what is left equally (and wrap)."""
    caps, left = {}, list(sorted(labels, key=lambda c: _width(grid, c)))
    while left:
        share = max(8, budget // len(left) - 3)
        c = left.pop(0)
        caps[c] = min(_width(grid, c) - 3, share)
        budget -= caps[c] + 3
    return caps


def _constant(grid: Grid, column: int) -> bool:
    values = {row[column] for row in grid.rows}
    return len(grid.rows) > 1 and len(values) == 1


def _empty(grid: Grid, column: int) -> bool:
    return all(row[column] in ("-", "") for row in grid.rows)


def fit(grid: Grid, width: int) -> tuple[list[Table], str]:
    """The grid as rich tables no wider than ``width`` (see the module docstring), and the
    caption for the metrics they show."""
    labels = [c for c in range(grid.labels) if not _constant(grid, c)] or [0]
    fixed = [f"{grid.header[c]}: {grid.rows[0][c]}" for c in range(grid.labels) if c not in labels]
    rest = [c for c in range(grid.labels, len(grid.header)) if not _empty(grid, c) or c == grid.labels]
    # Labels get at most half the width between them; a longer one wraps onto more lines.
    caps = _label_caps(grid, labels, width // 2)
    room = width - 1 - sum(_width(grid, c, caps[c]) for c in labels)
    chunks: list[list[int]] = [[]]
    for c in rest:
        if chunks[-1] and sum(_width(grid, k) for k in chunks[-1]) + _width(grid, c) > room:
            chunks.append([])
        chunks[-1].append(c)
    title = grid.title + (f" ({'; '.join(fixed)})" if fixed else "")
    shown = tuple(m for m in map(grid.metric_at, rest) if m is not None)
    tables = []
    for i, chunk in enumerate(chunks):
        part = f" [{i + 1}/{len(chunks)}]" if len(chunks) > 1 else ""
        table = Table(title=title + part)
        for c in labels:
            table.add_column(grid.header[c], overflow="fold", max_width=caps[c])
        for c in chunk:
            table.add_column(grid.header[c], justify="right", overflow="fold")
        for row, is_paper in zip(grid.rows, grid.paper):
            table.add_row(*(row[c] for c in labels + chunk), style="italic" if is_paper else None)
        tables.append(table)
    return tables, grid.caption(shown)


def print_grid(grid: Grid, out: Console | None = None) -> None:
    out = out or console()
    tables, caption = fit(grid, out.width)
    for table in tables:
        out.print(table)
    out.print(caption, style="dim")


def print_summary(summary: list[dict], title: str, out: Console | None = None,
                  metrics: tuple[str, ...] | None = None) -> None:
    """A run's or sweep's ``summarize`` entries: every label that varies; the ``metrics`` columns
    (a sweep spec's), else the terminal metrics."""
    print_grid(summary_grid(summary, metrics or shown_in("terminal"), SUMMARY_LABELS, style="compact", utility=True,
                            title=title), out)
