"""Summary tables: one table model for every view of ``rows.statistics.summarize`` entries.

:func:`summary_grid` lays out label columns, the graph count, one column per catalogue metric
(its short name as header) and optional utility columns, with a paper's row under ours where a
reference has one. :func:`markdown` renders it for reports and reproduction tables;
``report.terminal`` renders the same grid as rich tables that fit the terminal.

Cells (``style="full"``): ``mean ± std [Δ gain vs prior]``, the information gain over the
gradient-free prior on the same graphs (+ = the attack knows more than the prior); metrics that
count failures (GRAIN's GSM and FULL) in percent over every attacked graph with failures as 0,
with the bootstrap 95% interval. ``style="compact"`` (the terminal): ``mean (gain)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from fedgraph_sim.errors import require
from fedgraph_sim.metrics import direction_note, metric, metric_names, prior_note

#: The label columns a summary entry can be told apart by.
SUMMARY_LABELS = ("dataset", "attack", "setting", "defense", "alignment")


def table_metrics(names: Any, key: str = "metrics") -> tuple[str, ...]:
    """A spec's ``metrics``: the catalogue metrics its tables show as columns, in its order. The one
    check of the key for sweeps and reproductions alike; the run config's own ``metrics`` section
    (``entries``) is another thing and lives under their ``base``."""
    require(isinstance(names, list) and len(names) > 0 and all(isinstance(n, str) for n in names), key,
            f"a non-empty list of metric names, the tables' columns (got {names!r}); the run config's "
            "metrics section goes under base")
    valid = metric_names()
    for name in names:
        require(name in valid, key, f"unknown metric '{name}'; valid: {', '.join(valid)}")
    return tuple(names)


@dataclass
class Grid:
    """A table: ``labels`` leading label columns, the graph count, one column per metric of
    ``metrics``, then the ``extras`` (utility) columns."""

    header: list[str]
    metrics: tuple[str, ...]
    labels: int = 1
    extras: tuple[str, ...] = ()
    style: str = "full"
    title: str = ""
    rows: list[list[str]] = field(default_factory=list)
    paper: list[bool] = field(default_factory=list)  # rows that are a paper's numbers

    def add(self, cells: list[str], paper: bool = False) -> None:
        self.rows.append(cells)
        self.paper.append(paper)

    def metric_at(self, column: int) -> str | None:
        """The metric shown in ``column``, or None for a label, graphs or utility column."""
        i = column - self.labels - 1
        return self.metrics[i] if 0 <= i < len(self.metrics) else None

    def caption(self, metrics: tuple[str, ...] | None = None) -> str:
        """What the cells mean, for the ``metrics`` shown (default all)."""
        return caption(self.metrics if metrics is None else metrics, self.style, any(self.paper), self.extras)


def _nan(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def number(value: float, digits: int = 4) -> str:
    # A diverged attack's feature MSE reaches 1e11: keep such cells short.
    return f"{value:.{digits}f}" if abs(value) < 1e4 else f"{value:.{digits - 1}e}"


def signed(value: float, digits: int = 4) -> str:
    return ("+" if value >= 0 else "-") + number(abs(value), digits)


def _percent(value) -> str:
    return "-" if _nan(value) else f"{100 * value:.1f}"


def metric_cell(entry: dict, name: str, style: str = "full") -> str:
    """One summary entry's cell for a catalogue metric (see the module docstring)."""
    gain, prior = entry.get(f"gain_{name}_mean"), entry.get(f"prior_{name}_mean")
    if metric(name).counts_failures:  # the mean over every attacked graph, and its gain over those
        gain, prior = entry.get(f"gain_{name}_all_mean"), entry.get(f"prior_{name}_all_mean")
        value = entry.get(f"{name}_all_mean")
        if _nan(value):
            return "-"
        if style == "compact":
            return f"{_percent(value)}%" + ("" if _nan(gain) else f" ({100 * gain:+.1f})")
        text = f"{_percent(value)} [{_percent(entry.get(f'{name}_ci_low'))}, {_percent(entry.get(f'{name}_ci_high'))}]"
        return text if _nan(gain) else f"{text} [Δ {100 * gain:+.1f} vs {_percent(prior)}]"
    mean = entry.get(f"{name}_mean")
    if _nan(mean):
        return "-"
    if style == "compact":
        return number(mean, 3) + ("" if _nan(gain) else f" ({signed(gain, 3)})")
    text = f"{number(mean)} ± {number(entry.get(f'{name}_std', math.nan))}"
    return text if _nan(gain) else f"{text} [Δ {signed(gain)} vs {number(prior)}]"


