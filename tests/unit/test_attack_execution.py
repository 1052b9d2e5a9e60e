"""One call run where the attack lives: what happened becomes the row's status and message."""

import time
from collections import defaultdict

import pytest
import torch

from attacks.base import Attack, AttackContext, AttackFailed, AttackTimeout, Budget
from attacks.random_guess import RandomGuess
from server.attack_calls import Call
from server.attack_execution import execute, shared_store


class Knowledge:
    """Records the granted hints read, as ``AttackerKnowledge`` does."""

    def __init__(self):
        self.reads = set()

    def hints_read(self):
        return frozenset(self.reads)

    def forget_reads(self):
        self.reads.clear()


class Scripted(Attack):
    """Does what the test gives it: ``run(knowledge, ctx)`` as its reconstruct or prepare."""

    name, paper, keeps_state = "scripted", "test double", True

    def __init__(self, run=lambda knowledge, ctx: ["graph"], why_not=None):
        super().__init__()
        self.run, self.why_not = run, why_not

    def not_applicable(self, update, knowledge):
        knowledge.reads.add("labels")  # the check's reads are not the attack's
        return self.why_not

    def prepare(self, updates, knowledge, ctx):
        self.run(knowledge, ctx)

    def reconstruct(self, update, knowledge, ctx):
        return self.run(knowledge, ctx)


def run(attack, kind="reconstruct", budget=60.0, seed=7, fits=None):
    call = Call(0, kind, attack.name, None, Knowledge(), seed, budget)
    return execute(attack, call, AttackContext(seed, Budget(budget), fits={} if fits is None else fits))


def raises(exc):
    def run(knowledge, ctx):
        ctx.checkpoint(["best so far"])
        raise exc
    return run


def late(knowledge, ctx):
    time.sleep(0.01)
    return ["graph"]


@pytest.mark.parametrize("attack, budget, expected", [
    (Scripted(), 60.0, ("ok", "", ["graph"], {})),
    (Scripted(late), 0.0, ("timeout", "returned after its 0 s budget", ["graph"], {})),
    (Scripted(raises(AttackTimeout("time budget of 1 s spent", {"steps": 3}))), 60.0,
     ("timeout", "time budget of 1 s spent", ["best so far"], {"steps": 3})),
    (Scripted(raises(AttackFailed("no candidate passed\nits checks", {"candidates": 0}))), 60.0,
     ("failed", "no candidate passed", None, {"candidates": 0})),
    (Scripted(raises(ValueError("boom\nsecond line"))), 60.0, ("error", "ValueError: boom", None, {})),
    (Scripted(why_not="needs auxiliary graphs"), 60.0, ("not_applicable", "needs auxiliary graphs", None, {})),
])
def test_what_a_reconstruct_call_did_becomes_its_status(attack, budget, expected):
    result = run(attack, budget=budget)
    assert (result.status, result.message, result.output, result.info) == expected
    assert result.seconds >= 0


def test_a_prepare_call_is_ok_or_an_error():
    assert run(Scripted(lambda k, ctx: None), kind="prepare").status == "ok"
    failed = run(Scripted(raises(RuntimeError("no\nmore"))), kind="prepare")
    assert (failed.status, failed.message) == ("error", "RuntimeError: no")


def test_the_hints_read_are_the_attacks_and_those_of_the_fit_it_reused():
    def reads(hint):
        def run(knowledge, ctx):
            return ctx.shared_fit(lambda: knowledge.reads.add(hint))
        return run

    fits = {}
    assert run(Scripted(reads("node_counts")), fits=fits).hints_read == {"node_counts"}
    assert run(Scripted(reads("features")), fits=fits).hints_read == {"node_counts"}  # the fit, reused
    assert run(Scripted(reads("features")), seed=8, fits=fits).hints_read == {"features"}


def test_every_call_seeds_the_global_rng_with_its_own_seed():
    draw = Scripted(lambda knowledge, ctx: torch.rand(1))
    first = run(draw).output
    torch.rand(5)
    assert torch.equal(run(draw).output, first) and not torch.equal(run(draw, seed=8).output, first)


def test_a_stateful_attacks_variants_share_a_store_and_a_lone_call_gets_a_fresh_one():
    stores = defaultdict(dict)  # as the executors keep them
    store = shared_store(stores, Scripted(), Call(0, "reconstruct", "scripted@refine", None, None, 1, 1.0))
    assert store is shared_store(stores, Scripted(), Call(1, "reconstruct", "scripted", None, None, 1, 1.0))
    assert shared_store(stores, RandomGuess(), Call(2, "reconstruct", "random", None, None, 1, 1.0)) == {}
