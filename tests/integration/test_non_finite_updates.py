"""A client whose update holds a NaN (a diverged or poisoned client) is a failure row and stays
out of the aggregate: the global model stays finite, the run says so, and ``--strict`` exits 1."""

import subprocess
import sys

import pytest

from fedgraph_sim.rows.store import read_rows
from fedgraph_sim.utility import read_utility

pytestmark = pytest.mark.slow
POISONED = ["data.dataset=synthetic", "data.test_fraction=0.2", "federation.num_clients=4", "federation.rounds=3",
            "attack.names=[random]", "plugins=[tests.integration.plugin_nan_update]", "defenses=[{name: nan_update}]"]


def test_a_nan_update_is_counted_left_out_and_fails_strict(tmp_path):
    out = subprocess.run([sys.executable, "-m", "fedgraph_sim", "run", "--strict", *POISONED, f"output.dir={tmp_path}"],
                         capture_output=True, text=True, timeout=600)
    assert "Traceback" not in out.stderr
    assert out.returncode == 1, out.stderr[-2000:]
    run_dir, = tmp_path.glob("*-default")
    rows = read_rows(run_dir)
    poisoned = [r for r in rows if r["status"] == "client_failed"]
    assert poisoned and all(r["message"].startswith("non-finite update: ") for r in poisoned)
    assert any(r["status"] == "ok" for r in rows)  # the coin spared some turns, which were attacked
    losses = [u["test_loss"] for u in read_utility(run_dir)]
    assert all(loss == loss and abs(loss) < 1e6 for loss in losses)  # no NaN reached the global model
    assert "non-finite update left out of the aggregate" in out.stdout
