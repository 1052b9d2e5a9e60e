"""Utility of the federated model: accuracy and loss of the global model on the held-out test
split (``data.test_fraction``), evaluated centrally after every round
(:func:`fedgraph_sim.models.evaluate`), so a defense's privacy and its cost come from the same
run. A two-class task also gets the ROC AUC of the model's score for class 1: on an imbalanced
task (Tox21's SR-p53 is 94% negative) the accuracy stays at the majority class while the ranking
learns, and the AUC is what shows it (and what a defense costs).

``<run>/utility.jsonl`` holds one line per round (round 0 = the initial model) while the run goes;
once it has ended the same rows are in ``utility.parquet`` beside ``results.parquet``
(:func:`fedgraph_sim.rows.store.seal`). Readers take either: runs from before sealing have only
the JSON lines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from fedgraph_sim.jsonl_files import append_jsonl
from fedgraph_sim.rows.store import UTILITY

UTILITY_FILE = UTILITY.jsonl  # where a run streams the rows
UTILITY_KEYS = ("test_accuracy", "test_auc", "test_loss", "test_rmse", "test_r2")  # classification | regression
FINAL_FRACTION = 10  # final utility: the mean over the last 1/FINAL_FRACTION of the rounds


def write_utility(run_dir: str | Path, round: int, metrics: dict) -> None:
    """Append round ``round``'s line, whole or not at all (:func:`~fedgraph_sim.jsonl_files.append_jsonl`).

    Args:
        run_dir (str or Path): the run's directory; the line goes to ``utility.jsonl``.
        round (int): the server round evaluated (0 = the initial model).
        metrics (dict): the global model's test metrics (``test_*`` keys,
            :func:`fedgraph_sim.models.evaluate`) and any other columns of the line.
    """
    append_jsonl(Path(run_dir) / UTILITY_FILE, {"round": round, **metrics})


def read_utility(run_dir: str | Path) -> list[dict]:
    """The run's utility rows, sealed (``utility.parquet``) or still streaming (``utility.jsonl``).

    Args:
        run_dir (str or Path): the run's directory.
    """
    return UTILITY.read(run_dir)


def final_utility(run_dir: str | Path) -> dict:
    """Test accuracy and (two classes) AUC (regression: RMSE and R2) and loss at the end of training: the mean
    over the last tenth of the rounds (at least the last round; round 0, the initial model, only when nothing
    else was evaluated). One round's accuracy on a test split of a few dozen graphs moves by whole graphs from
    round to round, so the mean over the last rounds is the figure FL papers report. Empty without a test
    split.

    Args:
        run_dir (str or Path): the run's directory.

    Returns:
        Each of ``test_accuracy``, ``test_auc``, ``test_loss``, ``test_rmse``, ``test_r2`` that every
        averaged round has, mapped to its mean.
    """
    rows = sorted(read_utility(run_dir), key=lambda r: r["round"])
    if not rows:
        return {}
    trained = [r for r in rows if r["round"] > 0] or rows
    tail = trained[-max(1, len(trained) // FINAL_FRACTION):]
    keys = [k for k in UTILITY_KEYS if all(k in r for r in tail)]
    return {key: sum(r[key] for r in tail) / len(tail) for key in keys}


def with_utility(rows: Iterable[dict], utility: dict) -> list[dict]:
    """``rows`` with the run's final utility columns added (new dicts; ``rows`` are not changed).

    Args:
        rows (Iterable[dict]): the run's result rows.
        utility (dict): the columns to add (:func:`final_utility`); they replace a row's own
            values of the same name.
    """
    return [{**row, **utility} for row in rows]
