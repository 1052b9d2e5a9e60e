"""The sweep runner's hold on its directory: one runner at a time, one spec per directory."""

from pathlib import Path

import pytest

from fedgraph_sim.errors import ConfigError
from fedgraph_sim.runtime.sweeps import SpecMismatch, SweepRunner, build_sweep, open_sweep
from fedgraph_sim.runtime.sweeps.spec import spec_differences

SPEC = {"name": "s", "base": {"data": {"dataset": "synthetic", "options": {"num_graphs": 40}},
                              "federation": {"num_clients": 2, "rounds": 2}},
        "axes": {"attacks": ["random"]}}


def _plan(rounds=2):
    spec = {**SPEC, "base": {**SPEC["base"], "federation": {"num_clients": 2, "rounds": rounds}}}
    return build_sweep(spec, Path("."))


def test_a_second_runner_is_refused_with_the_holders_pid(tmp_path):
    import os

    first = SweepRunner(_plan(), tmp_path / "sweep")
    first.claim()
    with pytest.raises(ConfigError, match=f"another sweep runner \\(PID {os.getpid()}\\)"):
        SweepRunner(_plan(), tmp_path / "sweep").claim()
    first.release()
    SweepRunner(_plan(), tmp_path / "sweep").claim()  # free again


def test_a_changed_spec_is_refused_with_the_keys_that_differ_or_goes_to_a_new_directory(tmp_path):
    runner = SweepRunner(_plan(), tmp_path / "sweep")
    runner.claim()
    runner.release()
    (tmp_path / "sweep" / ".lock").write_text("12345")  # the PID of the runner that last worked here
    with pytest.raises(SpecMismatch, match=r"differs in base\.federation\.rounds"):
        SweepRunner(_plan(rounds=3), tmp_path / "sweep").claim()
    assert (tmp_path / "sweep" / ".lock").read_text() == "12345"  # the refused runner wrote nothing
    moved = open_sweep(_plan(rounds=3), tmp_path / "sweep", force_new=True)
    assert moved.dir != tmp_path / "sweep" and (moved.dir / "sweep.yaml").is_file()
    moved.release()


def test_changed_settings_change_the_job_ids():
    two, three = _plan(2), _plan(3)
    assert two.federations[0].id != three.federations[0].id and two.cells[0].id != three.cells[0].id
    assert _plan(2).cells[0].id == two.cells[0].id  # and the same spec gives the same ids


def test_spec_differences_name_dotted_keys():
    assert spec_differences({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "c": 3}, "d": 4}) == ["a.c", "d"]
    assert spec_differences(SPEC, SPEC) == []


class NeverFinishes:
    """A pool whose jobs run on (a federation that trains) for 10 s, shut down as the runner asks."""

    def __init__(self):
        self.shutdowns = []

    def submit(self, fn, *args, **kwargs):
        import threading
        from concurrent.futures import Future

        job = Future()
        timer = threading.Timer(10, lambda: job.done() or job.set_result({}))  # a failed test, not a hung one
        timer.daemon = True
        timer.start()
        return job

    def shutdown(self, wait=True, cancel_futures=False):
        self.shutdowns.append((wait, cancel_futures))


def test_a_signal_another_thread_receives_stops_the_runner_while_its_jobs_run(tmp_path, monkeypatch):
    """The kernel may hand a process's SIGINT to any of its threads; Python runs the handler in
    the main thread only once that thread runs Python again, so the runner must not block on its
    jobs without a timeout (it did, and a stopped sweep ran on until a job finished)."""
    import signal
    import threading
    import time

    pool = NeverFinishes()
    runner = SweepRunner(_plan(), tmp_path / "sweep")
    monkeypatch.setattr(runner, "_pool", lambda: pool)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in any Python program
    receiver = threading.Thread(target=lambda: (time.sleep(1), signal.pthread_kill(threading.get_ident(),
                                                                                   signal.SIGINT)))
    start = time.monotonic()
    receiver.start()
    with pytest.raises(KeyboardInterrupt):
        runner.run()
    receiver.join()
    assert time.monotonic() - start < 5
    assert pool.shutdowns == [(False, True)]  # queued jobs cancelled, nothing waited for


def test_a_deadline_stops_the_jobs_and_counts_those_left_for_a_resume(tmp_path, monkeypatch):
    import time

    pool = NeverFinishes()
    runner = SweepRunner(_plan(), tmp_path / "sweep")
    monkeypatch.setattr(runner, "_pool", lambda: pool)
    start = time.monotonic()
    result = runner.run(deadline=time.time() + 1)
    assert time.monotonic() - start < 5 and pool.shutdowns == [(False, True)]
    assert result.out_of_time == 2  # the federation and its cell: neither finished
    assert result.failures == [] and not (tmp_path / "sweep" / "cells").exists()
