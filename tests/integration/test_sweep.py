"""Sweeps end to end: real federations in worker processes, killed midway and resumed."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from fedgraph_sim.rows.store import read_rows
from fedgraph_sim.runtime import sweep

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SPEC = {
    "name": "resume",
    "base": {"data": {"dataset": "synthetic", "options": {"num_graphs": 40}, "test_fraction": 0.2},
             "federation": {"num_clients": 2, "rounds": 2},
             # the second cell is slow enough (seconds) to be interrupted
             "attack": {"params": {"inverting_gradients": {"iterations": 300}}}},
    "axes": {"attacks": ["random", "inverting_gradients"],
             "defenses": [{"name": "dp_gradients", "sigma": [0.5]}]},
}


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def rows_of(sweep_dir: Path) -> list[dict]:
    rows = read_rows(sweep_dir)
    return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]  # timing differs


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The spec file and the rows of the sweep run whole on the local pool."""
    tmp_path = tmp_path_factory.mktemp("whole")
    spec_file = tmp_path / "spec.yaml"
    spec = {**SPEC, "base": {**SPEC["base"], "output": {"dir": str(tmp_path / "runs")}}}
    spec_file.write_text(yaml.safe_dump(spec))
    whole = sweep(spec_file, tmp_path / "whole")  # the Python API a notebook uses
    assert not whole.failures
    return spec_file, rows_of(whole.sweep_dir)


@pytest.mark.parametrize("backend", ["local", "ray"])
def test_a_killed_and_resumed_sweep_gives_the_uninterrupted_rows(tmp_path, uninterrupted, backend):
    spec_file, expected = uninterrupted
    assert len(expected) == 2 * 2 * 2  # attacks x rounds x clients
    assert {(r["defense_family"], r["defense_strength"]) for r in expected} == {("dp_gradients", 0.5)}
    assert all("test_accuracy" in r for r in expected)

    cut = tmp_path / "cut"
    proc = subprocess.Popen([sys.executable, str(ROOT / "experiments" / "sweep.py"), "--config", str(spec_file),
                             "--out", str(cut), "--jobs", "1", "--backend", backend], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not list(cut.glob("cells/*/done")) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, "the sweep finished before it could be interrupted"
    os.kill(proc.pid, signal.SIGKILL)  # the runner only: its workers must not live on
    proc.wait()
    # local workers die with the runner at once; Ray's tasks with its raylet, and its agents once
    # they give up on its GCS (LOCAL_RAY_ENV: 5 s, instead of 60)
    deadline = time.time() + 30
    while _group_alive(proc.pid) and time.time() < deadline:
        time.sleep(0.5)
    assert not _group_alive(proc.pid), "a sweep worker outlived its runner"
    done = len(list(cut.glob("cells/*/done")))
    assert not (cut / "results.parquet").exists()
    assert done == 1 if backend == "local" else done in (1, 2)  # a Ray task may finish before it is stopped

    resumed = subprocess.run([sys.executable, str(ROOT / "experiments" / "sweep.py"), "--resume", str(cut),
                              "--backend", backend],
                             cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert rows_of(cut) == expected
    timing = json.loads((cut / "timing.json").read_text())
    assert timing[-1]["cells_run"] == 2 - done and timing[-1]["backend"] == backend  # finished cells not run again


def test_bad_sweep_input_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**SPEC, "axes": {"defenses": [{"name": "prune", "p": [0.5, 1.0]}]}}))
    out = subprocess.run([sys.executable, str(ROOT / "experiments" / "sweep.py"), "--config", str(bad),
                          "--out", str(tmp_path / "never")], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip() == "error: axes.defenses.0.p: must be in [0, 1) (got 1.0)"
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_the_runner_stops_the_sweep_and_everything_it_started(tmp_path, sig):
    spec = {**SPEC, "base": {**SPEC["base"], "federation": {"num_clients": 2, "rounds": 1000000}}}
    spec_file = tmp_path / "endless.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    out = tmp_path / "endless"
    # started with SIGINT ignored, as a shell's background job (a CI script's `&`) inherits it:
    # Ctrl-C must stop the sweep anyway (the runner hung here until it set its own handler)
    proc = subprocess.Popen([sys.executable, str(ROOT / "experiments" / "sweep.py"), "--config", str(spec_file),
                             "--out", str(out), "--jobs", "1"], cwd=ROOT, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 300  # until the federation trains (its utility.jsonl grows; sealed once done)
        while not list(out.glob("federations/*/utility.*")) and time.time() < deadline and proc.poll() is None:
            time.sleep(0.5)
        assert proc.poll() is None, proc.stderr.read()[-2000:]
        start = time.time()
        os.kill(proc.pid, sig)  # the runner only, as a service manager or `kill` would
        stdout, stderr = proc.communicate(timeout=60)
        assert time.time() - start < 20 and proc.returncode == 130
        assert "Traceback" not in stderr, stderr[-3000:]
        assert f"interrupted; finished cells are kept. Continue with: fedgraph-sim sweep --resume {out}" in " ".join(
            stdout.split())  # the console wraps long lines
        deadline = time.time() + 10
        while _group_alive(proc.pid) and time.time() < deadline:
            time.sleep(0.5)
        assert not _group_alive(proc.pid), "a process of the sweep outlived it"
    finally:
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
