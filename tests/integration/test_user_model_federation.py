"""A user's own PyG model through the federation and the audit: PyG's GIN example
(``docs/examples/mutag_gin``) trained by 4 clients, every attack run or said not to apply, with
its reason; no error rows. MUTAG when FEDGRAPH_DATA_ROOT is set (CI), synthetic graphs otherwise."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fedgraph_sim.config import load_config
from fedgraph_sim.results import read_rows
from fedgraph_sim.runtime.simulation import run

pytestmark = [pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = "docs/examples/mutag_gin/gin.yaml"
DATA = [] if os.environ.get("FEDGRAPH_DATA_ROOT") else ["data.dataset=synthetic", "data.options={num_graphs: 40}"]


@pytest.mark.usefixtures("local_ray")
def test_pygs_gin_example_trains_and_every_attack_runs_or_says_why(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the example names its model file from the repository's root
    config = load_config(EXAMPLE, [*DATA, "attack.time_budget=5", f"output.dir={tmp_path}"])
    rows = read_rows(run(config).run_dir)
    by_attack = {}
    for r in rows:
        by_attack.setdefault(r["attack"], []).append(r)
    assert set(by_attack) == set(config.attack.names) and all(len(v) == 4 for v in by_attack.values())
    assert not [r for r in rows if r["status"] in ("error", "crashed")], [r["message"] for r in rows]
    for name in ("random", "dlg", "inverting_gradients", "majority_type"):
        assert any(r["status"] == "ok" for r in by_attack[name]), by_attack[name][0]["message"]
    assert all(r["status"] == "not_applicable" and "(BatchNorm) normalises node states" in r["message"]
               for r in by_attack["grain"])


def test_the_audit_of_pygs_gin_names_what_applied_and_why_the_rest_did_not(tmp_path):
    out = tmp_path / "audit"
    done = subprocess.run([sys.executable, "-m", "fedgraph_sim", "audit", "--config", EXAMPLE, "--out", str(out),
                           "--no-what-if", "--seconds", "5", "--jobs", "1", *DATA], cwd=ROOT, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    attacks = json.loads((out / "audit.json").read_text())["attacks"]
    assert attacks["dlg"]["applies"] and attacks["random"]["applies"]
    assert not attacks["grain@ext"]["applies"] and "BatchNorm" in attacks["grain@ext"]["reason"]
    assert not attacks["graphdlg"]["applies"] and "a user's model (Net)" in attacks["graphdlg"]["reason"]
    assert "grain@ext" in (out / "audit.html").read_text()
