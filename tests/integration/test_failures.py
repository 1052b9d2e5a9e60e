"""Every failure is a row: a real federation where two clients have nothing to train on. (That
``--strict`` turns such a warning into exit 1 is checked by the non-finite update's federation.)"""

import subprocess
import sys

import pytest

from fedgraph_sim.rows.store import read_rows

pytestmark = pytest.mark.slow
EMPTY = ["data.dataset=synthetic", "partition.min_partition_size=0", "partition.alpha=0.01",
         "federation.num_clients=4", "attack.names=[random,majority_type]"]  # clients 2 and 3: empty


def test_failed_client_turns_are_rows_and_the_run_goes_on(tmp_path):
    out = subprocess.run([sys.executable, "-m", "fedgraph_sim", "run", *EMPTY, f"output.dir={tmp_path}"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    run_dir, = tmp_path.glob("*-default")
    rows = read_rows(run_dir)
    failed = [r for r in rows if r["status"] == "client_failed"]
    assert {(r["client"], r["attack"]) for r in failed} == {(c, a) for c in (2, 3) for a in ("random", "majority_type")}
    assert all("empty partition" in r["message"] and r["graph_id"] is None for r in failed)
    assert {r["client"] for r in rows if r["status"] == "ok"} == {0, 1}  # the others were attacked
    summary = (run_dir / "summary.csv").read_text()
    assert "client_failed=2" in summary  # per attack, in the statuses column
    assert "warning: 4 row(s) record a failure (4 client_failed)" in out.stdout
