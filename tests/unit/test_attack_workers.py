"""Attacks in worker processes: what a hostile or broken attack can and cannot do.

The attacks below are throwaway doubles at module level (a worker imports them by name).
"""

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
from attacks.priors import AuxMeanAdjacency
from attacks.random_guess import RandomGuess
from fedgraph_sim.audit import AuditRecord, AuditStore
from fedgraph_sim.rows.store import read_rows
from tests.unit.test_attack_runner import make_runner

pytestmark = pytest.mark.slow  # each test starts worker interpreters

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


def _rows(tmp_path, attacks, workers, overrides=()):
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


def test_a_probe_in_a_worker_finds_no_ground_truth(tmp_path, monkeypatch, earlier_run_in_the_checkout):
    monkeypatch.chdir(tmp_path)  # the run directory (with its audit/) is where the server runs
    monkeypatch.setenv("FEDGRAPH_DATA_ROOT", str(tmp_path))
    row = _rows(tmp_path / "run", {"probe": Probe()}, 1)["probe"]
    assert row["status"] == "ok"
    assert (row["info_in_memory"], row["info_on_stack"], row["info_audit_files"], row["info_env_hints"]) == (0, 0, 0, 0)
    # The same probe in the server's own process (attack.workers=0) finds all of it: the check can fail.
    row = _rows(tmp_path / "again", {"probe": Probe()}, 0)["probe"]
    assert row["info_in_memory"] > 0 and row["info_on_stack"] > 0 and row["info_audit_files"] > 0
    assert row["info_env_hints"] > 0


def test_an_attack_that_mutates_the_auxiliary_graphs_changes_no_other_score(tmp_path):
    alone = _rows(tmp_path / "alone", {"aux_mean_adjacency": AuxMeanAdjacency()}, 1)["aux_mean_adjacency"]
    both = _rows(tmp_path / "both", {"mutator": Mutator(), "aux_mean_adjacency": AuxMeanAdjacency()}, 1)
    after = both["aux_mean_adjacency"]
    for column in ("identity_adj_auc", "prior_identity_adj_auc", "identity_node_type_accuracy"):
        assert after[column] == alone[column]
    assert both["mutator"]["prior_identity_adj_auc"] == alone["prior_identity_adj_auc"]


def test_a_call_past_its_budget_is_killed_and_scored_on_what_it_streamed(tmp_path):
    start = time.perf_counter()
    rows = _rows(tmp_path, {"sleeper": Sleeper(), "random": RandomGuess()}, 1,
                 ["attack.time_budget=1", "attack.grace=1"])
    assert time.perf_counter() - start < 60  # not the 120 s it sleeps
    sleeper = rows["sleeper"]
    assert sleeper["status"] == "timeout" and sleeper["message"] == "killed 1 s after its 1 s budget"
    assert 0 <= sleeper["identity_adj_auc"] <= 1  # the streamed graph was scored
    assert rows["random"]["status"] == "ok"  # its worker was started afresh


def test_a_dying_worker_is_a_crashed_row_and_the_round_goes_on(tmp_path):
    rows = _rows(tmp_path, {"crasher": Crasher(), "random": RandomGuess()}, 1)
    assert rows["crasher"]["status"] == "crashed" and "exit code 3" in rows["crasher"]["message"]
    assert rows["random"]["status"] == "ok"


def test_a_reconstruction_of_the_wrong_width_is_invalid_output(tmp_path):
    rows = _rows(tmp_path, {"wrong_width": WrongWidth(), "random": RandomGuess()}, 1)
    n = rows["wrong_width"]["num_nodes"]
    assert rows["wrong_width"]["status"] == "invalid_output"
    assert rows["wrong_width"]["message"] == f"graph 0: features [{n}, 5], the model takes [n, 4]"
    assert rows["random"]["status"] == "ok"


