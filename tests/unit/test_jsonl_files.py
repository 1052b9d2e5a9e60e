"""One JSON-lines writer (a line whole or not at all) and one reader (a broken line skipped, counted,
never fatal), for every file a run streams."""

import json
import logging

import pytest

from fedgraph_sim.jsonl_files import append_jsonl, read_jsonl
from fedgraph_sim.rows.store import read_rows
from fedgraph_sim.utility import read_utility, write_utility


def test_a_broken_line_is_skipped_and_counted(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({"a": 1}) + "\n\n[1, 2]\n" + json.dumps({"a": 2}) + "\n{\"a\": 3, \"b")
    notes: list[str] = []
    assert read_jsonl(path, notes.append) == [{"a": 1}, {"a": 2}]
    assert notes == ["results.jsonl: 2 unreadable line(s) ignored"]  # a list and a half-written last line


def test_every_reader_of_run_files_shares_the_policy(tmp_path, caplog):
    (tmp_path / "results.jsonl").write_text(json.dumps({"attack": "grain"}) + "\n{\"attack\": ")
    (tmp_path / "utility.jsonl").write_text(json.dumps({"round": 0}) + "\nnot json\n")
    with caplog.at_level(logging.WARNING):
        assert read_rows(tmp_path) == [{"attack": "grain"}]
        assert read_utility(tmp_path) == [{"round": 0}]
    assert [r.getMessage() for r in caplog.records] == ["results.jsonl: 1 unreadable line(s) ignored",
                                                        "utility.jsonl: 1 unreadable line(s) ignored"]
    assert read_jsonl(tmp_path / "missing.jsonl") == []


def test_every_stream_a_run_writes_is_appended_whole_or_not_at_all(tmp_path, monkeypatch):
    """The utility lines go through the results' writer: on a full disk the part of a line that
    fitted is cut off again and the run stops with :class:`DiskFull`."""
    import errno
    import os

    from fedgraph_sim import jsonl_files
    from fedgraph_sim.errors import DiskFull

    write_utility(tmp_path, 0, {"test_accuracy": 0.5})
    real_write = os.write

    def disk_fills(fd, data):
        real_write(fd, data[:5])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(jsonl_files.os, "write", disk_fills)
    with pytest.raises(DiskFull, match="utility.jsonl: No space left on device; every line before it is whole"):
        write_utility(tmp_path, 1, {"test_accuracy": 0.6})
    monkeypatch.undo()
    assert (tmp_path / "utility.jsonl").read_text() == '{"round": 0, "test_accuracy": 0.5}\n'
    append_jsonl(tmp_path / "x.jsonl", {"nan": float("nan")})
    assert read_jsonl(tmp_path / "x.jsonl")[0]["nan"] != read_jsonl(tmp_path / "x.jsonl")[0]["nan"]
