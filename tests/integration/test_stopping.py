"""One Ctrl-C ends a run within seconds: exit code 130, one line, the rows so far and a summary
kept, no process left behind; a second Ctrl-C exits at once."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fedgraph_sim.results import read_rows

pytestmark = pytest.mark.slow
ENDLESS = ["data.dataset=synthetic", "federation.num_clients=2", "federation.rounds=1000000",
           "attack.names=[random]", "attack.rounds=[1, 2, 3]"]
# Measured on 2 cores under a load average of 9: 8.0 and 8.7 s from the signal to the exit (the
# target is 10 s); the bound leaves CI's machine twice that.
STOP_SECONDS = 20


def _start(tmp_path: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "fedgraph_sim", "run", *ENDLESS, f"output.dir={tmp_path}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_for_rows(tmp_path: Path, process: subprocess.Popen, timeout: float = 300) -> Path:
    end = time.monotonic() + timeout
    while time.monotonic() < end and process.poll() is None:
        found = [p for p in tmp_path.glob("*-default/results.jsonl") if p.stat().st_size]  # streamed
        if found:
            return found[0].parent
        time.sleep(1)
    raise AssertionError(f"no row within {timeout} s: {process.stderr.read()[-2000:] if process.poll() else ''}")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_one_signal_stops_the_run_keeping_its_rows(tmp_path, sig):
    process = _start(tmp_path)
    try:
        run_dir = _wait_for_rows(tmp_path, process)
        rows_before = json.dumps(read_rows(run_dir), allow_nan=True)[:-1]  # without the closing "]"
        start = time.monotonic()
        os.killpg(process.pid, sig)  # as a terminal's Ctrl-C reaches the whole process group
        out, err = process.communicate(timeout=STOP_SECONDS)
        assert time.monotonic() - start < STOP_SECONDS
        assert process.returncode == 130, err[-2000:]
        assert "Traceback" not in err
        assert err.strip().splitlines()[-1].startswith(f"error: stopped by {signal.Signals(sig).name}: ")
        assert json.dumps(read_rows(run_dir), allow_nan=True).startswith(rows_before)  # nothing lost
        assert (run_dir / "summary.csv").stat().st_size > 0
        deadline = time.monotonic() + 10
        while _group_alive(process.pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _group_alive(process.pid), "a process of the run outlived it"
    finally:
        if _group_alive(process.pid):
            os.killpg(process.pid, signal.SIGKILL)


def test_a_second_signal_exits_at_once(tmp_path):
    process = _start(tmp_path)
    try:
        _wait_for_rows(tmp_path, process)
        os.kill(process.pid, signal.SIGINT)
        time.sleep(0.5)
        start = time.monotonic()
        os.kill(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=30)
        seconds = time.monotonic() - start
        # 128 + SIGINT from our handler. (A silent exit 1 here was Ray's driver exiting when it
        # retried a killed actor's turn after ray.shutdown(); a stop now kills actors without restart.)
        assert seconds < 10 and process.returncode == 128 + signal.SIGINT, (seconds, process.returncode,
                                                                            err[-2000:])
        assert "error: stopped by" not in err  # exited at once, before the summary
    finally:
        if _group_alive(process.pid):
            os.killpg(process.pid, signal.SIGKILL)
