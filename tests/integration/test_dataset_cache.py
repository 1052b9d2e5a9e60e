"""Two runs of one TU dataset started at the same moment share the default dataset cache, each
with clients that load the dataset at once: on a cold cache and on a stale one (the raw files
changed since the cache was filled), no client turn fails and both runs end cleanly."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fedgraph_sim.data.store import data_root

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def _two_runs_at_once(tmp_path: Path, data: Path, cache: Path, label: str) -> list[str]:
    env = {**os.environ, "FEDGRAPH_DATA_ROOT": str(data), "FEDGRAPH_CACHE": str(cache)}
    args = [sys.executable, "-m", "fedgraph_sim", "run", "data.dataset=MUTAG", "federation.num_clients=3",
            "federation.rounds=1", "attack.names=[random]", "--strict"]
    running = [subprocess.Popen([*args, f"output.dir={tmp_path / label / str(i)}"], env=env, cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    # --strict: a failed client turn (the cache error a client once met) exits 1
    return [err[-1500:] for process in running for _, err in [process.communicate(timeout=600)]
            if process.returncode != 0]


@pytest.mark.realdata
def test_two_runs_on_a_cold_and_a_stale_cache_lose_no_client(tmp_path):
    root = data_root()
    if root is None or not (root / "tu" / "MUTAG" / "raw").is_dir():
        pytest.skip("FEDGRAPH_DATA_ROOT with tu/MUTAG not set: real-data test skipped")
    data, cache = tmp_path / "data", tmp_path / "cache"
    shutil.copytree(root / "tu" / "MUTAG", data / "tu" / "MUTAG")
    assert _two_runs_at_once(tmp_path, data, cache, "cold") == []
    labels = next((data / "tu" / "MUTAG" / "raw").glob("*_graph_labels.txt"))
    os.utime(labels, ns=(time.time_ns(), time.time_ns()))  # the raw files changed: the cache is stale
    assert _two_runs_at_once(tmp_path, data, cache, "stale") == []
    assert sorted(p.name for p in (cache / "tu").iterdir()) == [".MUTAG.lock", "MUTAG"]
