"""Throwaway attacks for the tests of the attack workers, at module level (a worker imports them by
name), and the runs they are tried in."""

import dataclasses
import gc
import glob
import inspect
import os
import shutil
import time
import uuid

import pytest
import torch

from attacks.base import Attack, Reconstruction
from attacks.random_guess import RandomGuess
from fedgraph_sim.audit import AuditRecord, AuditStore
from fedgraph_sim.rows.store import read_rows
from tests.unit.test_attack_runner import make_runner

# which process ran a call: process IDs repeat across workers in the sandbox's PID namespaces
PROCESS = uuid.uuid4().hex
CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Probe(Attack):
    """Looks for the ground truth three ways and reports what it found in ``info``."""

    name, paper = "probe", "test double"

    def reconstruct(self, update, knowledge, ctx):
        audit_types = ("AuditRecord", "AuditStore", "Evaluator", "ThreatGrants")
        in_memory = sum(type(o).__name__ in audit_types for o in gc.get_objects())
        # the runner's frame leads to its audit reader (knowledge_for: the threat grants)
        on_stack = sum(type(v).__name__ in audit_types or hasattr(v, "knowledge_for")
                       for frame in inspect.stack() for v in frame.frame.f_locals.values())
        files = sum(len(glob.glob(os.path.join(where, "**", "audit", "**", "*.pt"), recursive=True))
                    for where in (".", CHECKOUT))
        hints = sum(k in os.environ for k in ("FEDGRAPH_DATA_ROOT", "FEDGRAPH_CACHE", "FLWR_HOME"))
        rec = RandomGuess().reconstruct(update, knowledge, ctx)[0]
        rec.info.update(in_memory=in_memory, on_stack=on_stack, audit_files=files, env_hints=hints)
        return [rec]


class Mutator(Attack):
    """Wrecks the auxiliary graphs it was given, in place."""

    name, paper = "mutator", "test double"

    def reconstruct(self, update, knowledge, ctx):
        for g in knowledge.aux_graphs:
            g.x.zero_()
            g.edge_index = g.edge_index[:, :0]
        return RandomGuess().reconstruct(update, knowledge, ctx)


class Sleeper(Attack):
    """Never checks its budget; streams one graph first, then hangs."""

    name, paper = "sleeper", "test double"

    def reconstruct(self, update, knowledge, ctx):
        ctx.checkpoint(RandomGuess().reconstruct(update, knowledge, ctx))
        time.sleep(120)
        return []


class Crasher(Attack):
    name, paper = "crasher", "test double"

    def reconstruct(self, update, knowledge, ctx):
        os._exit(3)


class WrongWidth(Attack):
    name, paper = "wrong_width", "test double"

    def reconstruct(self, update, knowledge, ctx):
        n = knowledge.node_counts[0]
        return [Reconstruction(torch.zeros(n, knowledge.num_features + 1), torch.zeros(n, n), n)]


class Counter(Attack):
    """Keeps state between calls: counts its rounds and calls in ``ctx.shared``."""

    name, paper, keeps_state = "counter", "test double", True

    def prepare(self, updates, knowledge, ctx):
        ctx.shared["rounds"] = ctx.shared.get("rounds", 0) + 1

    def reconstruct(self, update, knowledge, ctx):
        ctx.shared["calls"] = ctx.shared.get("calls", 0) + 1
        rec = RandomGuess().reconstruct(update, knowledge, ctx)[0]
        rec.info.update(rounds=ctx.shared["rounds"], calls=ctx.shared["calls"], pid=PROCESS)
        return [rec]


class Loner(Attack):
    """Stands alone: must get a fresh ``ctx.shared`` every call."""

    name, paper = "loner", "test double"

    def reconstruct(self, update, knowledge, ctx):
        seen = len(ctx.shared)
        ctx.shared["mine"] = 1
        rec = RandomGuess().reconstruct(update, knowledge, ctx)[0]
        rec.info.update(seen=seen, pid=PROCESS)
        return [rec]


class Fitter(Attack):
    """A fit (one draw of its seeded generator, counted) and a post-processing step after it."""

    name, paper, after_fit = "fitter", "test double", ("negate",)

    @dataclasses.dataclass
    class Params:
        scale: float = 1.0
        negate: bool = False

    def reconstruct(self, update, knowledge, ctx):
        computed = []

        def fit():
            computed.append(1)
            return float(torch.rand(1, generator=ctx.generator())) * self.params.scale

        value = ctx.shared_fit(fit)
        rec = RandomGuess().reconstruct(update, knowledge, ctx)[0]
        rec.info.update(value=-value if self.params.negate else value, computed=len(computed), pid=PROCESS)
        return [rec]


def rows_by_attack(tmp_path, attacks, workers, overrides=()):
    """The rows of client 0's update attacked with ``attack.workers=workers``, by attack."""
    runner, update, _ = make_runner(tmp_path, attacks, [f"attack.workers={workers}", *overrides])
    try:
        runner([update])
    finally:
        runner.close()
    return {r["attack"]: r for r in read_rows(tmp_path)}


def three_rounds(tmp_path, attacks, overrides):
    """The rows of rounds 1 to 3 of client 0's update, attacked by one runner."""
    runner, update, scenario = make_runner(tmp_path, attacks, overrides)
    graph = scenario.dataset.graphs[int(scenario.clients[0][0])]
    try:
        for round in (1, 2, 3):
            AuditStore(tmp_path).write(AuditRecord(round, 0, [graph], 1))
            runner([dataclasses.replace(update, round=round)])
    finally:
        runner.close()
    return read_rows(tmp_path)


@pytest.fixture
def earlier_run_in_the_checkout():
    """An earlier run's audit record left in the checkout's runs/ (what ``make run`` leaves)."""
    earlier = os.path.join(CHECKOUT, "runs", f"probe-{PROCESS}")
    record = os.path.join(earlier, "audit", "round_1", "client_0.pt")
    os.makedirs(os.path.dirname(record))
    torch.save({"graphs": [], "steps": 1}, record)
    yield earlier
    shutil.rmtree(earlier)
