"""The row store: rows appended whole while a run goes, sealed into Parquet when it ends."""

import json

import pytest

from fedgraph_sim.rows.store import read_rows, seal


def test_a_full_disk_leaves_whole_rows_and_says_so(tmp_path, monkeypatch):
    import errno
    import os

    from fedgraph_sim import jsonl_files
    from fedgraph_sim.errors import DiskFull, RunFailed
    from fedgraph_sim.rows import store

    writer = store.ResultWriter(tmp_path)
    writer.write({"attack": "random", "round": 1})
    real_write = os.write

    def disk_fills(fd, data):  # part of the row fits, then the disk is full
        real_write(fd, data[:7])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(jsonl_files.os, "write", disk_fills)
    with pytest.raises(DiskFull, match="No space left on device; the 1 rows written before it are whole") as info:
        writer.write({"attack": "random", "round": 2})
    assert isinstance(info.value, RunFailed)  # one line and exit code 1 at every entry point
    assert store.read_rows(tmp_path) == [{"attack": "random", "round": 1}]


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

    from fedgraph_sim.rows import store

    def full_disk(rows, path):
        raise OSError(errno.ENOSPC, "No space left on device")

    _stream(tmp_path, [{"attack": "grain", "status": "ok"}])
    warned = []  # the log's own handlers vary with what ran before in the session
    monkeypatch.setattr(store, "write_parquet", full_disk)
    monkeypatch.setattr(store.log, "warning", lambda message, *args: warned.append(message % args))
    assert seal(tmp_path) is None
    assert len(warned) == 1 and "not sealed" in warned[0] and "No space left" in warned[0]
    assert [p.name for p in tmp_path.iterdir()] == ["results.jsonl"]
    assert read_rows(tmp_path) == [{"attack": "grain", "status": "ok"}]


def test_the_writer_stores_a_result_row_as_its_flat_form(tmp_path):
    from fedgraph_sim.rows.store import ResultWriter
    from tests.unit.test_row_record import _row

    writer = ResultWriter(tmp_path)
    writer.write(_row())
    writer.write({"attack": "random", "round": 2})  # a row already flat, as a test or a tool builds it
    assert read_rows(tmp_path) == [json.loads(json.dumps(_row().as_dict())), {"attack": "random", "round": 2}]
