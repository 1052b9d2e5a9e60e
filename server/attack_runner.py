"""Runs the configured attacks on the updates the server observes and records how each call went.

For every selected update and attack (``attack.rounds``, ``attack.clients``, ``attack.limit``):
check the attack's requirements (``not_applicable`` if unmet), run it with a seeded context and
its time budget, time it, and hand an :class:`~fedgraph_sim.threat.AttackOutcome` to ``record``
(the evaluator, which alone reads the ground truth). Exceptions, NaNs and spent budgets become
``error``, ``nan`` and ``timeout`` outcomes, an attack that recovers nothing by design
(``AttackFailed``) a ``failed`` one; the round goes on. Before a round's calls, each attack's
:meth:`~attacks.base.Attack.prepare` hook sees all of the round's selected updates.
"""

from __future__ import annotations

import logging
import time
import zlib
from typing import Callable, Iterable

import torch

from attacks.base import Attack, AttackContext, AttackFailed, AttackTimeout, Budget, Reconstruction
from fedgraph_sim.config import RunConfig
from fedgraph_sim.threat import AGGREGATE, AttackerKnowledge, AttackOutcome, ObservedUpdate

log = logging.getLogger(__name__)

#: ``(update, attack name) -> the knowledge that attack gets`` (the granted hints added).
KnowledgeFor = Callable[[ObservedUpdate, str], AttackerKnowledge]


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
    """``attacks`` by row name; ``knowledge`` is the scenario's grant (for ``prepare``) and
    ``knowledge_for`` adds the per-update hints; ``record`` receives every outcome."""

    def __init__(self, config: RunConfig, attacks: dict[str, Attack], knowledge: AttackerKnowledge,
                 knowledge_for: KnowledgeFor, record: Callable[[AttackOutcome], object],
                 progress=None) -> None:
        self.config, self.attacks, self.knowledge = config, attacks, knowledge
        self.knowledge_for, self.record = knowledge_for, record
        self.progress = progress  # a rich Progress, or None
        self.updates_attacked: dict[str, int] = {}
        self.shared: dict = {}  # AttackContext.shared: lives as long as this runner (one run)

    def context(self, name: str, round: int, client_key: int, progress=None) -> AttackContext:
        return AttackContext(seed=attack_seed(self.config.seed, round, client_key, name),
                             budget=Budget(self.config.attack.budget_of(name)),
                             progress=progress or (lambda done, total: None), shared=self.shared)

    def __call__(self, updates: Iterable[ObservedUpdate]) -> None:
        updates = [u for u in updates if is_selected(self.config, u)]
        if not updates:
            return
        for name, attack in self.attacks.items():
            if self._limit_reached(name):
                continue
            ctx = self.context(name, updates[0].round, -1)
            try:
                torch.manual_seed(ctx.seed)  # module inits draw from the global RNG: seed it per call
                attack.prepare(updates, self.knowledge, ctx)
            except Exception as exc:  # reconstruct() retries and reports it in the rows
                log.warning("%s: per-round preparation failed: %s: %s", name, type(exc).__name__, exc)
        for update in updates:
            for name, attack in self.attacks.items():
                if self._limit_reached(name):
                    continue
                self.updates_attacked[name] = self.updates_attacked.get(name, 0) + 1
                self.record(self.run_one(name, attack, update, self.knowledge_for(update, name)))

    def _limit_reached(self, name: str) -> bool:
        limit = self.config.attack.limit.get(name)
        return limit is not None and self.updates_attacked.get(name, 0) >= limit

    def run_one(self, name: str, attack: Attack, update: ObservedUpdate,
                knowledge: AttackerKnowledge) -> AttackOutcome:
        task = None
        if self.progress is not None:
            task = self.progress.add_task(f"{name} r{update.round} c{update.client_key}", total=None)
        progress = None if task is None else (lambda done, total: self.progress.update(task, completed=done, total=total))
        ctx = self.context(name, update.round, update.client_key, progress)
        outcome = AttackOutcome(name, update, knowledge, "ok")
        start = time.perf_counter()
        reason = attack.not_applicable(update, knowledge)
        if reason:
            outcome.status, outcome.message = "not_applicable", reason
        else:
            try:
                torch.manual_seed(ctx.seed)  # results must not depend on what ran before in this process
                recs = attack.reconstruct(update, knowledge, ctx)
                if not isinstance(recs, list) or not all(isinstance(r, Reconstruction) for r in recs):
                    raise TypeError(f"reconstruct returned {type(recs).__name__}, not a list of Reconstruction")
                if attack.batch_output == "one_for_batch" and len(recs) == 1:
                    recs = recs * update.batch_size  # one graph for the batch: scored against each
                outcome.reconstructions = recs
                if not all(_is_finite(r) for r in recs):
                    outcome.status, outcome.message = "nan", "reconstruction contains NaN or inf"
                elif ctx.budget.expired():
                    outcome.status, outcome.message = "timeout", f"returned after its {ctx.budget.seconds:g} s budget"
            except AttackTimeout as exc:
                outcome.status, outcome.message = "timeout", str(exc)
            except AttackFailed as exc:
                outcome.status, outcome.message = "failed", str(exc).splitlines()[0]
            except Exception as exc:  # an attack bug must not stop the round
                outcome.status, outcome.message = "error", f"{type(exc).__name__}: {exc}".splitlines()[0]
        outcome.seconds = time.perf_counter() - start
        if task is not None:
            self.progress.remove_task(task)
        return outcome
