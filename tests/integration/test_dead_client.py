"""A client process that dies takes no other client down: Ray replaces it and runs the turn it was
running once more; a turn that kills its process every time fails alone, as one row naming its
client in one line, and the federation goes on."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fedgraph_sim.rows.store import read_rows

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
EVERY = {(round_, client) for round_ in (1, 2, 3) for client in range(4)}


def _run(tmp_path: Path, death: str) -> tuple[list[dict], str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "FEDGRAPH_TEST_DEATH": death, "FEDGRAPH_TEST_DEATH_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "fedgraph_sim", "run", "data.dataset=synthetic",
                           "federation.num_clients=4", "federation.rounds=3", "attack.names=[random]",
                           "plugins=[tests.integration.plugin_dying_client]", "defenses=[{name: dies}]",
                           f"output.dir={tmp_path / 'runs'}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "ClientAppActor.terminate failed" not in done.stderr  # the backend kills its actors at the end
    (config,) = (tmp_path / "runs").glob("*/config.yaml")  # beside it: Flower's home, .flwr
    run_dir = config.parent
    return read_rows(run_dir), done.stderr


def test_a_killed_client_process_is_replaced_and_a_turn_that_always_kills_it_fails_alone(tmp_path):
    rows, stderr = _run(tmp_path, "always,once")  # one federation, one victim of each kind
    assert (tmp_path / "victim_1").is_file(), "no second turn was killed"
    failed = [r for r in rows if r["status"] == "client_failed"]
    assert len(failed) == 1, [(r["round"], r["client"], r["status"], r.get("message")) for r in rows]
    (dead,) = failed
    assert dead["client"] in range(4) and "\n" not in dead["message"], dead
    ok = {(r["round"], r["client"]) for r in rows if r["status"] == "ok"}
    # the others in its round and everyone after, the once victim's turn among them (run again)
    assert ok == EVERY - {(dead["round"], dead["client"])}
    assert "its client process died during the turn; the turn ran again" in stderr
