"""A user's own attack, outside the package, works in every process: listed under ``plugins:``,
it runs in a sweep whose federations run in two spawned worker processes."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fedgraph_sim.rows.store import read_rows

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"


def test_a_plugin_attack_runs_in_a_sweep_with_two_jobs(tmp_path):
    spec = {"name": "plugin",
            "base": {"data": {"dataset": "synthetic", "options": {"num_graphs": 30}},
                     "federation": {"num_clients": 2, "rounds": 1},
                     "plugins": ["ring_attack"], "output": {"dir": str(tmp_path / "runs")}},
            "axes": {"attacks": ["ring", "random"],
                     "defenses": [{"name": "dp_gradients", "sigma": [0.1, 1.0]}]}}
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLES), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "fedgraph_sim", "sweep", "--config", str(spec_file),
                           "--out", str(tmp_path / "sweep"), "--jobs", "2"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = read_rows(tmp_path / "sweep")
    ring = [r for r in rows if r["attack"] == "ring"]
    assert {r["defense_strength"] for r in ring} == {0.1, 1.0}
    assert ring and all(r["status"] == "ok" for r in ring)


def test_an_unimportable_plugin_is_one_line_and_exit_2(tmp_path):
    done = subprocess.run([sys.executable, "-m", "fedgraph_sim", "run", "--dry-run", "plugins=[no_such_plugin_mod]"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("error: plugins: cannot import 'no_such_plugin_mod'")
    assert "Traceback" not in done.stderr
