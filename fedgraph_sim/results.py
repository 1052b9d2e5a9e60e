"""Run directories and result rows.

``runs/<timestamp>-<name>/``: ``config.yaml`` (resolved, with the seed, library versions and the
project's own version: its commit and whether the tree had uncommitted changes),
``results.jsonl`` (one row per attack x client x round x graph, flushed as written while the run
goes; a killed run leaves its rows here), ``results.parquet`` (the same rows, columnar, once the
run has ended: :func:`seal`), ``summary.csv`` (mean and std per attack, defense and alignment),
``audit/``, ``log.txt``.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import functools
import json
import logging
import math
import os
import subprocess
import threading
import time
from collections import Counter, defaultdict
from importlib import metadata
from pathlib import Path
from typing import Callable, Iterable

from fedgraph_sim.atomic_files import replace_atomically
from fedgraph_sim.errors import ConfigError, DiskFull
from fedgraph_sim.jsonl_files import read_jsonl
from fedgraph_sim.parquet_rows import read_parquet, write_parquet
from fedgraph_sim.metrics import ALIGNMENTS, aggregate, bootstrap_ci, all_metrics, metric, metric_column
from fedgraph_sim.metrics.catalogue import GRANT_OF

log = logging.getLogger(__name__)

#: What a summary entry is per: a sweep's training ``setting`` ("" outside a settings axis) too.
SUMMARY_KEYS = ("dataset", "attack", "setting", "defense", "alignment")
#: A run's rows: streamed to the JSON-lines file while it goes, sealed into Parquet when it ends.
RESULTS_JSONL, RESULTS_PARQUET = "results.jsonl", "results.parquet"



def library_versions() -> dict[str, str]:
    out = {}
    for name in ("fedgraph_sim", "torch", "torch_geometric", "flwr", "opacus", "numpy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


@functools.lru_cache(maxsize=1)
def project_version() -> dict:
    """The code that is running: ``{"commit": <git HEAD or "unknown">, "dirty": <uncommitted
    changes to tracked or untracked, not ignored, files; None when unknown>}``, read once per
    process from the checkout the package was imported from (an installed copy outside a checkout
    says ``unknown``). A table is only as traceable as the commit its rows record."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {"commit": "unknown", "dirty": None}
    status = git("status", "--porcelain")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def provenance(config_sha256: str | None = None) -> dict:
    """What a run directory records besides its config: library versions, the project's version
    (``project_version``) and, given, the resolved config's hash (``config.config_hash``)."""
    return {"versions": library_versions(), "project": project_version(),
            **({"config_sha256": config_sha256} if config_sha256 else {})}


def provenance_line() -> str:
    """One line naming the code behind a table: ``commit <sha> (clean|with uncommitted changes)``."""
    version = project_version()
    state = {True: "with uncommitted changes", False: "clean", None: "state unknown"}[version["dirty"]]
    return f"commit {version['commit'][:12]} ({state})"


