"""Scoring attack outcomes against the ground truth: the only reader of the audit store.

For each :class:`~fedgraph_sim.threat.AttackOutcome` the evaluator opens the audit record of its
update (only now, after the attack has returned), builds one :class:`ResultRow` per graph of the
batch (up to ``attack.max_graphs``), assigns the reconstructions of a batch to its graphs
(``batch.py``), scores each reconstruction with every catalogue metric under
every alignment, puts beside each metric the gradient-free prior's value on the same graph and
the information gain over it, stores the first drawings, and appends the rows to
``results.jsonl``.

What a prior gets is decided here, in one place (:meth:`Evaluator.prior_scores`): each metric's
prior value is the best value any gradient-free prior (``metrics.PRIORS``: see the metric
catalogue) reaches on the very same graph, each prior scored exactly as the attack is, under the
same alignment and with the same node count. Rows the attack attempted but could not score
(failed, crashed, timed out with nothing) carry the priors too, so a summary that counts failures
as 0 compares with the priors on the same graphs.

The priors are given by name as functions ``(update, knowledge with the batch's node counts, seed)
-> one reconstruction per graph``; the runtime builds them from the registered prior attacks. Each
is drawn with the seed its attack call would get (``threat.attack_seed``), so a prior run as an
attack row and the prior beside every other row are the same reconstruction.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

from torch_geometric.data import Data
from torch_geometric.utils import to_dense_adj

from fedgraph_sim.audit import AuditStore
from fedgraph_sim.config import RunConfig, defense_label
from fedgraph_sim.evaluation.batch import batch_assignment
from fedgraph_sim.evaluation.drawings import DrawingStore
from fedgraph_sim.metrics import ALIGNMENTS, all_metrics, metric_column, score_reconstruction
from fedgraph_sim.metrics.catalogue import GRANT_OF
from fedgraph_sim.processes import one_torch_thread
from fedgraph_sim.rows.record import ResultRow, gain_column
from fedgraph_sim.rows.store import ResultWriter
from fedgraph_sim.threat import AttackerKnowledge, AttackOutcome, ObservedUpdate, Reconstruction, attack_seed

Prior = Callable[[ObservedUpdate, AttackerKnowledge, int], list[Reconstruction]]


def _dense(graph: Data):
    return to_dense_adj(graph.edge_index, max_num_nodes=graph.num_nodes)[0]


def _row_info(info: dict) -> dict:
    """The attack's diagnostics that fit a row: numbers and strings, NaN left out."""
    return {k: v for k, v in info.items()
            if isinstance(v, (int, float, str)) and not (isinstance(v, float) and math.isnan(v))}


def _reads(hints_read: frozenset[str] | None) -> dict[str, bool | None]:
    """The row's ``read_*`` columns: which granted hints the attack call read."""
    names = {"node_counts": "read_node_count", "labels": "read_label", "adjacencies": "read_adjacency",
             "features": "read_features", "node_label_counts": "read_node_labels"}
    return {column: None if hints_read is None else hint in hints_read for hint, column in names.items()}


def target_nodes(graph: Data) -> list[int]:
    """The nodes a node-level attack targets: the labelled ones where only some are (GLG's Node-1
    and its batches), else the subgraph's centre.

    Args:
        graph (Data): a node-level subgraph (with ``center``; ``train_mask`` if labelled).
    """
    mask = graph.get("train_mask")
    if mask is not None and not bool(mask.all()):
        return mask.nonzero().view(-1).tolist()
    return [int(graph.center)]


def _target(rec: Reconstruction, graph: Data) -> tuple[list[int], list[int]] | None:
    """(rows of the reconstruction, rows of the truth) of a node-level attack's targets: the rows
    its ``info["targets"]`` (or ``info["target"]``) names and :func:`target_nodes`."""
    if "center" not in graph:
        return None
    if "targets" in rec.info:
        return list(rec.info["targets"]), target_nodes(graph)
    if "target" in rec.info:
        return [int(rec.info["target"])], target_nodes(graph)
    return None


