"""Runs the configured attacks on observed updates, scores them, and writes result rows.

For every selected update and attack: check the attack's requirements (``not_applicable`` row if
unmet), run it with a seeded context and a time budget, then, only after it has returned, open the
audit record and score each reconstruction against the graph it claims to recover. Exceptions,
NaNs and spent budgets become ``error``, ``nan`` and ``timeout`` rows, an attack that recovers
nothing by design (``AttackFailed``) a ``failed`` row; the round goes on. A timed-out attack that
still returned its best graph so far is scored (status ``timeout``, metrics present). Rows are
appended (and flushed) as they are produced.
"""

from __future__ import annotations

import json
import logging
import math
import time
import zlib
from pathlib import Path
from typing import Iterable

import torch
from torch_geometric.utils import to_dense_adj

from attacks.base import Attack, AttackContext, AttackFailed, AttackTimeout, Budget, Reconstruction
from fedgraph_sim.audit import AuditStore
from fedgraph_sim.config import RunConfig, defense_label
from attacks.priors import AuxMeanAdjacency, MajorityType
from fedgraph_sim.metrics import PRIOR_OF, score_reconstruction
from fedgraph_sim.results import ResultWriter, metric_column
from fedgraph_sim.threat import AGGREGATE, AttackerKnowledge, ObservedUpdate


log = logging.getLogger(__name__)


def attack_seed(seed: int, round: int, client_key: int, attack: str) -> int:
    return (seed * 1_000_003 + round * 10_007 + client_key * 101 + zlib.crc32(attack.encode())) % 2**62


def _is_finite(rec: Reconstruction) -> bool:
    return bool(torch.isfinite(rec.x).all() and torch.isfinite(rec.adj).all())


def is_selected(config: RunConfig, update: ObservedUpdate) -> bool:
    """Whether ``attack.rounds`` and ``attack.clients`` select this update."""
    sel = config.attack
    return ((sel.rounds == "all" or update.round in sel.rounds)
            and (sel.clients == "all" or update.client_key in sel.clients
                 or update.client_key == AGGREGATE))  # behind secure aggregation: the one update


