"""One JSON-lines reader, one policy for a broken line: skipped, counted, never fatal."""

import json
import logging

from fedgraph_sim.jsonl_files import read_jsonl
from fedgraph_sim.rows.store import read_rows
from fedgraph_sim.utility import read_utility


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
