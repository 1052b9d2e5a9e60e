"""The metric catalogue: every reconstruction metric declared once.

A :class:`Metric` holds a metric's column name, its short header, its direction, the part of the
graph it scores (node features or structure: a part the threat model grants earns no gain) and
the function that computes it. Result rows, the
information gain, summaries, terminal and markdown tables, reproduction tables and figures are all
derived from :func:`all_metrics`: the package's metrics, then those added with
:func:`register_metric`. Adding a metric is one module: in this package, a module that computes it
and calls :func:`register_metric` at module level (found by reading the package's source, and
imported when the catalogue is first read, in every process); outside it, a ``plugins:`` module
doing the same. Where a metric is shown by default is the entry's
own ``shown`` (:data:`PLACES`; :func:`shown_in` lists a place's).

**Sign convention.** The information gain over the prior is positive when the attack knows more
than the prior on the same graph: ``value - prior`` for metrics where higher means a closer
reconstruction (AUC, accuracy, GSM), ``prior - value`` for distances and errors (feature MSE,
degree and spectral distance).

**What a prior gets.** A prior gets every advantage the attack's score gets. Each metric's
prior value on a graph is the best value that any gradient-free prior (:data:`PRIORS`) reaches
on that graph, scored exactly as the attack is: the same alignment,
the same node count. The constant priors (``majority_type``, ``aux_mean_adjacency``) are the best
guesses when nodes are compared by position; ``aux_sample`` (an auxiliary graph of the same size)
is varied, so it profits, as any varied reconstruction does, from alignments that pair nodes by
looking at the truth (``matched``, ``gsm``, GSM's own matching). Picking the better prior per
graph with hindsight can only lower a gain, never raise it.

**Counting failures.** GRAIN (Drencheva et al., ICLR 2025) reports GSM and FULL over every
attacked graph, a graph with no reconstruction counting 0, in percent with a bootstrap interval.
Metrics with ``counts_failures`` get that summary too (``<metric>_all_mean``, ``_ci_low``,
``_ci_high``) and tables show them that way.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Literal

from fedgraph_sim import registry
from fedgraph_sim.metrics import reconstruction as r

MAJORITY_TYPE, AUX_MEAN_ADJACENCY, AUX_SAMPLE = "majority_type", "aux_mean_adjacency", "aux_sample"  # attacks/priors.py
#: The gradient-free priors; every metric's prior value on a graph is the best of theirs.
PRIORS: tuple[str, ...] = (MAJORITY_TYPE, AUX_MEAN_ADJACENCY, AUX_SAMPLE)
#: The row column saying the threat config handed a part over; such a part's metrics get no gain
#: (the server knew it from the grant, not from the update).
GRANT_OF: dict[str, str] = {"nodes": "hint_features", "structure": "hint_adjacency"}


#: Where a metric can be shown by default: ``terminal`` (the summary a run or sweep prints),
#: ``report`` (report.md's tables and its per-metric heatmaps, frontiers and Pareto figures; a
#: metric that ``counts_failures`` only where some row was scored for it), ``rounds`` (the
#: leakage-vs-round figure). Every metric is in every row and in summary.csv regardless.
PLACES: tuple[str, ...] = ("terminal", "report", "rounds")


@dataclass(frozen=True)
class Metric:
    """One catalogue entry.

    Args:
        name (str): the metric's name; its row column is ``<alignment>_<name>``.
        short (str): its table header.
        better (str): ``higher`` or ``lower``: which way a closer reconstruction (more leakage)
            moves it.
        part (str): what it scores: ``nodes`` (node features) or ``structure`` (:data:`GRANT_OF`).
        compute (Callable[[Aligned], float]): computes it on an aligned reconstruction.
        counts_failures (bool, optional): also summarise it over every attacked graph, failures
            counting 0. (default: :obj:`False`)
        shown (tuple[str, ...], optional): the :data:`PLACES` that show it by default.
            (default: ``()``)
    """

    name: str  # the row column is ``<alignment>_<name>``
    short: str  # table header
    better: Literal["higher", "lower"]  # which way a closer reconstruction (more leakage) moves it
    part: Literal["nodes", "structure"]  # what it scores: node features, or structure (``GRANT_OF``)
    compute: Callable[[r.Aligned], float]
    counts_failures: bool = False  # also summarised over every attacked graph, failures as 0
    shown: tuple[str, ...] = ()  # the PLACES that show it by default

    def __post_init__(self) -> None:
        unknown = [p for p in self.shown if p not in PLACES]
        if unknown:
            raise ValueError(f"metric {self.name}: unknown places {unknown}; valid: {', '.join(PLACES)}")
        if self.better not in ("higher", "lower") or self.part not in GRANT_OF:
            raise ValueError(f"metric {self.name}: better is 'higher' or 'lower' (got {self.better!r}), part one "
                             f"of {', '.join(GRANT_OF)} (got {self.part!r})")

    def best(self, values) -> float:
        """The closest of ``values`` (the priors' scores on one graph) in this metric's direction.

        Args:
            values (Iterable[float]): the values, at least one (NaN left out by the caller).
        """
        return max(values) if self.better == "higher" else min(values)

    def gain(self, value: float, prior: float) -> float:
        """Information gain over the prior; + means the attack knows more than the prior.

        Args:
            value (float): the attack's value.
            prior (float): the prior's value on the same graph and alignment.
        """
        return value - prior if self.better == "higher" else prior - value


def _gsm(key: str) -> Callable[[r.Aligned], float]:
    return lambda p: p.gsm[key]


#: The package's metrics, in the papers' order of interest, which tables and figures follow.
_BUILT_IN: tuple[Metric, ...] = (
    Metric("node_type_accuracy", "type ACC", "higher", "nodes", r.node_type_accuracy,
           shown=("terminal", "report", "rounds")),
    Metric("adj_auc", "AUC", "higher", "structure", r.adj_auc, shown=("terminal", "report", "rounds")),
    Metric("adj_ap", "AP", "higher", "structure", r.adj_ap, shown=("terminal", "report")),
    Metric("feature_mse", "feat MSE", "lower", "nodes", r.feature_mse, shown=("terminal", "report")),
    Metric("edge_accuracy", "edge ACC", "higher", "structure", r.edge_accuracy, shown=("report",)),
    Metric("degree_distance", "deg dist", "lower", "structure", r.degree_distance),
    Metric("spectral_distance", "spec dist", "lower", "structure", r.spectral_distance),
    Metric("gsm0", "GSM-0", "higher", "nodes", _gsm("gsm0"), counts_failures=True, shown=("terminal", "report")),
    Metric("gsm1", "GSM-1", "higher", "structure", _gsm("gsm1"), counts_failures=True),
    Metric("gsm2", "GSM-2", "higher", "structure", _gsm("gsm2"), counts_failures=True,
           shown=("terminal", "report")),
    Metric("full_iso", "FULL", "higher", "structure", _gsm("full_iso"), counts_failures=True,
           shown=("terminal", "report")),
    Metric("full_repo", "FULL (GSM-1 = 1)", "higher", "structure", _gsm("full_repo"),
           counts_failures=True),
    # GLG's (Sinha et al., arXiv:2411.19440, Sec. 5 and App. F, with the fixes of its definitions)
    Metric("feature_rnmse", "RNMSE", "lower", "nodes", r.feature_rnmse),
    Metric("target_rnmse", "target RNMSE", "lower", "nodes", r.target_rnmse),
    Metric("adj_mae", "MAE", "lower", "structure", r.adj_mae),
    Metric("adj_ap_balanced", "AP 1:1", "higher", "structure", r.adj_ap_balanced),
    Metric("edge_precision", "precision", "higher", "structure", r.edge_precision),
    # FedGIG's (Xiao et al., arXiv:2412.18513, Table I; the paper defines none of its metrics)
    Metric("edge_jaccard", "Jaccard", "higher", "structure", r.edge_jaccard),
    Metric("adj_mse", "adj MSE", "lower", "structure", r.adj_mse),
)
_plugged: list[Metric] = []  # register_metric's, in registration order


def register_metric(entry: Metric) -> Metric:
    """Add a plugin's metric after the package's: every row then carries it under each alignment
    with its prior and gain, and the listings and tables know it. Registering the same entry again
    (a module imported twice) changes nothing; another with a taken name or header is refused.

    Args:
        entry (Metric): the metric.

    Returns:
        ``entry``.

    Raises:
        ValueError: when another metric has its name or header.
    """
    taken = [m for m in all_metrics() if m.name == entry.name or m.short == entry.short]
    if taken == [entry]:
        return entry
    if taken:
        raise ValueError(f"metric {entry.name} ({entry.short}): the name or header is taken by {taken[0].name}")
    _plugged.append(entry)
    return entry


_modules_loaded = False


def _load_metric_modules() -> None:
    """Import, once per process, this package's modules that add a metric."""
    global _modules_loaded
    if not _modules_loaded:
        _modules_loaded = True
        for module in registry.modules_calling(__package__, "register_metric"):
            importlib.import_module(module)


def all_metrics() -> tuple[Metric, ...]:
    """Every metric: the catalogue's, then those its package's modules and plugins add."""
    _load_metric_modules()
    return _BUILT_IN + tuple(_plugged)


def metric_names() -> tuple[str, ...]:
    """The names of :func:`all_metrics`, in catalogue order."""
    return tuple(m.name for m in all_metrics())


def shown_in(place: str) -> tuple[str, ...]:
    """The metrics ``place`` shows by default, in catalogue order.

    Args:
        place (str): one of :data:`PLACES`.
    """
    return tuple(m.name for m in all_metrics() if place in m.shown)


def metric(name: str) -> Metric:
    """The catalogue entry of ``name`` (KeyError for an unknown name).

    Args:
        name (str): the metric's name (``adj_auc``), not its column.
    """
    for entry in all_metrics():
        if entry.name == name:
            return entry
    raise KeyError(name)


def metric_column(alignment: str, name: str) -> str:
    """A metric's result-row column under an alignment, e.g. ``identity_adj_auc``; the prior's
    value and the gain over it are ``prior_<column>`` and ``gain_<column>``.

    Args:
        alignment (str): one of :data:`~fedgraph_sim.metrics.alignment.ALIGNMENTS`.
        name (str): the metric's name.
    """
    return f"{alignment}_{name}"


def direction_note(metrics: tuple[str, ...] | list[str]) -> str:
    """One sentence for a table caption: which of ``metrics`` leak more when higher or lower.

    Args:
        metrics (tuple[str, ...] or list[str]): metric names, named by their headers.
    """
    higher = [metric(m).short for m in metrics if metric(m).better == "higher"]
    lower = [metric(m).short for m in metrics if metric(m).better == "lower"]
    parts = [f"{', '.join(higher)}: higher means more leakage"] * bool(higher)
    parts += [f"{', '.join(lower)}: lower means more leakage"] * bool(lower)
    return "; ".join(parts) + "."


def prior_note(metrics: tuple[str, ...] | list[str]) -> str:
    """What ``metrics`` are compared with, for captions.

    Args:
        metrics (tuple[str, ...] or list[str]): metric names, named by their headers.
    """
    return (f"the best of {', '.join(PRIORS)} on each graph, scored like the attack (same alignment, "
            f"same node count), for {', '.join(metric(m).short for m in metrics)}")
