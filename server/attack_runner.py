"""Runs the configured attacks on the updates the server observes and records how each call went.

Per round: select the updates (``attack.rounds``, ``attack.clients``, at most
``attack.clients_per_round`` of them) and, per attack, the calls
within ``attack.limit``; each attack's :meth:`~attacks.base.Attack.prepare` hook first, with all of
the round's selected updates, then one call per (update, attack) with the knowledge its threat
grants allow, a seed and a time budget. Variants that share a fit (``Attack.after_fit``, the same
grants and budget) get the seed of their fit group's first attack. The calls run in attack workers
(``server.attack_pool``: isolated processes with a hard time limit); their results come back in
this order whatever the number of workers, are checked (``invalid_output`` for anything that is
not a batch of graphs of the model's width, ``nan`` for NaN or inf) and handed on as
:class:`~fedgraph_sim.threat.AttackOutcome` objects to ``record``, the evaluator, which alone reads
the ground truth. A client turn that failed becomes a ``client_failed`` outcome for every attack
that would have attacked it. The round goes on whatever an attack does.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from typing import Callable, Iterable

import numpy as np
import torch

from attacks.base import Attack, fit_groups
from fedgraph_sim.config import ATTACK_GRANTS, RunConfig
from fedgraph_sim.threat import (AGGREGATE, AttackerKnowledge, AttackOutcome, ClientFailure, ObservedUpdate,
                                 attack_seed, output_problem)
from server.attack_calls import Call, CallResult, Listener
from server.attack_pool import WorkerPool
from server.boundary import Boundary, boundary_for
from server.in_process_executor import InProcess
from server.ray_attack_workers import RayWorkers

log = logging.getLogger(__name__)

#: ``(update, attack name) -> the knowledge that attack gets`` (the granted hints added).
KnowledgeFor = Callable[[ObservedUpdate, str], AttackerKnowledge]


def is_selected(config: RunConfig, update: ObservedUpdate | ClientFailure) -> bool:
    """Whether ``attack.rounds`` and ``attack.clients`` select this update (or failed turn)."""
    sel = config.attack
    return (sel.selects_round(update.round)
            and (sel.selects_client(update.client_key)
                 or update.client_key == AGGREGATE))  # behind secure aggregation: the one update


def sampled(config: RunConfig, updates: list[ObservedUpdate]) -> list[ObservedUpdate]:
    """At most ``attack.clients_per_round`` of a round's selected updates, a draw seeded by
    (seed, round): with many clients training, the server attacks a sample of them."""
    k = config.attack.clients_per_round
    if k is None or len(updates) <= k:
        return updates
    keep = set(np.random.default_rng([config.seed, updates[0].round]).choice(len(updates), k, replace=False).tolist())
    return [u for i, u in enumerate(updates) if i in keep]


def make_executor(attacks: dict[str, Attack], plugins: list[str], grace: float, workers: int,
                  boundary: Boundary | None = None, on_ray: bool = False, ray_address: str | None = None):
    """``workers`` processes behind ``boundary`` (0: this process, for debugging; none when there
    is no attack), or with ``on_ray`` as many Ray actors each owning one (``server.ray_attack_workers``)."""
    if workers == 0 or not attacks:
        return InProcess(attacks)
    if on_ray:
        return RayWorkers(attacks, plugins, grace, workers, boundary, ray_address)
    return WorkerPool(attacks, plugins, grace, workers, boundary)


def worker_count(config: RunConfig) -> int:
    """``attack.workers``, with ``auto`` as this machine's cores."""
    workers = config.attack.workers
    return os.cpu_count() or 1 if workers == "auto" else int(workers)


class _Progress(Listener):
    """One rich progress line per running call."""

    def __init__(self, bars) -> None:
        self.bars, self.tasks = bars, {}

    def started(self, call: Call) -> None:
        if self.bars is not None and call.kind == "reconstruct":
            update = call.payload
            self.tasks[call.index] = self.bars.add_task(f"{call.name} r{update.round} c{update.client_key}",
                                                        total=None)

    def progress(self, call: Call, done: int, total: int) -> None:
        if call.index in self.tasks:
            self.bars.update(self.tasks[call.index], completed=done, total=total)

    def finished(self, call: Call) -> None:
        if call.index in self.tasks:
            self.bars.remove_task(self.tasks.pop(call.index))


