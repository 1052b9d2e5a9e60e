"""Flower's Deployment Engine on loopback (``fedgraph-sim deploy``): the simulation's rows, and no
process left behind after success, failure or Ctrl-C."""

import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fedgraph_sim.config import DEFAULT_CONFIG, load_config
from fedgraph_sim.processes import alive
from fedgraph_sim.rows.store import read_rows
from fedgraph_sim.runtime.deployment import Launch, free_port
from fedgraph_sim.runtime.simulation import run
from fedgraph_sim.utility import read_utility

pytestmark = pytest.mark.slow

OVERRIDES = ["data.dataset=synthetic", "data.options={num_graphs: 60}", "data.test_fraction=0.2",
             "federation.num_clients=2", "attack.names=[random,idlg,majority_type]", "attack.params.idlg.iterations=5"]


def _rows(run_dir: Path) -> list[dict]:
    rows = read_rows(run_dir)
    # NaN != NaN: compare NaNs as a marker; the wall times differ by nature
    return [{k: "nan" if isinstance(v, float) and math.isnan(v) else v for k, v in r.items() if k != "seconds"}
            for r in rows]


def _pids_gone(run_dir: Path) -> list[int]:
    pids = [int(p) for p in (run_dir / "deployment" / "pids").read_text().split()]
    assert pids, "the launcher recorded no process"
    return [p for p in pids if alive(p)]


def _interrupted(proc: subprocess.Popen) -> str:
    """SIGINT to a ``fedgraph-sim deploy`` process; its stderr (killed if it ignores the signal,
    so a failing test leaves nothing behind)."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.communicate(timeout=120)[1]
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()[1]


def test_the_deployment_engine_gives_the_simulations_rows_and_leaves_no_process(tmp_path):
    overrides = [*OVERRIDES, f"output.dir={tmp_path}"]
    simulated = run(load_config(None, overrides), run_dir=tmp_path / "simulation")
    config = load_config(None, overrides)
    launch = Launch(config, DEFAULT_CONFIG, overrides, tmp_path / "deployed", echo=lambda line: None)
    assert launch() == "finished:completed"
    assert len(launch.stopped) >= 4  # the SuperLink, two SuperNodes, flwr run (and their children)
    assert _rows(tmp_path / "deployed") == _rows(simulated.run_dir)
    assert [u["test_accuracy"] for u in read_utility(tmp_path / "deployed")] == \
           [u["test_accuracy"] for u in read_utility(simulated.run_dir)]
    assert _pids_gone(tmp_path / "deployed") == []


def test_a_failed_run_is_reported_and_stops_everything(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "deployment").mkdir(parents=True)
    (run_dir / "results.jsonl").write_text("")  # another run's rows: the ServerApp refuses the directory
    launch = Launch(load_config(None, OVERRIDES), DEFAULT_CONFIG, OVERRIDES, run_dir, echo=lambda line: None)
    assert launch() == "finished:failed"
    assert (run_dir / "results.jsonl").read_text() == ""  # nothing already written is lost
    assert _pids_gone(run_dir) == []


def test_a_busy_port_is_one_clear_error(tmp_path):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        launch = Launch(load_config(None, OVERRIDES), DEFAULT_CONFIG, OVERRIDES, tmp_path / "run",
                        superlink=f"127.0.0.1:{busy.getsockname()[1]}", echo=lambda line: None)
        with pytest.raises(RuntimeError, match="cannot listen on 127.0.0.1"):
            launch()


def test_ctrl_c_stops_every_process_it_started(tmp_path):
    cmd = [sys.executable, "-m", "fedgraph_sim", "deploy", "--superlink", f"127.0.0.1:{free_port()}",
           *OVERRIDES, f"output.dir={tmp_path}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("*/deployment/supernode-1.log")) and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(2)  # SuperNodes up, the run being submitted
    err = _interrupted(proc)
    assert proc.returncode == 130, err
    assert "interrupted; stopped" in err
    (run_dir,) = tmp_path.glob("*-default")
    assert _pids_gone(run_dir) == []


def test_the_multi_host_recipe_on_one_host_superlink_and_supernodes_launched_apart(tmp_path):
    port = free_port()
    nodes = subprocess.Popen([sys.executable, "-m", "fedgraph_sim", "deploy", "--role", "supernodes",
                              "--superlink", f"127.0.0.1:{port}", *OVERRIDES, f"output.dir={tmp_path / 'nodes'}"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        launch = Launch(load_config(None, OVERRIDES), DEFAULT_CONFIG, OVERRIDES, tmp_path / "run", role="superlink",
                        superlink=f"127.0.0.1:{port}", echo=lambda line: None)
        assert launch() == "finished:completed"
        assert len(_rows(tmp_path / "run")) == 2 * 3  # clients x attacks
        assert nodes.poll() is None  # the SuperNodes serve on until interrupted
    finally:
        err = _interrupted(nodes)
    assert nodes.returncode == 130, err
    (node_dir,) = (tmp_path / "nodes").glob("*-default")
    assert {p.name for p in (node_dir / "deployment").glob("supernode-*.log")} == {"supernode-0.log", "supernode-1.log"}
    assert _pids_gone(node_dir) == [] and _pids_gone(tmp_path / "run") == []
