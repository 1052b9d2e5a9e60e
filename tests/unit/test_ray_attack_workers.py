"""Attack calls as Ray actors (``attack.executor: ray``): the pool's rows, order, boundary, hard
limit and pinning, on the session's local Ray (``tests/conftest.py``)."""

import threading
import time

import pytest

from attacks.priors import AuxMeanAdjacency
from attacks.random_guess import RandomGuess
from fedgraph_sim.rows.store import read_rows
from tests.unit.test_attack_runner import make_runner
from tests.unit.worker_attacks import (Counter, Loner, Probe, Sleeper, earlier_run_in_the_checkout,  # noqa: F401
                                      three_rounds)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_ray")]  # worker interpreters in Ray actors

RAY = ["attack.executor=ray"]


def _rows(tmp_path, attacks, overrides=()):
    runner, update, _ = make_runner(tmp_path, attacks, overrides)
    try:
        runner([update])
    finally:
        runner.close()
    return read_rows(tmp_path)


def test_the_actors_give_the_pools_rows_in_its_order(tmp_path):
    from attacks.dlg import DLG
    from attacks.priors import MajorityType

    def attacks():
        return {"random": RandomGuess(), "dlg": DLG(iterations=3), "majority_type": MajorityType(),
                "aux_mean_adjacency": AuxMeanAdjacency()}

    pool = _rows(tmp_path / "pool", attacks(), ["attack.workers=2"])
    actors = _rows(tmp_path / "ray", attacks(), ["attack.workers=2", *RAY])
    drop = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]  # noqa: E731
    assert [r["attack"] for r in actors] == ["random", "dlg", "majority_type", "aux_mean_adjacency"]
    assert drop(actors) == drop(pool)


@pytest.mark.usefixtures("earlier_run_in_the_checkout")
def test_a_probe_behind_an_actor_finds_no_ground_truth(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (row,) = _rows(tmp_path / "run", {"probe": Probe()}, ["attack.workers=1", *RAY])
    assert row["status"] == "ok"
    assert (row["info_in_memory"], row["info_on_stack"], row["info_audit_files"], row["info_env_hints"]) == (0, 0, 0, 0)


def test_a_call_past_its_budget_is_killed_on_the_actors_node(tmp_path):
    start = time.perf_counter()
    rows = {r["attack"]: r for r in _rows(tmp_path, {"sleeper": Sleeper(), "random": RandomGuess()},
                                          ["attack.workers=1", "attack.time_budget=1", "attack.grace=1", *RAY])}
    assert time.perf_counter() - start < 90  # not the 120 s it sleeps
    assert rows["sleeper"]["status"] == "timeout" and rows["sleeper"]["message"] == "killed 1 s after its 1 s budget"
    assert 0 <= rows["sleeper"]["identity_adj_auc"] <= 1  # the streamed graph was scored
    assert rows["random"]["status"] == "ok"


def test_a_stateful_attack_stays_on_one_actor_across_rounds(tmp_path):
    rows = three_rounds(tmp_path, {"counter": Counter(), "loner": Loner()}, ["attack.workers=2", *RAY])
    counter = [r for r in rows if r["attack"] == "counter"]
    assert [(r["info_rounds"], r["info_calls"]) for r in counter] == [(1, 1), (2, 2), (3, 3)]
    assert [r["info_seen"] for r in rows if r["attack"] == "loner"] == [0, 0, 0]


def test_a_stop_kills_the_actors_at_once(tmp_path):
    runner, update, _ = make_runner(tmp_path, {"sleeper": Sleeper()}, ["attack.workers=1", "attack.time_budget=60",
                                                                       *RAY])
    attacked = threading.Thread(target=runner, args=([update],))
    attacked.start()
    time.sleep(5)  # the call is on its way or running: a stop must end it either way
    start = time.perf_counter()
    runner.stop()
    attacked.join(timeout=30)
    assert not attacked.is_alive() and time.perf_counter() - start < 30
    runner.close()
