"""Run directories and result rows: never append to another run; failures counted in one line."""

import json

import pytest

from fedgraph_sim.config import load_config
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.results import claim_run_dir, faults, new_run_dir, read_rows, seal


def test_a_run_never_writes_into_another_runs_directory(tmp_path):
    assert claim_run_dir(tmp_path / "fresh").is_dir()
    assert claim_run_dir(tmp_path / "fresh") == tmp_path / "fresh"  # still empty: fine
    (tmp_path / "fresh" / "results.jsonl").write_text("{}\n")
    with pytest.raises(ConfigError, match="already holds files"):
        claim_run_dir(tmp_path / "fresh")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        claim_run_dir(tmp_path / "file")


def test_run_refuses_a_used_directory_before_anything_runs(tmp_path):
    from fedgraph_sim.runtime import run

    used = tmp_path / "used"
    used.mkdir()
    (used / "results.jsonl").write_text('{"seed": 1}\n')
    config = load_config(None, ["data.dataset=synthetic", "attack.names=[random]"])
    with pytest.raises(ConfigError, match="already holds files"):
        run(config, run_dir=used)
    assert (used / "results.jsonl").read_text() == '{"seed": 1}\n'  # nothing lost, nothing added


def test_new_run_directories_are_unique(tmp_path):
    assert new_run_dir(tmp_path, "x") != new_run_dir(tmp_path, "x")