class AttackRunner:
    """``attacks`` by row name; ``knowledge`` is the scenario's grant (for ``prepare``) and
    ``knowledge_for`` adds the per-update hints; ``record`` receives every outcome. Call
    :meth:`close` at the end (it stops the workers), :meth:`stop` to end the attacks at once."""

    def __init__(self, config: RunConfig, attacks: dict[str, Attack], knowledge: AttackerKnowledge,
                 knowledge_for: KnowledgeFor, record: Callable[[AttackOutcome], object],
                 progress=None, boundary: Boundary | None = None) -> None:
        self.config, self.attacks, self.knowledge = config, attacks, knowledge
        self.knowledge_for, self._record = knowledge_for, record
        self._recording, self.stopped = threading.Lock(), False
        self.listener = _Progress(progress)
        self.updates_attacked: dict[str, int] = {}
        self.executor = make_executor(attacks, config.plugins, config.attack.grace, worker_count(config),
                                      boundary or boundary_for(config), on_ray=config.attack.executor == "ray",
                                      ray_address=config.federation.ray_address)
        self._calls = 0
        grants = lambda name: (tuple(config.threat.grants(g, name) for g in ATTACK_GRANTS),  # noqa: E731
                               config.attack.budget_of(name))
        self.fit_groups = fit_groups(attacks, grants)

    def _call(self, kind: str, name: str, payload, knowledge, round: int, client_key: int) -> Call:
        self._calls += 1
        group = self.fit_groups[name]
        return Call(self._calls, kind, name, payload, knowledge,
                    attack_seed(self.config.seed, round, client_key, group),
                    self.config.attack.budget_of(name), fit_group=group)

    def _take(self, name: str) -> bool:
        """Count one attacked update for ``name``, unless its ``attack.limit`` is reached."""
        limit = self.config.attack.limit.get(name)
        if limit is not None and self.updates_attacked.get(name, 0) >= limit:
            return False
        self.updates_attacked[name] = self.updates_attacked.get(name, 0) + 1
        return True

    def __call__(self, updates: Iterable[ObservedUpdate], failures: Iterable[ClientFailure] = ()) -> None:
        updates = sampled(self.config, [u for u in updates if is_selected(self.config, u)])
        for failure in (f for f in failures if is_selected(self.config, f)):
            for name in self.attacks:
                if self._take(name):
                    self.record(AttackOutcome(name, None, self.knowledge, "client_failed", failure.reason,
                                              failure=failure))
        if not updates:
            return
        limit = self.config.attack.limit
        calls = [self._call("prepare", name, updates, self.knowledge, updates[0].round, -1)
                 for name, attack in self.attacks.items() if attack.keeps_state
                 and (limit.get(name) is None or self.updates_attacked.get(name, 0) < limit[name])]
        calls += [self._call("reconstruct", name, update, self.knowledge_for(update, name), update.round,
                             update.client_key)
                  for update in updates for name in self.attacks if self._take(name)]
        unprepared: dict[str, str] = {}  # attack -> why its per-round preparation failed
        for call, result in self.executor.run(calls, self.listener):
            if self.stopped:
                break
            if call.kind == "prepare":
                if result.status != "ok":
                    unprepared[call.name] = result.message
                continue
            outcome = self.outcome(call, result)
            # its calls ran without the state the round should have built (one that does not apply
            # needed none: its reason stands, e.g. auxiliary graphs a failed preparation lacked too)
            if call.name in unprepared and outcome.status != "not_applicable":
                outcome = dataclasses.replace(outcome, status="error", reconstructions=[],
                                              message=f"prepare() failed this round: {unprepared[call.name]}")
            self.record(outcome)

    def record(self, outcome: AttackOutcome) -> None:
        """Hand ``outcome`` to the evaluator, unless the run was stopped (:meth:`stop`)."""
        with self._recording:
            if not self.stopped:
                self._record(outcome)

    def stop(self) -> None:
        """A stop request (Ctrl-C): let an outcome being recorded finish, record nothing after it,
        and kill the running calls, whose results would be artefacts of the stop."""
        with self._recording:
            self.stopped = True
        self.executor.stop()

    def outcome(self, call: Call, result: CallResult) -> AttackOutcome:
        """The call's status after checking what it returned."""
        update, attack = call.payload, self.attacks[call.name]
        outcome = AttackOutcome(call.name, update, call.knowledge, result.status, result.message, [], result.seconds,
                                hints_read=result.hints_read, info=result.info)
        output = result.output
        if output is None and result.status != "ok":
            return outcome  # raised, failed, or stopped before it streamed anything
        problem = output_problem(output, call.knowledge, update.num_graphs)
        if problem:
            outcome.status, outcome.message = "invalid_output", problem
            return outcome
        if attack.batch_output == "one_for_batch" and len(output) == 1:
            output = output * update.num_graphs  # one graph for the batch: scored against each
        outcome.reconstructions = output
        if not all(bool(torch.isfinite(r.x).all() and torch.isfinite(r.adj).all()) for r in output):
            outcome.status, outcome.message = "nan", "reconstruction contains NaN or inf"
        return outcome

    def close(self) -> None:
        self.executor.close()
