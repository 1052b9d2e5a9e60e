"""Run directories and result rows: never append to another run; failures counted in one line."""

import pytest

from fedgraph_sim.config import load_config
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.results import claim_run_dir, faults, new_run_dir


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


def test_faults_are_one_warning_line():
    rows = [{"status": "ok"}, {"status": "client_failed"}, {"status": "crashed"}, {"status": "client_failed"},
            {"status": "not_applicable"}, {"status": "failed"}]
    assert faults(rows) == ("warning: 3 row(s) record a failure (2 client_failed, 1 crashed); each row's "
                            "message says why (results.jsonl)")
    assert faults([{"status": "ok"}, {"status": "timeout"}]) == ""