def test_runs_started_together_each_get_a_directory(tmp_path):
    """Creation is atomic (``mkdir`` without ``exist_ok``): 40 runs of one name started in the
    same second from 8 threads get 40 directories, none refused."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        made = list(pool.map(lambda _: new_run_dir(tmp_path / "runs", "same"), range(40)))
    assert len(set(made)) == 40 and all(p.is_dir() for p in made)


def test_an_output_link_that_loops_or_dangles_is_named(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="is a symbolic link that loops"):
        new_run_dir(tmp_path / "a", "x")
    with pytest.raises(ConfigError, match="is a symbolic link that points to .*nowhere, which does not exist"):
        new_run_dir(tmp_path / "gone" / "runs", "x")


def test_failed_turns_of_unattacked_rounds_are_in_the_warning():
    assert faults([], []) == ""
    assert faults([{"status": "ok"}], ["non-finite update: 'w' holds NaN or inf", "RuntimeError: boom"]) == (
        "warning: 2 client turn(s) failed over the run, 1 of them a non-finite update left out of the "
        "aggregate (log.txt)")


def test_faults_are_one_warning_line():
    rows = [{"status": "ok"}, {"status": "client_failed"}, {"status": "crashed"}, {"status": "client_failed"},
            {"status": "not_applicable"}, {"status": "failed"}]
    assert faults(rows) == ("warning: 3 row(s) record a failure (2 client_failed, 1 crashed); each row's "
                            "message says why (the run's results)")
    assert faults([{"status": "ok"}, {"status": "timeout"}]) == ""


def _row(status, value=None, prior=0.25, graph_id=0, **extra):
    """A row of one attacked graph: ``value`` for every GRAIN and identity-AUC column when scored."""
    from fedgraph_sim.metrics import ALIGNMENTS

    row = {"dataset": "d", "attack": "a", "defense": "none", "status": status, "graph_id": graph_id,
           "hint_features": False, "hint_adjacency": False, **extra}
    for alignment in ALIGNMENTS:
        for name in ("gsm0", "full_iso", "adj_auc"):
            column = f"{alignment}_{name}"
            row[f"prior_{column}"] = prior
            if value is not None:
                row[column], row[f"gain_{column}"] = value, value - prior
    return row


def test_every_table_cell_shows_a_mean_and_a_gain_over_the_same_graphs():
    """The cell's mean minus its prior is its gain, for metrics summarised over scored graphs and
    for those that count failures as 0 (the failed graphs' priors are in the gain too)."""
    from fedgraph_sim.report.tables import metric_cell
    from fedgraph_sim.results import summarize

    rows = [_row("ok", 1.0, prior=0.5, graph_id=1), _row("ok", 0.5, prior=0.0, graph_id=2),
            _row("failed", prior=0.25, graph_id=3), _row("not_applicable", graph_id=4)]
    (entry, *_) = summarize(rows)
    # failures as 0 over the three attacked graphs: mean 0.5, prior 0.25, gain 0.25
    assert entry["full_iso_all_mean"] == pytest.approx(0.5)
    assert entry["prior_full_iso_all_mean"] == pytest.approx(0.25)
    assert entry["gain_full_iso_all_mean"] == pytest.approx(0.25)
    assert metric_cell(entry, "full_iso") == "50.0 [0.0, 100.0] [Δ +25.0 vs 25.0]"
    # scored graphs only: mean 0.75, prior 0.25, gain 0.5
    assert (entry["adj_auc_mean"], entry["prior_adj_auc_mean"], entry["gain_adj_auc_mean"]) == \
        pytest.approx((0.75, 0.25, 0.5))
    for name in ("gsm0", "full_iso", "adj_auc"):
        cell = metric_cell(entry, name, style="compact")
        assert "(" in cell  # every cell here has its gain


def test_no_gain_is_shown_when_some_graphs_of_the_mean_have_no_prior():
    from fedgraph_sim.results import mean_and_gain

    rows = [_row("ok", 1.0, prior=0.5), _row("ok", 0.5, prior=0.0, hint_adjacency=True)]
    out = mean_and_gain(rows, "adj_auc", "identity")
    assert out["mean"] == pytest.approx(0.75) and out["count"] == 2
    assert out["gain"] != out["gain"] and out["prior"] != out["prior"]  # NaN: not over fewer graphs


def test_a_run_directory_records_the_projects_commit(tmp_path):
    from fedgraph_sim.results import project_version, provenance

    import subprocess
    from pathlib import Path

    import fedgraph_sim

    version = project_version()
    assert set(version) == {"commit", "dirty"} and provenance()["project"] == version
    root = Path(fedgraph_sim.__file__).resolve().parent.parent
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0:  # a checkout (as in CI): its HEAD, and whether it differs from it
        assert version["commit"] == head.stdout.strip() and isinstance(version["dirty"], bool)
    else:
        assert version == {"commit": "unknown", "dirty": None}


def test_a_full_disk_leaves_whole_rows_and_says_so(tmp_path, monkeypatch):
    import errno
    import os

    from fedgraph_sim import results
    from fedgraph_sim.errors import DiskFull, RunFailed

    writer = results.ResultWriter(tmp_path)
    writer.write({"attack": "random", "round": 1})
    real_write = os.write

    def disk_fills(fd, data):  # part of the row fits, then the disk is full
        real_write(fd, data[:7])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(results.os, "write", disk_fills)
    with pytest.raises(DiskFull, match="No space left on device; the 1 rows written before it are whole") as info:
        writer.write({"attack": "random", "round": 2})
    assert isinstance(info.value, RunFailed)  # one line and exit code 1 at every entry point
    assert results.read_rows(tmp_path) == [{"attack": "random", "round": 1}]


def _stream(run_dir, rows, tail=""):
    run_dir.mkdir(parents=True, exist_ok=True)
    with (run_dir / "results.jsonl").open("a") as fh:
        fh.write("".join(json.dumps(r, allow_nan=True) + "\n" for r in rows) + tail)


def test_sealing_moves_the_streamed_rows_into_parquet(tmp_path):
    rows = [{"attack": "grain", "status": "ok", "seconds": float("nan")}, {"attack": "glg", "status": "timeout"}]
    _stream(tmp_path, rows, tail='{"half a line')  # a killed run's last line
    assert json.dumps(read_rows(tmp_path), allow_nan=True) == json.dumps(rows, allow_nan=True)
    assert seal(tmp_path) == tmp_path / "results.parquet"
    assert not (tmp_path / "results.jsonl").exists()
    assert json.dumps(read_rows(tmp_path), allow_nan=True) == json.dumps(rows, allow_nan=True)
    assert seal(tmp_path) is None  # nothing left to move
    _stream(tmp_path, [{"attack": "dlg", "status": "ok"}])  # rows after a seal follow the sealed ones
    assert [r["attack"] for r in read_rows(tmp_path)] == ["grain", "glg", "dlg"]
    seal(tmp_path)
    assert [r["attack"] for r in read_rows(tmp_path)] == ["grain", "glg", "dlg"]


def test_a_seal_that_cannot_write_keeps_the_json_lines(tmp_path, monkeypatch):
    import errno

    import fedgraph_sim.results as results

    def full_disk(rows, path):
        raise OSError(errno.ENOSPC, "No space left on device")

    _stream(tmp_path, [{"attack": "grain", "status": "ok"}])
    warned = []  # the log's own handlers vary with what ran before in the session
    monkeypatch.setattr(results, "write_parquet", full_disk)
    monkeypatch.setattr(results.log, "warning", lambda message, *args: warned.append(message % args))
    assert seal(tmp_path) is None
    assert len(warned) == 1 and "not sealed" in warned[0] and "No space left" in warned[0]
    assert [p.name for p in tmp_path.iterdir()] == ["results.jsonl"]
    assert read_rows(tmp_path) == [{"attack": "grain", "status": "ok"}]
