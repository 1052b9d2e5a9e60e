"""The result row, one attacked graph of one update: the typed record the evaluator builds
(:class:`ResultRow`), the flat form the row store keeps and every reader gets back (:class:`Row`:
``ResultRow.as_dict``, plus the columns a sweep and the report add), and the names of the columns
derived from others (a metric column's prior and gain, a sweep cell's federation).

The key names live here: a reader names the core columns by :class:`Row`'s keys and builds the derived
ones with the functions below, never with a spelling of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict


@dataclass
class ResultRow:
    """One attacked graph: the run and the update it came from, the attack and the defense stack,
    the threat model it ran under, how the call went, and, when scored, every catalogue metric per
    alignment with the prior's value and the information gain on the same graph.

    Unscored rows (``not_applicable``, ``error``, ``nan``, ``failed``, ``invalid_output``,
    ``crashed``, a ``timeout`` that returned nothing) have ``scores`` empty and no ``label_guess``;
    the attempted ones (all but ``not_applicable``) still carry the priors' values on their graph.
    A ``client_failed`` row has no graph either (``graph_id``, ``num_nodes``, ``label_true`` null).

    ``hint_*`` say what the threat config granted the attack; ``read_*`` what the attack actually
    read of it (a granted hint the attack never looked at taught it nothing).
    """

    run: str
    dataset: str
    seed: int
    round: int
    client: int | None  # the client's key; -1 for the secure-aggregation aggregate
    observed: str  # client | secure_aggregate (the strategy's sum) | secaggplus_aggregate (Flower's SecAgg+)
    # how many clients' replies the observed update holds (1 for a client's), and how many sampled
    # clients dropped out of the round's SecAgg+ protocol; None on a failed turn's row
    aggregated_clients: int | None
    dropped_clients: int | None
    batch_index: int | None
    graph_id: int | None
    num_nodes: int | None
    attack: str
    defense: str  # the stack's label, e.g. prune(p=0.9)+dp_gradients(sigma=0.1)
    defense_stack: list
    status: str
    message: str
    seconds: float  # the attack call's wall time, split evenly over the batch's graphs
    update_kind: str  # gradient | weights
    exact_gradient: bool | None
    batch_size: int
    local_steps: int
    # what the attack matched: gradient (exact), simulated_local_training (a FedAvg update's steps
    # simulated), pseudo_gradient (a FedAvg update read as one gradient: an approximation)
    attack_input: str
    aux: str  # the auxiliary scenario
    hint_node_count: bool
    hint_label: bool
    hint_adjacency: bool
    hint_features: bool
    hint_per_node_gradients: bool  # a leaky client's per-node gradients were observed
    hint_node_labels: bool  # a node classifier's label counts per graph
    read_node_count: bool | None  # None: no attack call read anything (a failed client turn)
    read_label: bool | None
    read_adjacency: bool | None
    read_features: bool | None
    read_node_labels: bool | None
    node_order: str
    label_true: int | float | None  # a class index, or a regression target (float)
    defense_report: dict[str, Any] = field(default_factory=dict)  # defense_<key>: noise variance, epsilon
    extra: dict[str, Any] = field(default_factory=dict)  # sweep columns, the federation's utility
    label_guess: int | float | None = None
    scores: dict[str, float] = field(default_factory=dict)  # metric and gain_ columns
    priors: dict[str, float] = field(default_factory=dict)  # the prior's value per metric column
    info: dict[str, Any] = field(default_factory=dict)  # the attack's diagnostics

    @property
    def scored(self) -> bool:
        return bool(self.scores)

    def as_dict(self) -> dict[str, Any]:
        """The flat row the store keeps (:class:`Row`): the fields, each defense report entry as
        ``defense_<key>``, the ``extra`` columns, each prior as :func:`prior_column`, and the
        attack's diagnostics as ``info_<key>``. A scored row adds ``label_guess``, ``label_correct``
        (1 or 0; None for a regression target or no guess), for a regression target
        ``label_error`` (the absolute error; None without a guess), and its ``scores`` columns."""
        skip = ("defense_report", "extra", "label_guess", "scores", "priors", "info")
        row = {k: v for k, v in vars(self).items() if k not in skip}
        row.update({f"{DEFENSE_PREFIX}{k}": v for k, v in self.defense_report.items()})
        row.update(self.extra)
        row.update({prior_column(k): v for k, v in self.priors.items()})
        if self.scored:
            row["label_guess"] = self.label_guess
            regression = isinstance(self.label_true, float)
            guessed = self.label_guess is not None
            row["label_correct"] = int(self.label_guess == self.label_true) if guessed and not regression else None
            if regression:  # a real target is never guessed exactly: how far off it is
                row["label_error"] = abs(self.label_guess - self.label_true) if guessed else None
            row.update(self.scores)
        row.update({f"{INFO_PREFIX}{k}": v for k, v in self.info.items()})  # how far a failed attack got, too
        return row


#: ResultRow's fields that ``as_dict`` spreads into prefixed or unprefixed columns of their own.
SPREAD_FIELDS = ("defense_report", "extra", "scores", "priors", "info")
DEFENSE_PREFIX, INFO_PREFIX = "defense_", "info_"  # a defense's report; the attack's diagnostics
#: A sweep cell's id: ``<federation id>__<attack>-<hash>``.
CELL_SEPARATOR = "__"


class Row(TypedDict, total=False):
    """A stored result row as read back (``rows.store.read_rows``): the typed core columns. Every
    key is optional to a reader (rows written by older versions, or built by hand, lack some), and
    a row has more columns than these: each scored metric per alignment (``<alignment>_<metric>``,
    ``metrics.metric_column``) with its :func:`prior_column` and :func:`gain_column`, a defense's
    report (``defense_<key>``), the attack's diagnostics (``info_<key>``)."""

    # ResultRow's own columns (the types are its fields'; a test keeps the two the same)
    run: str
    dataset: str
    seed: int
    round: int
    client: int | None
    observed: str
    aggregated_clients: int | None
    dropped_clients: int | None
    batch_index: int | None
    graph_id: int | None
    num_nodes: int | None
    attack: str
    defense: str
    defense_stack: list
    status: str
    message: str
    seconds: float
    update_kind: str
    exact_gradient: bool | None
    batch_size: int
    local_steps: int
    attack_input: str
    aux: str
    hint_node_count: bool
    hint_label: bool
    hint_adjacency: bool
    hint_features: bool
    hint_per_node_gradients: bool
    hint_node_labels: bool
    read_node_count: bool | None
    read_label: bool | None
    read_adjacency: bool | None
    read_features: bool | None
    read_node_labels: bool | None
    node_order: str
    label_true: int | float | None
    # a scored row's label guess; whether it is right (a class) or how far off (a regression target)
    label_guess: int | float | None
    label_correct: int | None
    label_error: float | None
    # DP-SGD's epsilon spent by the attacked client by its round (its defense report)
    defense_epsilon: float | None
    # a sweep cell's columns: the sweep, the cell, its federation's defense and training setting,
    # and an audit's threat level
    sweep: str
    cell: str
    defense_family: str
    defense_param: str | None
    defense_strength: float
    setting: str
    threat_level: str
    # the federation's final utility (``utility.final_utility``), on a replay's rows or added by the report
    test_accuracy: float | None
    test_auc: float | None
    test_loss: float | None
    test_rmse: float | None
    test_r2: float | None