def _prior_target(graph: Data) -> tuple[list[int], list[int]] | None:
    """A prior's guess for every target is its row 0 (it knows no target apart from another)."""
    if "center" not in graph:
        return None
    nodes = target_nodes(graph)
    return [0] * len(nodes), nodes


class Evaluator:
    """Writes rows to ``run_dir``; reads ground truth from ``audit_dir`` (default ``run_dir``,
    another run's directory when replaying captured updates). ``extra_columns`` are added to
    every row (a sweep cell's defense setting, the federation's test accuracy). Calling it with an
    :class:`~fedgraph_sim.threat.AttackOutcome` scores it (:meth:`score`) and appends the rows.

    Args:
        config (RunConfig): the run's config.
        run_dir (str or Path): where ``results.jsonl`` and the drawings go.
        knowledge (AttackerKnowledge): the scenario's knowledge (schema, auxiliary graphs).
        priors (dict[str, Prior]): the gradient-free priors by name.
        audit_dir (str or Path, optional): the run whose audit store holds the truth.
            (default: ``run_dir``)
        extra_columns (dict, optional): columns added to every row. (default: :obj:`None`)
    """

    def __init__(self, config: RunConfig, run_dir: str | Path, knowledge: AttackerKnowledge,
                 priors: dict[str, Prior], audit_dir: str | Path | None = None,
                 extra_columns: dict | None = None) -> None:
        self.config, self.knowledge, self.priors = config, knowledge, priors
        self.audit = AuditStore(audit_dir or run_dir)
        self.writer = ResultWriter(run_dir)
        self.drawings = DrawingStore(run_dir, config.output.drawings, knowledge.schema)
        self.extra_columns = dict(extra_columns or {})
        self.rows_written = 0
        self._prior_cache: dict[tuple, dict] = {}
        self._prior_outputs: tuple[tuple | None, dict] = (None, {})

    def __call__(self, outcome: AttackOutcome) -> list[ResultRow]:
        with one_torch_thread():  # as in a sweep job: the same rows from every entry point
            rows = self.score(outcome)
        for row in rows:
            self.writer.write(row)
            self.rows_written += 1
        return rows

    def score(self, outcome: AttackOutcome) -> list[ResultRow]:
        """One row per graph of the outcome's batch (at most ``attack.max_graphs``), scored where
        the attack returned a graph for it (``ok``, or a ``timeout`` with its best so far), else
        carrying the priors; reconstructions are matched to graphs first (:func:`batch_assignment`).
        A graph left without a reconstruction turns an ``ok`` row ``failed`` (``error`` when the
        attack returned none). A failed client turn gives one row (:meth:`failure_row`).

        Args:
            outcome (AttackOutcome): what one attack call on one update produced.
        """
        if outcome.update is None:
            return [self.failure_row(outcome)]
        update, recs = outcome.update, outcome.reconstructions
        record = self.audit.read(update.round, update.client_key, update.members)  # only after the attack returned
        graphs = record.graphs[: self.config.attack.max_graphs]
        returned = len(recs)
        if len(graphs) > 1 and recs:  # which reconstruction is which graph of the batch
            recs = [None if j is None else recs[j]
                    for j in batch_assignment(recs[: len(record.graphs)], graphs, self.knowledge.schema)]
        rows = []
        for i, graph in enumerate(graphs):
            row = self.base_row(outcome, i, graph, len(graphs))
            if row.status == "ok" and (i >= len(recs) or recs[i] is None):
                row.status, row.message = (("failed", f"the attack returned {returned} graphs for {len(graphs)}; "
                                            "none was matched to this one") if returned else
                                           ("error", f"attack returned {returned} graphs for {len(graphs)}"))
            # ok rows, and timed-out attacks that returned their best graph so far, are scored
            if row.status == "ok" or (row.status == "timeout" and i < len(recs) and recs[i] is not None):
                self.score_graph(row, update, i, record.graphs, recs[i])
                self.drawings.keep(row, graph, recs[i])
            elif row.status != "not_applicable":  # attempted: failures count 0 beside these priors
                row.priors = self.prior_scores(update, i, record.graphs)
                row.info = _row_info(outcome.info)
            rows.append(row)
        return rows

    def base_row(self, outcome: AttackOutcome, index: int, graph: Data, graphs: int) -> ResultRow:
        """The row of one graph before scoring: the run, update, attack, defense, hints and status
        columns (the call's seconds split evenly over the graphs).

        Args:
            outcome (AttackOutcome): the attack call (with an update).
            index (int): the graph's position in the batch.
            graph (Data): the true graph.
            graphs (int): the rows the outcome gives.
        """
        update, knowledge, config = outcome.update, outcome.knowledge, self.config
        return ResultRow(
            run=config.name, dataset=config.data.dataset, seed=config.seed, round=update.round,
            client=update.client_key, observed=update.observed,
            aggregated_clients=int(update.metrics.get("clients", 1)),
            dropped_clients=int(update.metrics.get("dropped", 0)), batch_index=index,
            graph_id=int(graph.graph_id), num_nodes=graph.num_nodes, attack=outcome.attack,
            defense=defense_label(config.defenses), defense_stack=config.defenses,
            status=outcome.status, message=outcome.message, seconds=outcome.seconds / max(graphs, 1),
            update_kind=update.kind, exact_gradient=update.exact, batch_size=update.batch_size,
            local_steps=update.local_steps, attack_input="gradient" if update.exact else "pseudo_gradient",
            aux=knowledge.aux_scenario, hint_node_count=knowledge.node_counts is not None,
            hint_label=knowledge.labels is not None, hint_adjacency=knowledge.adjacencies is not None,
            hint_features=knowledge.features is not None, hint_per_node_gradients=update.per_node is not None,
            hint_node_labels=knowledge.node_label_counts is not None,
            **_reads(outcome.hints_read), node_order=config.data.node_order, label_true=graph.y.view(-1)[0].item(),
            defense_report={k[8:].replace("-", "_"): v for k, v in update.metrics.items()
                            if k.startswith("defense-")},
            extra=self.extra_columns)

    def failure_row(self, outcome: AttackOutcome) -> ResultRow:
        """A failed client turn: the row that says this attack had nothing to attack, and why.

        Args:
            outcome (AttackOutcome): a ``client_failed`` outcome (with ``failure``, no update).
        """
        config, failure, knowledge = self.config, outcome.failure, outcome.knowledge
        return ResultRow(
            run=config.name, dataset=config.data.dataset, seed=config.seed, round=failure.round,
            client=failure.client_key, observed="client", aggregated_clients=None, dropped_clients=None,
            batch_index=None, graph_id=None, num_nodes=None,
            attack=outcome.attack, defense=defense_label(config.defenses), defense_stack=config.defenses,
            status=outcome.status, message=outcome.message, seconds=0.0,
            update_kind="gradient" if config.train.mode == "fedsgd" else "weights", exact_gradient=None,
            batch_size=config.train.batch_size, local_steps=config.train.local_steps, attack_input="none",
            aux=knowledge.aux_scenario,
            hint_node_count=config.threat.node_count, hint_label=config.threat.label,
            hint_adjacency=bool(config.threat.adjacency_known), hint_features=bool(config.threat.features_known),
            hint_per_node_gradients=config.threat.per_node_gradients, hint_node_labels=config.threat.node_labels,
            **_reads(None),
            node_order=config.data.node_order,
            label_true=None, extra=self.extra_columns)

    def score_graph(self, row: ResultRow, update: ObservedUpdate, index: int, graphs: list[Data],
                    rec: Reconstruction) -> None:
        """Graph ``index`` of the update's batch ``graphs``: every catalogue metric per alignment,
        with the prior and the gain beside each. A metric of a part the threat model handed over
        (node features with ``threat.features_known``, structure with ``threat.adjacency_known``)
        gets no gain: the server knew that part from the grant, not from the update.

        Args:
            row (ResultRow): the graph's row, filled in place (scores, priors, label guess, info).
            update (ObservedUpdate): the attacked update.
            index (int): the graph's position in the batch.
            graphs (list[Data]): the batch's true graphs.
            rec (Reconstruction): the reconstruction matched to the graph.
        """
        row.priors, graph = self.prior_scores(update, index, graphs), graphs[index]
        row.label_guess = rec.label
        by_alignment = score_reconstruction(rec.x, rec.adj, graph.x, _dense(graph), schema=self.knowledge.schema,
                                            entries=self.config.metrics.entries, target=_target(rec, graph))
        for alignment, scores in by_alignment.items():
            for entry in all_metrics():
                if entry.name not in scores:
                    continue
                column = metric_column(alignment, entry.name)
                row.scores[column] = scores[entry.name]
                if column in row.priors and not getattr(row, GRANT_OF[entry.part]):
                    row.scores[gain_column(column)] = entry.gain(scores[entry.name], row.priors[column])
            row.scores[metric_column(alignment, "structure_skipped")] = scores["structure_skipped"]
        row.info = _row_info(rec.info)
        row.attack_input = str(rec.info.get("attack_input", row.attack_input))

    def prior_scores(self, update: ObservedUpdate, index: int, graphs: list[Data]) -> dict[str, float]:
        """Each metric's prior on graph ``index`` of the update, per alignment: the best of the
        priors, each scored like the attack (cached across attacks), so every row can carry its
        information gain. Empty without auxiliary graphs; NaN for a metric undefined on the graph.

        Args:
            update (ObservedUpdate): the attacked update.
            index (int): the graph's position in the batch.
            graphs (list[Data]): the batch's true graphs.

        Returns:
            Metric column (``<alignment>_<metric>``) -> the best prior's value.
        """
        key = (update.round, update.client_key, index)
        if key not in self._prior_cache:
            scores: dict[str, float] = {}
            if self.knowledge.aux_graphs:
                graph = graphs[index]
                by_prior = {name: score_reconstruction(rec.x, rec.adj, graph.x, _dense(graph),
                                                       schema=self.knowledge.schema,
                                                       entries=self.config.metrics.entries,
                                                       target=_prior_target(graph))
                            for name, rec in ((n, recs[index])
                                              for n, recs in self.prior_outputs(update, graphs).items())}
                for entry in all_metrics():
                    for alignment in ALIGNMENTS:
                        values = [v for v in (by_prior[p][alignment].get(entry.name) for p in by_prior)
                                  if v is not None and not math.isnan(v)]
                        # NaN where the metric is undefined on this graph (AUC without an edge)
                        scores[metric_column(alignment, entry.name)] = entry.best(values) if values else math.nan
            self._prior_cache[key] = scores
        return self._prior_cache[key]

    def prior_outputs(self, update: ObservedUpdate, graphs: list[Data]) -> dict[str, list[Reconstruction]]:
        """Every prior's reconstructions of the update's graphs (the latest update's kept), each
        drawn with the seed its attack call would get and the graphs' node counts as a hint.

        Args:
            update (ObservedUpdate): the attacked update.
            graphs (list[Data]): the batch's true graphs.
        """
        key = (update.round, update.client_key)
        if self._prior_outputs[0] != key:
            hinted = self.knowledge.with_hints(node_counts=[g.num_nodes for g in graphs])
            self._prior_outputs = key, {
                name: prior(update, hinted, attack_seed(self.config.seed, update.round, update.client_key, name))
                for name, prior in self.priors.items()}
        return self._prior_outputs[1]
