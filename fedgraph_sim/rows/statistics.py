"""What every table, figure and summary computes from result rows: which rows are scored or
attempted, a metric's mean with its information gain over the same graphs (the one convention),
the per-federation numbers (test accuracy, AUC, epsilon), the summary entries behind
``summary.csv`` and the terminal tables, and the one warning line about failed rows.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Iterable

from fedgraph_sim.metrics import ALIGNMENTS, aggregate, bootstrap_ci, all_metrics, metric, metric_column
from fedgraph_sim.metrics.catalogue import GRANT_OF
from fedgraph_sim.rows.record import Row, federation_id, group_key, prior_column


def federation_key(row: Row) -> tuple:
    """Rows of one federation share it: a sweep cell's federation (``record.federation_id``), else the run.

    Args:
        row (Row): a result row.

    Returns:
        ``(dataset, seed, defense, federation id or run)``, with ``""`` for no dataset and
        ``"none"`` for no defense.
    """
    origin = federation_id(row)
    if origin is None:
        origin = row.get("run")
    return row.get("dataset", ""), row.get("seed"), row.get("defense", "none"), origin


def run_columns(rows: list[Row]) -> dict:
    """Per-federation numbers of a group of rows: test accuracy and (two classes) test AUC, mean ±
    std over the distinct federations (a federation's rows repeat its value), and the largest
    DP-SGD epsilon spent by any attacked client by its attacked round.

    Args:
        rows (list[Row]): a group's rows, of any status; those without ``test_accuracy`` (no
            utility added) count for no federation.

    Returns:
        ``test_accuracy_mean``, ``test_accuracy_std``, ``test_auc_mean``, ``test_auc_std`` (NaN
        without values), ``federations`` (how many had a test accuracy) and
        ``defense_epsilon_max`` (NaN when no row spent any).
    """
    per_federation = {federation_key(r): r for r in rows if r.get("test_accuracy") is not None}
    accuracy = aggregate(per_federation.values(), "test_accuracy")
    auc = aggregate(per_federation.values(), "test_auc")
    eps = [float(r["defense_epsilon"]) for r in rows if r.get("defense_epsilon") is not None]
    return {"test_accuracy_mean": accuracy["mean"], "test_accuracy_std": accuracy["std"],
            "test_auc_mean": auc["mean"], "test_auc_std": auc["std"],
            "federations": len(per_federation), "defense_epsilon_max": max(eps, default=float("nan"))}


def is_scored(row: Row, alignment: str = ALIGNMENTS[0]) -> bool:
    """Rows with metrics: ``ok`` rows, and timed-out attacks scored on their best graph so far.

    Args:
        row (Row): a result row.
        alignment (str, optional): the alignment whose ``gsm0`` column the row must have.
            (default: ``"identity"``)
    """
    return row["status"] in ("ok", "timeout") and metric_column(alignment, "gsm0") in row


def is_attempted(row: Row) -> bool:
    """Rows of a graph the attack was run on, whatever came of it (not ``not_applicable``, and a
    failed client turn attacked no graph).

    Args:
        row (Row): a result row.
    """
    return row.get("graph_id") is not None and row["status"] != "not_applicable"


def _number(value) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value)


def mean_and_gain(rows: list[Row], name: str, alignment: str, *, failures_as_zero: bool = False) -> dict:
    """A metric's mean and its information gain, always over the same graphs: the one convention
    every table follows. ``rows`` are the group's scored rows, or with ``failures_as_zero`` its
    attempted rows, a graph without a value counting 0 (GRAIN's convention). Graphs whose value is
    undefined (AUC without an edge) are left out of both. The prior and the gain are given only
    when every graph the mean covers has them (a granted part, or rows without auxiliary graphs,
    have none); otherwise NaN rather than a gain over fewer graphs than the mean.

    Args:
        rows (list[Row]): the group's scored rows, or its attempted rows with ``failures_as_zero``.
        name (str): the metric's name (``adj_auc``), not its column.
        alignment (str): one of :data:`~fedgraph_sim.metrics.alignment.ALIGNMENTS`.
        failures_as_zero (bool, optional): count a row that has no value and is not scored as 0
            instead of leaving it out. (default: :obj:`False`)

    Returns:
        ``count``, the ``values`` averaged, ``mean`` and ``std`` (population; NaN for no values),
        and the mean ``prior``, ``gain`` and ``gain_std`` (NaN unless every value has a prior).
    """
    m, column = metric(name), metric_column(alignment, name)
    values, priors = [], []
    for row in rows:
        value = _number(row.get(column))
        if value is None and failures_as_zero and not is_scored(row, alignment):
            value = 0.0
        if value is None:
            continue
        values.append(value)
        priors.append(None if row.get(GRANT_OF[m.part]) else _number(row.get(prior_column(column))))
    out = {"count": len(values), "values": values, "prior": math.nan, "gain": math.nan, "gain_std": math.nan}
    out["mean"], out["std"] = _mean_std(values)
    if values and all(p is not None for p in priors):
        out["gain"], out["gain_std"] = _mean_std([m.gain(v, p) for v, p in zip(values, priors)])
        out["prior"] = sum(priors) / len(priors)
    return out


def shown(rows: list[Row], name: str, alignment: str = ALIGNMENTS[0]) -> dict:
    """The mean (and gain) a table cell, a figure or a verdict shows for a metric of a group of
    rows: for metrics that count failures (GRAIN's GSM family) over every attacked graph with a
    failure as 0, else over the scored rows; :func:`mean_and_gain` either way.

    Args:
        rows (list[Row]): the group's rows, of any status.
        name (str): the metric's name (``adj_auc``), not its column.
        alignment (str, optional): one of :data:`~fedgraph_sim.metrics.alignment.ALIGNMENTS`.
            (default: ``"identity"``)
    """
    if metric(name).counts_failures:
        return mean_and_gain([r for r in rows if is_attempted(r)], name, alignment, failures_as_zero=True)
    return mean_and_gain([r for r in rows if _scored(r)], name, alignment)


def _scored(row: Row) -> bool:
    return row["status"] == "ok" or is_scored(row)


def _mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and population standard deviation (NaN for no values), as ``aggregate`` gives them."""
    if not values:
        return math.nan, math.nan
    mean = sum(values) / len(values)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def summarize(rows: Iterable[Row]) -> list[dict]:
    """Mean, std and count of every catalogue metric per group (``record.group_key``: dataset,
    attack, setting, defense) and alignment over scored rows, with the mean prior and the mean
    information gain over the same graphs (:func:`mean_and_gain`); statuses are counted per group.
    For metrics that count failures (GRAIN's GSM family) also the paper's convention: the mean over
    every attacked graph with a failure (no graph recovered) counted as 0, its bootstrap 95%
    interval (10 000 resamples), and the prior and gain over those same graphs (``_all_`` keys).
    Each entry also carries the group's :func:`run_columns`.

    Args:
        rows (Iterable[Row]): result rows of any status, with the final utility columns added
            (``utility.with_utility``) for the per-federation numbers.

    Returns:
        One entry per group and alignment, in the order the groups first appear.
    """
    groups: dict[tuple, list[Row]] = defaultdict(list)
    every: dict[tuple, list[Row]] = defaultdict(list)
    attempted: dict[tuple, list[Row]] = defaultdict(list)
    statuses: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in rows:
        key = group_key(row)
        statuses[key][row["status"]] += 1
        every[key].append(row)
        if is_attempted(row):
            attempted[key].append(row)
        if _scored(row):
            groups[key].append(row)
    out = []
    for key, status in statuses.items():
        dataset, attack, setting, defense = key
        for alignment in ALIGNMENTS:
            entry = {"dataset": dataset, "attack": attack, "setting": setting, "defense": defense,
                     "alignment": alignment, "graphs": len(groups[key]),
                     "failed": sum(status.values()) - len(groups[key]),
                     "statuses": " ".join(f"{k}={v}" for k, v in sorted(status.items()))}
            for m in all_metrics():
                scored = mean_and_gain(groups[key], m.name, alignment)
                entry[f"{m.name}_mean"] = scored["mean"]
                entry[f"{m.name}_std"] = scored["std"]
                entry[f"{m.name}_count"] = scored["count"]
                entry[f"gain_{m.name}_mean"] = scored["gain"]
                entry[f"gain_{m.name}_std"] = scored["gain_std"]
                entry[f"prior_{m.name}_mean"] = scored["prior"]
                if m.counts_failures:
                    every_graph = mean_and_gain(attempted[key], m.name, alignment, failures_as_zero=True)
                    entry[f"{m.name}_all_mean"] = every_graph["mean"]
                    entry[f"gain_{m.name}_all_mean"] = every_graph["gain"]
                    entry[f"prior_{m.name}_all_mean"] = every_graph["prior"]
                    entry[f"{m.name}_ci_low"], entry[f"{m.name}_ci_high"] = bootstrap_ci(every_graph["values"])
            entry.update(run_columns(every[key]))  # a federation's numbers, whatever its rows' status
            out.append(entry)
    return out


def faults(rows: Iterable[Row], failed_turns: Iterable[str] = ()) -> str:
    """One warning line about the rows whose status is a fault (``threat.FAULTS``) and the client
    turns that failed over the whole run (``failed_turns``, their reasons: rows exist only for the
    attacked rounds and clients), or ``""`` when there is neither.

    Args:
        rows (Iterable[Row]): the run's result rows.
        failed_turns (Iterable[str], optional): the reason of every client turn that failed over
            the run. (default: ``()``)
    """
    from fedgraph_sim.threat import FAULTS  # here: threat loads torch and PyG, row statistics need neither

    counts = Counter(row.get("status") for row in rows if row.get("status") in FAULTS)
    turns = list(failed_turns)
    parts = []
    if counts:
        kinds = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        parts.append(f"{sum(counts.values())} row(s) record a failure ({kinds}); each row's message says why "
                     "(the run's results)")
    if turns:
        non_finite = sum(reason.startswith("non-finite update") for reason in turns)
        extra = f", {non_finite} of them a non-finite update left out of the aggregate" if non_finite else ""
        parts.append(f"{len(turns)} client turn(s) failed over the run{extra} (log.txt)")
    return "warning: " + "; ".join(parts) if parts else ""
