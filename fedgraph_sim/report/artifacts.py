"""What a figure builder yields: a saved PNG with its caption, or the one-line reason it was skipped.

Figures are ``matplotlib.figure.Figure`` objects drawn on the Agg canvas directly, never through
pyplot, so no display or global figure registry is involved and nothing stays open after saving.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from matplotlib.figure import Figure

log = logging.getLogger(__name__)


@dataclass
class Saved:
    path: Path
    caption: str


@dataclass
class Skipped:
    name: str
    reason: str


def new_figure(width: float, height: float) -> Figure:
    # Imported here: reading a directory and writing tables need no matplotlib (about a second).
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def save(figure: Figure, path: Path, caption: str) -> Saved:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    figure.clear()  # release the artists now rather than at garbage collection
    return Saved(path, caption)


def failure(name: str, exc: Exception) -> Skipped:
    reason = f"failed with {exc.__class__.__name__}: {exc}"
    log.warning("report: %s %s", name, reason, exc_info=log.isEnabledFor(logging.DEBUG))
    return Skipped(name, reason)


def attempt(name: str, draw: Callable[[], Saved]) -> Saved | Skipped:
    """``draw()``, or the reason it failed: one broken figure must not cost the report the others."""
    try:
        return draw()
    except Exception as exc:  # noqa: BLE001 - whatever went wrong is reported in report.md
        return failure(name, exc)
