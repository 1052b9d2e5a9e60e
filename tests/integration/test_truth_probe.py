"""The threat boundary holds against hostile attack code: a plugin attack that knows where the
bench keeps the truth (the run's directory and its audit records, /tmp, the data root, the cache,
the server's /proc) reaches none of it with default settings. The positive control is the same
probe with ``attack.workers: 0``, in the server's process, outside the boundary: there it reaches
every route, so a zero above is the boundary's doing, not a broken probe."""

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from fedgraph_sim.data.store import cache_root, data_root
from fedgraph_sim.rows.store import read_rows
from server.sandbox import namespaces_available

# the plugin's routes (importing the plugin here would register its attack for every other test)
ROUTES = ("proc_fd", "proc_environ", "proc_mem", "tmp_audit", "paths", "dataset", "home_cache", "fswalk", "mountinfo")

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def _reached(tmp_path: Path, *overrides: str, out: Path | None = None,
             earlier: tuple[Path, ...] = ()) -> dict[str, int]:
    """The most each route reached over the probe's rows (``earlier``: more places it is told of)."""
    root = data_root()
    out = out or tmp_path / "runs"
    out.mkdir(parents=True)
    tmp_path.mkdir(parents=True, exist_ok=True)
    paths = os.pathsep.join(str(p) for p in (out, root, cache_root(), *earlier) if p is not None)
    dataset = "MUTAG" if root is not None and (root / "tu" / "MUTAG").is_dir() else ""
    args = [sys.executable, "-m", "fedgraph_sim", "run", f"data.dataset={dataset or 'synthetic'}",
            "federation.num_clients=2", "federation.rounds=2", "attack.names=[truth_probe]",
            "attack.rounds=[2]", "plugins=[tests.integration.plugin_truth_probe]",
            f"attack.params={{truth_probe: {{paths: '{paths}', dataset: '{dataset}'}}}}",
            f"output.dir={out}", *overrides]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    (config,) = out.glob("*/config.yaml")
    run_dir = config.parent
    rows = read_rows(run_dir)
    assert rows and all(r["status"] == "ok" for r in rows), [r.get("message") for r in rows]
    return {route: max(r[f"info_{route}"] for r in rows) for route in ROUTES}


@pytest.mark.skipif(bool(namespaces_available()), reason=f"no namespaces here: {namespaces_available()}")
def test_attack_code_reaches_none_of_the_truth(tmp_path):
    # The positive control, in the server's process: an identical run whose output (its audit
    # records) stays in the checkout while the run under test goes on, as make run's does.
    earlier = ROOT / "runs" / f"truth-probe-{uuid.uuid4().hex[:8]}"
    try:
        outside = _reached(tmp_path / "outside", "attack.workers=0", out=earlier)
        inside = _reached(tmp_path / "inside", earlier=(earlier,))
    finally:
        shutil.rmtree(earlier, ignore_errors=True)
    expected_outside = {"proc_fd", "tmp_audit", "paths", "fswalk"}
    if data_root() is not None:
        expected_outside |= {"dataset", "proc_environ"}
    assert {route for route in ROUTES if outside[route] > 0} >= expected_outside, outside
    assert inside == {route: 0 for route in ROUTES}, inside