def paper_cell(name: str, value) -> str:
    if _nan(value):
        return ""
    return _percent(value) if metric(name).counts_failures else number(value)


def graphs_cell(entry: dict) -> str:
    """Scored graphs, then the other rows by status: ``97 (3 failed)``."""
    statuses = dict(part.split("=") for part in str(entry.get("statuses", "")).split() if "=" in part)
    others = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()) if status != "ok")
    return f"{entry['graphs']}" + (f" ({others})" if others else "")


def _accuracy_cell(entry: dict) -> str:
    mean, count = entry.get("test_accuracy_mean"), entry.get("federations", 0)
    if _nan(mean) or not count:
        return "-"
    return f"{number(mean)} ± {number(entry.get('test_accuracy_std', math.nan))} (n={count})"


def _auc_cell(entry: dict) -> str:
    mean = entry.get("test_auc_mean")
    return "-" if _nan(mean) else f"{number(mean)} ± {number(entry.get('test_auc_std', math.nan))}"


def _epsilon_cell(entry: dict) -> str:
    value = entry.get("defense_epsilon_max")
    return "-" if _nan(value) else f"{value:.3g}"


#: Utility columns: header, cell, and whether any entry has a value.
UTILITY = (("test acc", _accuracy_cell, lambda e: not _nan(e.get("test_accuracy_mean"))),
           ("test AUC", _auc_cell, lambda e: not _nan(e.get("test_auc_mean"))),
           ("ε", _epsilon_cell, lambda e: not _nan(e.get("defense_epsilon_max"))))


def summary_grid(entries: list[dict], metrics: tuple[str, ...], labels: tuple[str, ...], *,
                 style: str = "full", utility: bool = False,
                 paper: Callable[[dict], dict] = lambda entry: {}, title: str = "") -> Grid:
    """One row per entry (``labels`` read from the entry), and under it the paper's row when
    ``paper(entry)`` gives ``{metric: value}``; utility columns when asked and informative."""
    extras = [(h, cell) for h, cell, present in UTILITY if utility and any(present(e) for e in entries)]
    grid = Grid([*labels, "graphs", *(metric(m).short for m in metrics), *(h for h, _ in extras)],
                tuple(metrics), len(labels), tuple(h for h, _ in extras), style, title)
    for entry in entries:
        grid.add([*(str(entry.get(k, "")) for k in labels), graphs_cell(entry),
                  *(metric_cell(entry, m, style) for m in metrics), *(cell(entry) for _, cell in extras)])
        values = paper(entry)
        if values:
            names = [f"{entry[k]} (paper)" if k == "attack" else str(entry.get(k, "")) for k in labels]
            grid.add([*names, "", *(paper_cell(m, values.get(m)) for m in metrics), *[""] * len(extras)],
                     paper=True)
    return grid


def caption(metrics: tuple[str, ...], style: str, with_paper: bool, extras: tuple[str, ...]) -> str:
    cells = ("mean (information gain over the gradient-free prior on the same graphs; + = the attack "
             "knows more than the prior)" if style == "compact" else
             "mean ± std over the scored graphs [Δ information gain vs the gradient-free prior's value "
             "on the same graphs; + = the attack knows more than the prior]")
    text = f"Cells: {cells}." + (f" Priors: {prior_note(metrics)}. {direction_note(metrics)}" if metrics else "")
    if any(metric(m).counts_failures for m in metrics):
        text += (" GSM and FULL in % over every attacked graph with failures as 0"
                 + (" [bootstrap 95% CI]" if style == "full" else "") + ", their prior and gain over the same graphs.")
    text += " graphs: scored graphs, then the other rows by status."
    if "test acc" in extras:
        text += (" test acc: held-out accuracy of the global model at the end of training (the mean over "
                 "the last tenth of the rounds), mean ± std over the n distinct federations (seeds).")
    if "ε" in extras:
        text += " ε: the largest DP-SGD epsilon any attacked client had spent by its attacked round."
    if with_paper:
        text += " Italic rows: the paper."
    return text


def _escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def markdown(grid: Grid) -> str:
    lines = ["| " + " | ".join(grid.header) + " |", "|" + "---|" * len(grid.header)]
    for cells, is_paper in zip(grid.rows, grid.paper):
        cells = [_escape(c) for c in cells]
        if is_paper:
            cells = [f"*{c}*" if c else "" for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
