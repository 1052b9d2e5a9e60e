"""The metric catalogue: every reconstruction metric declared once.

A :class:`Metric` holds a metric's column name, its short header, its direction, the
gradient-free prior it is compared with and the function that computes it. Result rows, the
information gain, summaries, terminal and markdown tables, reproduction tables and figures are all
derived from :data:`CATALOGUE`; adding a metric is one entry here and its function.

**Sign convention.** The information gain over the prior is positive when the attack knows more
than the prior on the same graph: ``value - prior`` for metrics where higher means a closer
reconstruction (AUC, accuracy, GSM), ``prior - value`` for distances and errors (feature MSE,
degree and spectral distance).

**Counting failures.** GRAIN (Drencheva et al., ICLR 2025) reports GSM and FULL over every
attacked graph, a graph with no reconstruction counting 0, in percent with a bootstrap interval.
Metrics with ``counts_failures`` get that summary too (``<metric>_all_mean``, ``_ci_low``,
``_ci_high``) and tables show them that way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

from fedgraph_sim.metrics import reconstruction as r

MAJORITY_TYPE, AUX_MEAN_ADJACENCY = "majority_type", "aux_mean_adjacency"  # attacks/priors.py


@dataclass(frozen=True)
class Metric:
    name: str  # the row column is ``<alignment>_<name>``
    short: str  # table header
    better: Literal["higher", "lower"]  # which way a closer reconstruction (more leakage) moves it
    prior: str  # the gradient-free prior it is compared with on the same graph
    compute: Callable[[r.Aligned], float]
    counts_failures: bool = False  # also summarised over every attacked graph, failures as 0

    def gain(self, value: float, prior: float) -> float:
        """Information gain over the prior; + means the attack knows more than the prior."""
        return value - prior if self.better == "higher" else prior - value


def _gsm(key: str) -> Callable[[r.Aligned], float]:
    return lambda p: p.gsm[key]


CATALOGUE: tuple[Metric, ...] = (
    Metric("feature_mse", "feat MSE", "lower", MAJORITY_TYPE, r.feature_mse),
    Metric("node_type_accuracy", "type ACC", "higher", MAJORITY_TYPE, r.node_type_accuracy),
    Metric("adj_auc", "AUC", "higher", AUX_MEAN_ADJACENCY, r.adj_auc),
    Metric("adj_ap", "AP", "higher", AUX_MEAN_ADJACENCY, r.adj_ap),
    Metric("edge_accuracy", "edge ACC", "higher", AUX_MEAN_ADJACENCY, r.edge_accuracy),
    Metric("degree_distance", "deg dist", "lower", AUX_MEAN_ADJACENCY, r.degree_distance),
    Metric("spectral_distance", "spec dist", "lower", AUX_MEAN_ADJACENCY, r.spectral_distance),
    Metric("gsm0", "GSM-0", "higher", MAJORITY_TYPE, _gsm("gsm0"), counts_failures=True),
    Metric("gsm1", "GSM-1", "higher", AUX_MEAN_ADJACENCY, _gsm("gsm1"), counts_failures=True),
    Metric("gsm2", "GSM-2", "higher", AUX_MEAN_ADJACENCY, _gsm("gsm2"), counts_failures=True),
    Metric("full_iso", "FULL", "higher", AUX_MEAN_ADJACENCY, _gsm("full_iso"), counts_failures=True),
    Metric("full_repo", "FULL (GSM-1 = 1)", "higher", AUX_MEAN_ADJACENCY, _gsm("full_repo"),
           counts_failures=True),
    # GLG's (Sinha et al., arXiv:2411.19440, Sec. 5 and App. F, with the fixes of its definitions)
    Metric("feature_rnmse", "RNMSE", "lower", MAJORITY_TYPE, r.feature_rnmse),
    Metric("target_rnmse", "target RNMSE", "lower", MAJORITY_TYPE, r.target_rnmse),
    Metric("adj_mae", "MAE", "lower", AUX_MEAN_ADJACENCY, r.adj_mae),
    Metric("adj_ap_balanced", "AP 1:1", "higher", AUX_MEAN_ADJACENCY, r.adj_ap_balanced),
    Metric("edge_precision", "precision", "higher", AUX_MEAN_ADJACENCY, r.edge_precision),
    # FedGIG's (Xiao et al., arXiv:2412.18513, Table I; the paper defines none of its metrics)
    Metric("edge_jaccard", "Jaccard", "higher", AUX_MEAN_ADJACENCY, r.edge_jaccard),
    Metric("adj_mse", "adj MSE", "lower", AUX_MEAN_ADJACENCY, r.adj_mse),
)
METRICS: tuple[str, ...] = tuple(m.name for m in CATALOGUE)
PRIORS: tuple[str, ...] = tuple(dict.fromkeys(m.prior for m in CATALOGUE))
_BY_NAME = {m.name: m for m in CATALOGUE}


def metric(name: str) -> Metric:
    """The catalogue entry of ``name`` (KeyError for an unknown name)."""
    return _BY_NAME[name]


def metric_column(alignment: str, name: str) -> str:
    """A metric's result-row column under an alignment, e.g. ``identity_adj_auc``; the prior's
    value and the gain over it are ``prior_<column>`` and ``gain_<column>``."""
    return f"{alignment}_{name}"


def direction_note(metrics: tuple[str, ...] | list[str]) -> str:
    """One sentence for a table caption: which of ``metrics`` leak more when higher or lower."""
    higher = [metric(m).short for m in metrics if metric(m).better == "higher"]
    lower = [metric(m).short for m in metrics if metric(m).better == "lower"]
    parts = [f"{', '.join(higher)}: higher means more leakage"] * bool(higher)
    parts += [f"{', '.join(lower)}: lower means more leakage"] * bool(lower)
    return "; ".join(parts) + "."


def prior_note(metrics: tuple[str, ...] | list[str]) -> str:
    """Which prior each of ``metrics`` is compared with, for captions."""
    by_prior: dict[str, list[str]] = {}
    for name in metrics:
        by_prior.setdefault(metric(name).prior, []).append(metric(name).short)
    return "; ".join(f"{prior} for {', '.join(shorts)}" for prior, shorts in by_prior.items())
