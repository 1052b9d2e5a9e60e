"""fedgraph_sim.data.store: the dataset cache, shared by every process on the machine."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fedgraph_sim.data import store
from fedgraph_sim.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
LOAD = """
import json, sys, time
from fedgraph_sim.data.tu import load_tu
time.sleep(max(0.0, float(sys.argv[1]) - time.time()))  # every process starts loading at once
dataset = load_tu("TINY")
print(json.dumps([len(dataset.graphs), int(sum(int(g.num_nodes) for g in dataset.graphs))]))
"""


def write_tu(root: Path, graphs: int) -> None:
    """A TU dataset of ``graphs`` 4-node rings with node labels 0..2 (the extremes present)."""
    raw = root / "tu" / "TINY" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    edges, indicator, node_labels = [], [], []
    for g in range(graphs):
        base = 4 * g + 1
        for a in range(4):
            b = (a + 1) % 4
            edges += [f"{base + a}, {base + b}", f"{base + b}, {base + a}"]
            indicator.append(str(g + 1))
            node_labels.append(str((g + a) % 3))
    (raw / "TINY_A.txt").write_text("\n".join(edges) + "\n")
    (raw / "TINY_graph_indicator.txt").write_text("\n".join(indicator) + "\n")
    (raw / "TINY_graph_labels.txt").write_text("\n".join(str(g % 2) for g in range(graphs)) + "\n")
    (raw / "TINY_node_labels.txt").write_text("\n".join(node_labels) + "\n")


def _load_at_once(data: Path, cache: Path, processes: int) -> list[tuple[int, int] | str]:
    env = {**os.environ, "FEDGRAPH_DATA_ROOT": str(data), "FEDGRAPH_CACHE": str(cache), "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(ROOT)}
    start = time.time() + 15  # past every process's imports
    running = [subprocess.Popen([sys.executable, "-c", LOAD, str(start)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(processes)]
    outcomes = []
    for process in running:
        out, err = process.communicate(timeout=300)
        outcomes.append(tuple(json.loads(out.strip().splitlines()[-1])) if process.returncode == 0 else err[-500:])
    return outcomes


@pytest.mark.slow
def test_processes_preparing_one_dataset_at_once_all_load_it_on_a_cold_and_a_stale_cache(tmp_path):
    data, cache = tmp_path / "data", tmp_path / "cache"
    write_tu(data, graphs=10)
    assert _load_at_once(data, cache, 4) == [(10, 40)] * 4  # cold: nothing cached yet
    write_tu(data, graphs=12)  # the raw files change: every cached copy is stale
    assert _load_at_once(data, cache, 4) == [(12, 48)] * 4
    leftovers = [p.name for p in (cache / "tu").iterdir() if p.name not in ("TINY", ".TINY.lock")]
    assert leftovers == []  # no half-written copy left beside the dataset


def test_a_stale_copy_is_replaced_whole(tmp_path, monkeypatch):
    data, cache = tmp_path / "data", tmp_path / "cache"
    monkeypatch.setenv("FEDGRAPH_DATA_ROOT", str(data))
    monkeypatch.setenv("FEDGRAPH_CACHE", str(cache))
    write_tu(data, graphs=3)
    with store.prepared("tu", "TINY") as root:
        (root / "TINY" / "processed").mkdir()  # what PyG writes
    write_tu(data, graphs=5)
    with store.prepared("tu", "TINY") as root:
        assert sorted(p.name for p in (root / "TINY").iterdir()) == [".source", "raw"]  # processed/ is gone
        assert len((root / "TINY" / "raw" / "TINY_graph_labels.txt").read_text().split()) == 5


def test_a_refresh_that_cannot_rename_its_copy_into_place_keeps_the_old_copy(tmp_path, monkeypatch):
    data, cache = tmp_path / "data", tmp_path / "cache"
    monkeypatch.setenv("FEDGRAPH_DATA_ROOT", str(data))
    monkeypatch.setenv("FEDGRAPH_CACHE", str(cache))
    write_tu(data, graphs=3)
    with store.prepared("tu", "TINY"):
        pass
    write_tu(data, graphs=5)
    rename = Path.rename

    def fresh_fails(self, target):
        if self.name.endswith(".new"):  # the fresh copy's move into place; the old copy's move aside succeeds
            raise OSError(28, "No space left on device")
        return rename(self, target)

    monkeypatch.setattr(Path, "rename", fresh_fails)
    with pytest.raises(ConfigError, match="No space left on device"):
        with store.prepared("tu", "TINY"):
            pass
    labels = cache / "tu" / "TINY" / "raw" / "TINY_graph_labels.txt"
    assert len(labels.read_text().split()) == 3  # the old copy is back at its place
    assert sorted(p.name for p in (cache / "tu").iterdir()) == [".TINY.lock", "TINY"]


def test_an_unwritable_cache_is_one_line(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("FEDGRAPH_CACHE", str(blocker))
    with pytest.raises(ConfigError, match=f"^FEDGRAPH_CACHE: cannot write {blocker} "):
        with store.prepared("tu", "TINY"):
            pass
