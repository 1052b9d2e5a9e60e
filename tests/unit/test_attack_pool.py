"""Attacks in worker processes: what a hostile or broken attack can and cannot do, and what the
server then records."""

import time

import pytest

from attacks.priors import AuxMeanAdjacency
from attacks.random_guess import RandomGuess
from server.attack_pool import exit_reason
from tests.unit.worker_attacks import (Crasher, Mutator, Probe, Sleeper, WrongWidth,  # noqa: F401
                                       earlier_run_in_the_checkout, rows_by_attack)

pytestmark = pytest.mark.slow  # the tests start worker interpreters (all but the last)


@pytest.mark.usefixtures("earlier_run_in_the_checkout")
def test_a_probe_in_a_worker_finds_no_ground_truth(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the run directory (with its audit/) is where the server runs
    monkeypatch.setenv("FEDGRAPH_DATA_ROOT", str(tmp_path))
    row = rows_by_attack(tmp_path / "run", {"probe": Probe()}, 1)["probe"]
    assert row["status"] == "ok"
    assert (row["info_in_memory"], row["info_on_stack"], row["info_audit_files"], row["info_env_hints"]) == (0, 0, 0, 0)
    # The same probe in the server's own process (attack.workers=0) finds all of it: the check can fail.
    row = rows_by_attack(tmp_path / "again", {"probe": Probe()}, 0)["probe"]
    assert row["info_in_memory"] > 0 and row["info_on_stack"] > 0 and row["info_audit_files"] > 0
    assert row["info_env_hints"] > 0


def test_an_attack_that_mutates_the_auxiliary_graphs_changes_no_other_score(tmp_path):
    alone = rows_by_attack(tmp_path / "alone", {"aux_mean_adjacency": AuxMeanAdjacency()}, 1)["aux_mean_adjacency"]
    both = rows_by_attack(tmp_path / "both", {"mutator": Mutator(), "aux_mean_adjacency": AuxMeanAdjacency()}, 1)
    after = both["aux_mean_adjacency"]
    for column in ("identity_adj_auc", "prior_identity_adj_auc", "identity_node_type_accuracy"):
        assert after[column] == alone[column]
    assert both["mutator"]["prior_identity_adj_auc"] == alone["prior_identity_adj_auc"]


def test_a_call_past_its_budget_is_killed_and_scored_on_what_it_streamed(tmp_path):
    start = time.perf_counter()
    rows = rows_by_attack(tmp_path, {"sleeper": Sleeper(), "random": RandomGuess()}, 1,
                 ["attack.time_budget=1", "attack.grace=1"])
    assert time.perf_counter() - start < 60  # not the 120 s it sleeps
    sleeper = rows["sleeper"]
    assert sleeper["status"] == "timeout" and sleeper["message"] == "killed 1 s after its 1 s budget"
    assert 0 <= sleeper["identity_adj_auc"] <= 1  # the streamed graph was scored
    assert rows["random"]["status"] == "ok"  # its worker was started afresh


def test_a_dying_worker_is_a_crashed_row_and_the_round_goes_on(tmp_path):
    rows = rows_by_attack(tmp_path, {"crasher": Crasher(), "random": RandomGuess()}, 1)
    assert rows["crasher"]["status"] == "crashed" and "exit code 3" in rows["crasher"]["message"]
    assert rows["random"]["status"] == "ok"


def test_a_reconstruction_of_the_wrong_width_is_invalid_output(tmp_path):
    rows = rows_by_attack(tmp_path, {"wrong_width": WrongWidth(), "random": RandomGuess()}, 1)
    n = rows["wrong_width"]["num_nodes"]
    assert rows["wrong_width"]["status"] == "invalid_output"
    assert rows["wrong_width"]["message"] == f"graph 0: features [{n}, 5], the model takes [n, 4]"
    assert rows["random"]["status"] == "ok"


def test_a_worker_that_ends_as_it_starts_is_started_again_for_its_first_call(tmp_path, monkeypatch):
    from server import attack_pool

    real, spawned = attack_pool.spawn, []

    def dies_first(command, **kwargs):  # the first worker ends before it reads its attacks
        if spawned:
            return real(command, **kwargs)
        spawned.append(real(["true"], **kwargs))
        spawned[0].wait()
        return spawned[0]

    monkeypatch.setattr(attack_pool, "spawn", dies_first)
    rows = rows_by_attack(tmp_path, {"random": RandomGuess()}, 1)
    assert spawned and spawned[0].returncode == 0 and rows["random"]["status"] == "ok"


def test_a_worker_killed_by_a_signal_is_reported_so():
    assert exit_reason(-9, isolated=False) == "killed by signal SIGKILL"
    assert exit_reason(128 + 11, isolated=True) == "killed by signal SIGSEGV"
    assert exit_reason(3, isolated=True) == "exit code 3"
    assert exit_reason(139, isolated=False) == "exit code 139"
