import os
import importlib.util
from pathlib import Path

import pytest
import yaml

from fedgraph_sim.config import DEFAULT_CONFIG, DEFAULT_ROUND

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "run_round.py"
BASE = ["--config", str(DEFAULT_CONFIG)]  # the base config (GraphDLG's victim and attacks)
spec = importlib.util.spec_from_file_location("run_round", SCRIPT)
run_round = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_round)


def test_dry_run_prints_the_resolved_config(capsys, tmp_path):
    code = run_round.main(["--dry-run", "data.dataset=synthetic", "federation.rounds=2",
                           f"output.dir={tmp_path}"])
    assert code == 0
    resolved = yaml.safe_load(capsys.readouterr().out)
    assert resolved["federation"]["rounds"] == 2 and resolved["data"]["dataset"] == "synthetic"
    assert list(tmp_path.iterdir()) == []  # a dry run writes nothing


def test_without_a_config_it_runs_the_default_round_grain_can_attack(capsys):
    assert run_round.main(["--dry-run", "data.dataset=synthetic"]) == 0
    resolved = yaml.safe_load(capsys.readouterr().out)
    assert resolved == yaml.safe_load(yaml.safe_dump(resolved))
    default_round = yaml.safe_load(DEFAULT_ROUND.read_text())
    assert resolved["model"] == {**resolved["model"], **default_round["model"]}
    assert "grain" in resolved["attack"]["names"] and resolved["data"]["degree_feature"] is True


@pytest.mark.parametrize("override, expected", [
    ("federation.rounds=x", "federation.rounds:"),
    ("attack.names=[dlg,nope]", "attack.names: unknown attack 'nope'; valid attacks:"),
    ("data.dataset=nope", "data.dataset: unknown dataset 'nope'; valid datasets: synthetic"),
    ("defenses=[{name: nope}]", "defenses.0.name: unknown defense 'nope'; valid defenses: "),
    ("defenses=[{name: prune, p: 1.5}]", "defenses.0.p: must be in [0, 1) (got 1.5)"),
    ("defenses=[{name: dp_gradients, sigma: -1}]", "defenses.0.sigma: must be a number >= 0 (got -1)"),
    ("defenses=[{name: dp_gradients, sigma: 0.1, clip: -2}]", "defenses.0.clip: must be a number > 0"),
    ("defenses=[{name: dp_sgd, target_epsilon: 0.001}]", "defenses.0.target_epsilon: 0.001 cannot be reached"),
    ("attack.clients=[7]", "attack.clients: client 7 is out of range 0..3"),
    ("attack.params.dlg.iters=3", "attack.params.dlg.iters: not a parameter of dlg"),
    ("attack.params.glg.alpha=3", "attack.params.glg: 'glg' is not in attack.names"),
    ("model.pool=median", "model.pool:"),
    ("threat.features_known=[glg]", "threat.features_known: 'glg' is not in attack.names"),
    ("model.pool=flatten", "model.flatten_nodes: the rows of the flatten readout, needed with pool: flatten"),
    ("model.flatten_nodes=8", "model.flatten_nodes: the rows of the flatten readout"),
    (("model.pool=flatten", "model.flatten_nodes=3"),
     "model.flatten_nodes: 3 rows cannot hold synthetic's largest graph"),
    ("model.task=node", "model.task: synthetic is a graph-classification dataset, so model.task must be graph"),
    ("attack.names=[]", "attack.names: empty, so the run would write nothing"),
    ("seed=-1", "seed:"),
    ("train.lr=.inf", "train.lr:"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(capsys, tmp_path, override, expected):
    overrides = [override] if isinstance(override, str) else list(override)
    code = run_round.main([*BASE, "data.dataset=synthetic", *overrides, f"output.dir={tmp_path}"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and expected in err[0]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("make", ["file", "read_only"])
def test_an_output_dir_that_cannot_hold_runs_is_one_line(capsys, tmp_path, make):
    base = tmp_path / "out"
    if make == "file":
        base.write_text("keep me")
    else:
        base.mkdir()
        base.chmod(0o500)
        if os.access(base, os.W_OK):  # root ignores permissions
            pytest.skip("running as root: a read-only directory is still writable")
    code = run_round.main([*BASE, "data.dataset=synthetic", "attack.names=[random]", f"output.dir={base}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: output.dir: ")
    assert ("is a file, not a directory" if make == "file" else "cannot create") in err[0]
    assert make != "file" or base.read_text() == "keep me"