class AttackRunner:
    """Writes rows to ``run_dir``; reads ground truth from ``audit_dir`` (default ``run_dir``,
    another run's directory when replaying captured updates)."""

    def __init__(self, config: RunConfig, run_dir, knowledge: AttackerKnowledge,
                 attacks: dict[str, Attack], progress=None, audit_dir=None,
                 extra_columns: dict | None = None) -> None:
        self.config, self.knowledge, self.attacks = config, knowledge, attacks
        self.audit = AuditStore(audit_dir or run_dir)
        self.writer = ResultWriter(run_dir)
        self.drawings_dir = Path(run_dir) / "drawings"
        self.extra_columns = dict(extra_columns or {})
        self.progress = progress  # a rich Progress, or None
        self.rows_written = 0
        self.updates_attacked: dict[str, int] = {}
        self._priors = {"majority_type": MajorityType(), "aux_mean_adjacency": AuxMeanAdjacency()}
        self._prior_cache: dict[tuple, dict] = {}
        self.drawings_kept: dict[str, int] = {}

    def __call__(self, updates: Iterable[ObservedUpdate]) -> None:
        updates = [u for u in updates if is_selected(self.config, u)]
        for name, attack in self.attacks.items():
            # Per-round work (e.g. GraphDLG's decoder training) sees the round's updates at once.
            prepare = getattr(attack, "prepare", None)
            if prepare is not None and updates and not self._limit_reached(name):
                seed = attack_seed(self.config.seed, updates[0].round, -1, name)
                try:
                    torch.manual_seed(seed)  # module inits draw from the global RNG: seed it per call
                    prepare(updates, self.knowledge,
                            AttackContext(seed=seed, budget=Budget(self.config.attack.budget_of(name))))
                except Exception as exc:  # reconstruct() retries and reports it in the rows
                    log.warning("%s: per-round preparation failed: %s: %s", name, type(exc).__name__, exc)
        threat = self.config.threat
        for update in updates:
            hints = self.audit.hints(update.round, update.client_key, node_count=threat.node_count,
                                     label=threat.label, adjacency=bool(threat.adjacency_known))
            for name, attack in self.attacks.items():
                if self._limit_reached(name):
                    continue
                granted = threat.adjacency_known is True or name in (threat.adjacency_known or ())
                knowledge = self.knowledge.with_hints(**hints if granted else {**hints, "adjacencies": None})
                self.updates_attacked[name] = self.updates_attacked.get(name, 0) + 1
                for row in self.run_one(name, attack, update, knowledge):
                    self.writer.write(row)
                    self.rows_written += 1

    def _limit_reached(self, name: str) -> bool:
        limit = self.config.attack.limit.get(name)
        return limit is not None and self.updates_attacked.get(name, 0) >= limit

    def run_one(self, name: str, attack: Attack, update: ObservedUpdate,
                knowledge: AttackerKnowledge) -> list[dict]:
        budget = Budget(self.config.attack.budget_of(name))
        status, message, recs = "ok", "", []
        task = None
        if self.progress is not None:
            task = self.progress.add_task(f"{name} r{update.round} c{update.client_key}", total=None)
        ctx = AttackContext(seed=attack_seed(self.config.seed, update.round, update.client_key, name),
                            budget=budget, progress=self._progress_fn(task))
        start = time.perf_counter()
        reason = attack.not_applicable(update, knowledge)
        if reason:
            status, message = "not_applicable", reason
        else:
            try:
                torch.manual_seed(ctx.seed)  # results must not depend on what ran before in this process
                recs = attack.reconstruct(update, knowledge, ctx)
                if not all(_is_finite(r) for r in recs):
                    status, message = "nan", "reconstruction contains NaN or inf"
                elif budget.expired():
                    status, message = "timeout", f"returned after its {budget.seconds:g} s budget"
            except AttackTimeout as exc:
                status, message = "timeout", str(exc)
            except AttackFailed as exc:
                status, message = "failed", str(exc).splitlines()[0]
            except Exception as exc:  # an attack bug must not stop the round
                status, message = "error", f"{type(exc).__name__}: {exc}".splitlines()[0]
        seconds = time.perf_counter() - start
        if task is not None:
            self.progress.remove_task(task)
        return self.score(name, update, knowledge, status, message, recs, seconds)

    def prior_scores(self, update: ObservedUpdate, index: int, graph, knowledge: AttackerKnowledge) -> dict:
        """The gradient-free priors' scores on this very graph (cached across attacks), so every
        row can carry its information gain over them. Empty without auxiliary graphs."""
        key = (update.round, update.client_key, index)
        if key not in self._prior_cache:
            scores = {}
            if knowledge.aux_graphs:
                hinted = knowledge.with_hints(node_counts=[graph.num_nodes])
                ctx = AttackContext(seed=0, budget=Budget(self.config.attack.time_budget))
                recs = {name: prior.reconstruct(update, hinted, ctx)[0] for name, prior in self._priors.items()}
                adj = to_dense_adj(graph.edge_index, max_num_nodes=graph.num_nodes)[0]
                by_prior = {name: score_reconstruction(rec.x, rec.adj, graph.x, adj, schema=knowledge.schema,
                                                       entries=self.config.metrics.entries)
                            for name, rec in recs.items()}
                for metric, prior in PRIOR_OF.items():
                    for alignment, values in by_prior[prior].items():
                        scores[metric_column(alignment, metric)] = values[metric]
            self._prior_cache[key] = scores
        return self._prior_cache[key]

    def keep_drawing(self, name: str, row: dict, graph, rec: Reconstruction) -> None:
        """Store the first ``output.drawings`` reconstructions of each attack beside the truth
        (evaluator output like the audit, never read by attacks) for the report's drawings."""
        kept = self.drawings_kept.get(name, 0)
        if kept >= self.config.output.drawings:
            return
        self.drawings_kept[name] = kept + 1
        schema = self.knowledge.schema
        block = next(b for b in schema.blocks if b.name == schema.type_block)
        self.drawings_dir.mkdir(parents=True, exist_ok=True)
        (self.drawings_dir / f"{name}_{kept}.json").write_text(json.dumps({
            "attack": name, "defense": row["defense"], "dataset": row["dataset"],
            "round": row["round"], "client": row["client"], "graph_id": row["graph_id"],
            "type_block": block.name, "type_values": [str(v) for v in block.values],
            "true_types": schema.node_types(graph.x).tolist(), "true_edge_index": graph.edge_index.tolist(),
            "smiles": getattr(graph, "smiles", None),
            "rec_types": schema.node_types(rec.x.float()).tolist(),
            "rec_adj": rec.adj.detach().double().clamp(0, 1).tolist(),
            "scores": {k: row.get(f"identity_{k}") for k in ("node_type_accuracy", "adj_auc", "adj_ap")},
        }))

    def _progress_fn(self, task):
        if task is None:
            return lambda done, total: None
        return lambda done, total: self.progress.update(task, completed=done, total=total)

    def score(self, name: str, update: ObservedUpdate, knowledge: AttackerKnowledge, status: str,
              message: str, recs: list[Reconstruction], seconds: float) -> list[dict]:
        record = self.audit.read(update.round, update.client_key)  # only after the attack returned
        graphs = record.graphs[: self.config.attack.max_graphs]
        if len(recs) == 1 and recs[0].info.get("batch_embedding"):
            recs = recs * len(graphs)  # one graph decoded from a batch: scored against each
        rows = []
        for i, graph in enumerate(graphs):
            row = {
                "run": self.config.name, "dataset": self.config.data.dataset, "seed": self.config.seed,
                "round": update.round, "client": update.client_key, "observed": update.observed,
                "batch_index": i, "graph_id": int(graph.graph_id), "num_nodes": graph.num_nodes,
                "attack": name, "defense": defense_label(self.config.defenses),
                "defense_stack": self.config.defenses,
                **{f"defense_{k[8:].replace('-', '_')}": v for k, v in update.metrics.items()
                   if k.startswith("defense-")},
                "status": status, "message": message, "seconds": seconds / max(len(graphs), 1),
                "update_kind": update.kind, "exact_gradient": update.exact,
                "batch_size": update.batch_size, "aux": knowledge.aux_scenario,
                "hint_node_count": knowledge.node_counts is not None,
                "hint_label": knowledge.labels is not None,
                "hint_adjacency": knowledge.adjacencies is not None,
                "node_order": self.config.data.node_order,
                "label_true": int(graph.y.view(-1)[0]),
                **self.extra_columns,
            }
            if status == "ok" and i >= len(recs):
                row.update(status="error", message=f"attack returned {len(recs)} graphs for {len(graphs)}")
            # ok rows, and timed-out attacks that returned their best graph so far, are scored
            if row["status"] == "ok" or (row["status"] == "timeout" and i < len(recs)):
                rec = recs[i]
                priors = self.prior_scores(update, i, graph, knowledge)
                row["label_guess"] = rec.label
                row["label_correct"] = None if rec.label is None else int(rec.label == row["label_true"])
                adj = to_dense_adj(graph.edge_index, max_num_nodes=graph.num_nodes)[0]
                by_alignment = score_reconstruction(rec.x, rec.adj, graph.x, adj, schema=knowledge.schema,
                                                    entries=self.config.metrics.entries)
                for alignment, scores in by_alignment.items():
                    for metric, value in scores.items():
                        column = metric_column(alignment, metric)
                        row[column] = value
                        if column in priors:
                            row[f"prior_{column}"] = priors[column]
                            row[f"gain_{column}"] = value - priors[column]
                row.update({f"info_{k}": v for k, v in rec.info.items()
                            if isinstance(v, (int, float, str)) and not (isinstance(v, float) and math.isnan(v))})
                self.keep_drawing(name, row, graph, rec)
            rows.append(row)
        return rows
