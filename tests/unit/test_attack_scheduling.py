"""Which worker runs which call: how many workers, pinned stateful groups, calls sharing a fit; and
that rows do not depend on it."""

import pytest

from attacks.base import Attack
from attacks.priors import AuxMeanAdjacency
from attacks.random_guess import RandomGuess
from fedgraph_sim.rows.store import read_rows
from server.attack_calls import Call
from server.attack_scheduling import CallQueue, slots, stateful_groups
from tests.unit.test_attack_runner import make_runner
from tests.unit.worker_attacks import Counter, Fitter, Loner, rows_by_attack, three_rounds


class Stands(Attack):
    name, paper = "stands", "test double"

    def reconstruct(self, update, knowledge, ctx):
        return []


class Keeps(Stands):
    name, keeps_state = "keeps", True


def test_stateful_groups_are_the_attacks_that_keep_state_their_variants_together():
    attacks = {"keeps": Keeps(), "stands": Stands(), "keeps@refine": Keeps(), "other": Keeps()}
    assert stateful_groups(attacks) == ["keeps", "other"]


def test_slots_are_the_workers_asked_but_no_more_than_the_stateful_groups_when_every_attack_keeps_state():
    assert slots({"keeps": Keeps(), "keeps@refine": Keeps()}, 4) == 1
    assert slots({"keeps": Keeps(), "stands": Stands()}, 4) == 4
    assert slots({"stands": Stands()}, 0) == 1


def reconstruct(index, name, seed=1, fit_group=""):
    return Call(index, "reconstruct", name, None, None, seed, 1.0, fit_group)


def test_a_pinned_group_goes_to_its_worker_one_call_at_a_time_and_the_rest_with_those_sharing_its_fit():
    one, two = object(), object()
    queue = CallQueue({"keeps": one})
    queue.pending = [reconstruct(0, "keeps"), reconstruct(1, "keeps@refine"), reconstruct(2, "stands"),
                     reconstruct(3, "stands@bp", fit_group="stands"), reconstruct(4, "stands@bp", 2, "stands")]
    assert [c.index for c in queue.take(two)] == [2, 3]  # same seed and fit group: one worker, in order
    assert [c.index for c in queue.take(one)] == [0]
    assert [c.index for c in queue.take(two)] == [4]
    assert queue.take(two) == []  # the pinned group's call waits for its worker
    assert [c.index for c in queue.take(one)] == [1]


@pytest.mark.slow  # starts worker interpreters
def test_parallel_workers_give_the_serial_rows_in_the_serial_order(tmp_path):
    from attacks.dlg import DLG
    from attacks.priors import MajorityType

    def attacks():
        return {"random": RandomGuess(), "dlg": DLG(iterations=3), "majority_type": MajorityType(),
                "aux_mean_adjacency": AuxMeanAdjacency()}

    rows = {}
    for workers in (0, 1, 2):
        # a budget every call ends within: a timed-out call's rows depend on the machine's load
        runner, update, _ = make_runner(tmp_path / str(workers), attacks(),
                                        [f"attack.workers={workers}", "attack.time_budget=60"])
        runner([update])
        runner.close()
        rows[workers] = [{k: v for k, v in r.items() if k != "seconds"} for r in read_rows(tmp_path / str(workers))]
    assert [r["attack"] for r in rows[2]] == ["random", "dlg", "majority_type", "aux_mean_adjacency"]
    assert rows[0] == rows[1] == rows[2]


@pytest.mark.slow  # starts worker interpreters
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


@pytest.mark.slow  # starts worker interpreters
def test_variants_sharing_a_fit_run_it_once_in_one_worker_and_rows_do_not_depend_on_it(tmp_path):
    def attacks():
        return {"fitter": Fitter(), "loner": Loner(), "fitter@negated": Fitter(negate=True),
                "fitter@scaled": Fitter(scale=2.0)}

    rows = {w: rows_by_attack(tmp_path / str(w), attacks(), w) for w in (0, 2)}
    shared = rows[2]
    assert shared["fitter@negated"]["info_value"] == -shared["fitter"]["info_value"]  # one seed, one draw
    assert (shared["fitter"]["info_computed"], shared["fitter@negated"]["info_computed"]) == (1, 0)
    assert shared["fitter"]["info_pid"] == shared["fitter@negated"]["info_pid"]
    assert shared["fitter@scaled"]["info_computed"] == 1
    assert shared["fitter@scaled"]["info_value"] != 2 * shared["fitter"]["info_value"]  # its own seed
    drop = ("seconds", "info_pid")
    assert ({a: {k: v for k, v in r.items() if k not in drop} for a, r in rows[0].items()}
            == {a: {k: v for k, v in r.items() if k not in drop} for a, r in rows[2].items()})