def claim_run_dir(path: str | Path) -> Path:
    """``path`` as a run directory of its own: created if absent, refused unless empty, so a run
    never appends its rows to another's."""
    path = check_output_base(path)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        what = "is a file" if not path.is_dir() else "already holds files (a run never writes into another's directory)"
        raise ConfigError(f"output.dir: {path} {what}; give a new or empty directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"output.dir: cannot create {path} ({exc.strerror})") from None
    return path


def check_output_base(base: str | Path) -> Path:
    """``output.dir`` as a folder runs can be created under: a symbolic link that loops or points
    nowhere, or a file in the way, is one line naming it (``mkdir`` would say "File exists")."""
    base = Path(base)
    for part in (base, *base.parents):
        if part.is_symlink() and not part.exists():
            try:
                os.stat(part)
            except OSError as exc:
                why = "loops" if exc.errno == errno.ELOOP else f"points to {os.readlink(part)}, which does not exist"
                raise ConfigError(f"output.dir: {part} is a symbolic link that {why}") from None
        if part.exists() and not part.is_dir():
            raise ConfigError(f"output.dir: {part} is a file, not a directory")
    return base


def new_run_dir(base: str | Path, name: str) -> Path:
    """A new ``<stamp>-<name>[-k]`` directory under ``base``, created atomically: runs started in
    the same second by separate processes each get their own (``mkdir`` fails for all but one,
    and the others take the next suffix)."""
    base = check_output_base(base)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # no permission, read-only disk
        raise ConfigError(f"output.dir: cannot create a run directory under {base} ({exc.strerror})") from None
    for suffix in range(1, 10_000):
        path = base / (f"{stamp}-{name}" if suffix == 1 else f"{stamp}-{name}-{suffix}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
        except OSError as exc:
            raise ConfigError(f"output.dir: cannot create a run directory under {base} ({exc.strerror})") from None
    raise ConfigError(f"output.dir: {base} already holds 10,000 runs named {stamp}-{name}")


class ResultWriter:
    """Appends rows to ``results.jsonl``, each written whole or not at all (a killed run loses
    nothing; on a full disk the part of a row that fitted is cut off again and :class:`DiskFull`
    raised)."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / RESULTS_JSONL
        self._lock = threading.Lock()
        self.rows = 0

    def write(self, row: dict) -> None:
        data = (json.dumps(row, default=_jsonable, allow_nan=True) + "\n").encode()
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                before = os.fstat(fd).st_size
                try:
                    written = 0
                    while written < len(data):
                        written += os.write(fd, data[written:])
                except OSError as exc:
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, before)
                    raise DiskFull(f"{self.path}: {exc.strerror}; the {self.rows} rows written before it are whole "
                                   "and the run stopped") from None
            finally:
                os.close(fd)
            self.rows += 1


def _jsonable(value):
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def read_rows(run_dir: str | Path, on_broken: Callable[[str], None] | None = None) -> list[dict]:
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


def write_rows(run_dir: str | Path, rows: list[dict]) -> Path:
    """``rows`` as ``<run_dir>``'s results, whatever it held before: ``results.parquet``, and no
    ``results.jsonl`` once that is whole (a sweep's merged table; :func:`seal`)."""
    path = write_parquet(rows, Path(run_dir) / RESULTS_PARQUET)
    (Path(run_dir) / RESULTS_JSONL).unlink(missing_ok=True)
    return path


def federation_key(row: dict) -> tuple:
    """Rows of one federation share it: a sweep cell id is ``<federation id>__<attack>``."""
    cell = row.get("cell")
    origin = cell.rsplit("__", 1)[0] if isinstance(cell, str) else row.get("run")
    return row.get("dataset", ""), row.get("seed"), row.get("defense", "none"), origin


def run_columns(rows: list[dict]) -> dict:
    """Per-federation numbers of a group of rows: test accuracy and (two classes) test AUC, mean ±
    std over the distinct federations (a federation's rows repeat its value), and the largest
    DP-SGD epsilon spent by any attacked client by its attacked round."""
    per_federation = {federation_key(r): r for r in rows if r.get("test_accuracy") is not None}
    accuracy = aggregate(per_federation.values(), "test_accuracy")
    auc = aggregate(per_federation.values(), "test_auc")
    eps = [float(r["defense_epsilon"]) for r in rows if r.get("defense_epsilon") is not None]
    return {"test_accuracy_mean": accuracy["mean"], "test_accuracy_std": accuracy["std"],
            "test_auc_mean": auc["mean"], "test_auc_std": auc["std"],
            "federations": len(per_federation), "defense_epsilon_max": max(eps, default=float("nan"))}


def is_scored(row: dict, alignment: str = ALIGNMENTS[0]) -> bool:
    """Rows with metrics: ``ok`` rows, and timed-out attacks scored on their best graph so far."""
    return row["status"] in ("ok", "timeout") and metric_column(alignment, "gsm0") in row


def is_attempted(row: dict) -> bool:
    """Rows of a graph the attack was run on, whatever came of it (not ``not_applicable``, and a
    failed client turn attacked no graph)."""
    return row.get("graph_id") is not None and row["status"] != "not_applicable"


def _number(value) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value)


def mean_and_gain(rows: list[dict], name: str, alignment: str, *, failures_as_zero: bool = False) -> dict:
    """A metric's mean and its information gain, always over the same graphs: the one convention
    every table follows. ``rows`` are the group's scored rows, or with ``failures_as_zero`` its
    attempted rows, a graph without a value counting 0 (GRAIN's convention). Graphs whose value is
    undefined (AUC without an edge) are left out of both. The prior and the gain are given only
    when every graph the mean covers has them (a granted part, or rows without auxiliary graphs,
    have none); otherwise NaN rather than a gain over fewer graphs than the mean."""
    m, column = metric(name), metric_column(alignment, name)
    values, priors = [], []
    for row in rows:
        value = _number(row.get(column))
        if value is None and failures_as_zero and not is_scored(row, alignment):
            value = 0.0
        if value is None:
            continue
        values.append(value)
        priors.append(None if row.get(GRANT_OF[m.part]) else _number(row.get(f"prior_{column}")))
    out = {"count": len(values), "values": values, "prior": math.nan, "gain": math.nan, "gain_std": math.nan}
    out["mean"], out["std"] = _mean_std(values)
    if values and all(p is not None for p in priors):
        out["gain"], out["gain_std"] = _mean_std([m.gain(v, p) for v, p in zip(values, priors)])
        out["prior"] = sum(priors) / len(priors)
    return out


def shown(rows: list[dict], name: str, alignment: str = ALIGNMENTS[0]) -> dict:
    """The mean (and gain) a table cell, a figure or a verdict shows for a metric of a group of
    rows: for metrics that count failures (GRAIN's GSM family) over every attacked graph with a
    failure as 0, else over the scored rows; :func:`mean_and_gain` either way."""
    if metric(name).counts_failures:
        return mean_and_gain([r for r in rows if is_attempted(r)], name, alignment, failures_as_zero=True)
    return mean_and_gain([r for r in rows if _scored(r)], name, alignment)


def _scored(row: dict) -> bool:
    return row["status"] == "ok" or is_scored(row)


def _mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and population standard deviation (NaN for no values), as ``aggregate`` gives them."""
    if not values:
        return math.nan, math.nan
    mean = sum(values) / len(values)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def summarize(rows: Iterable[dict]) -> list[dict]:
    """Mean, std and count of every catalogue metric per (attack, defense, alignment) over scored
    rows, with the mean prior and the mean information gain over the same graphs
    (:func:`mean_and_gain`); statuses are counted per attack. For metrics that count failures
    (GRAIN's GSM family) also the paper's convention: the mean over every attacked graph with a
    failure (no graph recovered) counted as 0, its bootstrap 95% interval (10 000 resamples), and
    the prior and gain over those same graphs (``_all_`` keys)."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    every: dict[tuple, list[dict]] = defaultdict(list)
    attempted: dict[tuple, list[dict]] = defaultdict(list)
    statuses: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in rows:
        key = (row.get("dataset", ""), row["attack"], row.get("setting") or "", row.get("defense", "none"))
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


def faults(rows: Iterable[dict], failed_turns: Iterable[str] = ()) -> str:
    """One warning line about the rows whose status is a fault (``threat.FAULTS``) and the client
    turns that failed over the whole run (``failed_turns``, their reasons: rows exist only for the
    attacked rounds and clients), or ``""`` when there is neither."""
    from fedgraph_sim.threat import FAULTS  # here: threat loads torch and PyG, results needs neither

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


def write_summary(run_dir: str | Path, summary: list[dict]) -> Path:
    """``summary.csv``, written whole or not at all (a full disk leaves no empty or torn file)."""
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
