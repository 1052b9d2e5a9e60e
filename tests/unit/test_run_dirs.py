"""Run directories: never append to another run; each run its own directory, however many start at once."""

import pytest

from fedgraph_sim.config import load_config
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.run_dirs import claim_run_dir, new_run_dir


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
