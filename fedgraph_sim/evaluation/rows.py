"""The result row: one attacked graph of one update, as ``results.jsonl`` and
``results.parquet`` store it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
        skip = ("defense_report", "extra", "label_guess", "scores", "priors", "info")
        row = {k: v for k, v in vars(self).items() if k not in skip}
        row.update({f"defense_{k}": v for k, v in self.defense_report.items()})
        row.update(self.extra)
        row.update({f"prior_{k}": v for k, v in self.priors.items()})
        if self.scored:
            row["label_guess"] = self.label_guess
            regression = isinstance(self.label_true, float)
            guessed = self.label_guess is not None
            row["label_correct"] = int(self.label_guess == self.label_true) if guessed and not regression else None
            if regression:  # a real target is never guessed exactly: how far off it is
                row["label_error"] = abs(self.label_guess - self.label_true) if guessed else None
            row.update(self.scores)
        row.update({f"info_{k}": v for k, v in self.info.items()})  # how far a failed attack got, too
        return row