def prior_column(column: str) -> str:
    """The column of the best gradient-free prior's value for metric column ``column``.

    Args:
        column (str): a metric column (``metrics.metric_column``), e.g. ``identity_adj_auc``.

    Returns:
        ``prior_<column>``.
    """
    return f"prior_{column}"


def gain_column(column: str) -> str:
    """The column of the attack's information gain over that prior for metric column ``column``.

    Args:
        column (str): a metric column (``metrics.metric_column``), e.g. ``identity_adj_auc``.

    Returns:
        ``gain_<column>``.
    """
    return f"gain_{column}"


def group_key(row: Row) -> tuple[str, str, str, str]:
    """``(dataset, attack, setting, defense)``: what the summaries group rows by; a row without a
    dataset or a training setting has ``""`` there, one without a defense ``"none"``.

    Args:
        row (Row): a result row; it must have an ``attack``.
    """
    return row.get("dataset", ""), row["attack"], row.get("setting") or "", row.get("defense", "none")


def federation_id(row: Row) -> str | None:
    """The id of the sweep federation a cell's row was attacked in (its directory under
    ``federations/``); None for a row outside a sweep.

    Args:
        row (Row): a result row; a sweep's has a ``cell`` ``<federation id>__<attack>-<hash>``.
    """
    cell = row.get("cell")
    return cell.rsplit(CELL_SEPARATOR, 1)[0] if isinstance(cell, str) else None
