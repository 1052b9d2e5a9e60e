import json
from pathlib import Path

import pytest
import yaml

from fedgraph_sim.config import load_config, to_yaml
from fedgraph_sim.errors import ConfigError

from fedgraph_sim.runtime.commands import reproduce

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "reproduce.py"


def earlier_reproduction(tmp_path, config) -> Path:
    run_dir = tmp_path / "runs" / "case"
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(to_yaml(config, {"versions": {"torch": "x"}}))
    table = tmp_path / "table"
    table.mkdir()
    (table / "cases.json").write_text(json.dumps({"Tox21 GCN": str(run_dir)}))
    return table


def test_reuse_takes_a_run_with_the_same_configuration_only(tmp_path):
    config = load_config(None, ["data.dataset=synthetic", "name=grain_table2-Tox21_GCN"])
    table = earlier_reproduction(tmp_path, config)
    renamed = config.model_copy(update={"name": "other", "output": config.output.model_copy(update={"dir": "x"})})
    assert reproduce.reusable_run([table], "Tox21 GCN", renamed) == tmp_path / "runs" / "case"
    assert reproduce.reusable_run([], "Tox21 GCN", config) is None
    changed = load_config(None, ["data.dataset=synthetic", "seed=1"])
    with pytest.raises(ConfigError, match="used another configuration"):
        reproduce.reusable_run([table], "Tox21 GCN", changed)
    with pytest.raises(ConfigError, match="no run of case 'BBBP GCN'"):
        reproduce.reusable_run([table], "BBBP GCN", config)


def test_reuse_of_a_missing_directory_is_one_line_and_exit_2(tmp_path, capsys):
    config_file = SCRIPT.parent / "configs" / "reproduce" / "grain_table3.yaml"
    assert reproduce.main(["--config", str(config_file), "--reuse", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: --reuse: no such directory {tmp_path / 'nope'}"]
    assert yaml.safe_load(config_file.read_text())["extends"] == "grain_table2.yaml"


@pytest.mark.parametrize("text, override, expected", [
    ("base: {}\ncases: [{label: a, set: {seed: 1}}", None, "bad.yaml is not valid YAML"),
    ("base: {}\ncases:\n  - set: {seed: 1}\n", None, "bad.yaml: cases.0: each case is a mapping with a 'label'"),
    ("base: {}\ncases: {label: a}\n", None, "bad.yaml: cases: a list"),
    ("base: {}\ncases: [{label: a, set: [seed]}]\n", None, "bad.yaml: cases.0.set: a mapping"),
    ("base: {}\nset: [seed]\ncases: [{label: a}]\n", None, "bad.yaml: set: a mapping of dotted keys"),
    ("base: {data: {dataset: synthetic}}\ncases: [{label: a}]\n", "seed=[1", "seed: the value is not valid YAML"),
])
def test_a_malformed_reproduction_is_one_line_and_exit_2(tmp_path, capsys, text, override, expected):
    config_file = tmp_path / "bad.yaml"
    config_file.write_text(text)
    argv = ["--config", str(config_file)] + ([override] if override else [])
    assert reproduce.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and expected in err[0]


def test_dry_run_validates_every_case_lists_them_and_writes_nothing(tmp_path, capsys):
    runs = tmp_path / "runs"
    config_file = tmp_path / "tiny.yaml"
    config_file.write_text(yaml.safe_dump({
        "victim_graphs": 3, "metrics": ["adj_auc"],
        "base": {"name": "tiny", "data": {"dataset": "synthetic", "options": {"num_graphs": 40}},
                 "federation": {"num_clients": 2}, "attack": {"names": ["random"]}, "output": {"dir": str(runs)}},
        "cases": [{"label": "a", "set": {}}, {"label": "b", "set": {"seed": 1}}]}))
    assert reproduce.main(["--config", str(config_file), "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "case a: 3 rounds, attacks random", "case b: 3 rounds, attacks random", "2 cases"]
    assert not runs.exists()
    # what only the data shows (the flatten readout's rows against the largest graph) fails the dry run
    spec = yaml.safe_load(config_file.read_text())
    spec["cases"][1]["set"] = {"model.pool": "flatten", "model.flatten_nodes": 3}
    config_file.write_text(yaml.safe_dump(spec))
    assert reproduce.main(["--config", str(config_file), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: model.flatten_nodes: 3 rows cannot hold synthetic's largest graph")
    assert not runs.exists()


def test_a_configs_own_set_applies_to_every_case_it_extends_before_the_cases_own(tmp_path):
    from fedgraph_sim.runtime.reproduction import load_reproduction
    (tmp_path / "parent.yaml").write_text("base: {data: {dataset: synthetic}, model: {hidden: 300}}\n"
                                          "cases: [{label: a}, {label: b, set: {model.hidden: 8, seed: 3}}]\n")
    (tmp_path / "child.yaml").write_text("extends: parent.yaml\nset: {model.hidden: 32, seed: 1}\n")
    _, cases, _ = load_reproduction(tmp_path / "child.yaml", ["seed=5"])
    assert [(c.config.model.hidden, c.config.seed) for c in cases] == [(32, 5), (8, 5)]