def test_parallel_workers_give_the_serial_rows_in_the_serial_order(tmp_path):
    from attacks.dlg import DLG
    from attacks.priors import MajorityType

    def attacks():
        return {"random": RandomGuess(), "dlg": DLG(iterations=3), "majority_type": MajorityType(),
                "aux_mean_adjacency": AuxMeanAdjacency()}

    rows = {}
    for workers in (0, 1, 2):
        runner, update, _ = make_runner(tmp_path / str(workers), attacks(), [f"attack.workers={workers}"])
        runner([update])
        runner.close()
        rows[workers] = [{k: v for k, v in r.items() if k != "seconds"} for r in read_rows(tmp_path / str(workers))]
    assert [r["attack"] for r in rows[2]] == ["random", "dlg", "majority_type", "aux_mean_adjacency"]
    assert rows[0] == rows[1] == rows[2]


def test_stateful_calls_run_in_order_in_one_worker_and_the_rest_anywhere(tmp_path):
    from attacks.dlg import DLG

    rows = three_rounds(tmp_path, {"counter": Counter(), "loner": Loner(), "dlg": DLG(iterations=3)},
                        ["attack.workers=2"])
    counter = [r for r in rows if r["attack"] == "counter"]
    assert [(r["info_rounds"], r["info_calls"]) for r in counter] == [(1, 1), (2, 2), (3, 3)]
    assert len({r["info_pid"] for r in counter}) == 1
    loner = [r for r in rows if r["attack"] == "loner"]
    assert [r["info_seen"] for r in loner] == [0, 0, 0]
    # with the counter pinned to one worker, the free worker takes the other calls
    assert {r["info_pid"] for r in loner} - {counter[0]["info_pid"]}


def test_an_attack_that_prepares_must_declare_that_it_keeps_state():
    with pytest.raises(TypeError, match="keeps_state"):
        class Forgetful(Attack):  # noqa: F841
            name, paper = "forgetful", "test double"

            def prepare(self, updates, knowledge, ctx):
                pass

            def reconstruct(self, update, knowledge, ctx):
                return []


def test_variants_sharing_a_fit_run_it_once_in_one_worker_and_rows_do_not_depend_on_it(tmp_path):
    def attacks():
        return {"fitter": Fitter(), "loner": Loner(), "fitter@negated": Fitter(negate=True),
                "fitter@scaled": Fitter(scale=2.0)}

    rows = {w: _rows(tmp_path / str(w), attacks(), w) for w in (0, 2)}
    shared = rows[2]
    assert shared["fitter@negated"]["info_value"] == -shared["fitter"]["info_value"]  # one seed, one draw
    assert (shared["fitter"]["info_computed"], shared["fitter@negated"]["info_computed"]) == (1, 0)
    assert shared["fitter"]["info_pid"] == shared["fitter@negated"]["info_pid"]
    assert shared["fitter@scaled"]["info_computed"] == 1
    assert shared["fitter@scaled"]["info_value"] != 2 * shared["fitter"]["info_value"]  # its own seed
    drop = ("seconds", "info_pid")
    assert ({a: {k: v for k, v in r.items() if k not in drop} for a, r in rows[0].items()}
            == {a: {k: v for k, v in r.items() if k not in drop} for a, r in rows[2].items()})


def test_a_worker_that_ends_as_it_starts_is_started_again_for_its_first_call(tmp_path, monkeypatch):
    from server import attack_workers

    real, spawned = attack_workers.spawn, []

    def dies_first(command, **kwargs):  # the first worker ends before it reads its attacks
        if spawned:
            return real(command, **kwargs)
        spawned.append(real(["true"], **kwargs))
        spawned[0].wait()
        return spawned[0]

    monkeypatch.setattr(attack_workers, "spawn", dies_first)
    rows = _rows(tmp_path, {"random": RandomGuess()}, 1)
    assert spawned and spawned[0].returncode == 0 and rows["random"]["status"] == "ok"
