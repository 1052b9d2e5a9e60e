import json

from fedgraph_sim.runtime.cli import main


def test_info_json_synthetic(capsys):
    assert main(["info", "synthetic", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["graphs"] == 200 and info["classes"] == 2 and info["feature_width"] == 4
    assert info["schema"]["blocks"][0]["values"] == ["C", "N", "O", "F"]
    assert info["glg_full_row_rank"] == 0  # 4 one-hot types can never span 6 or more nodes


def test_info_reports_glg_rank_condition(capsys):
    assert main(["info", "synthetic"]) == 0
    assert "GLG's closed forms (Props. 3, 5, 6) need X of full row rank: 0 of 200 graphs have it" in (
        capsys.readouterr().out)


def test_datasets_json_lists_synthetic(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("FEDGRAPH_DATA_ROOT", raising=False)
    monkeypatch.setenv("FEDGRAPH_CACHE", str(tmp_path))
    assert main(["datasets", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["synthetic", "random_graphs", "random_graph_balls", "sbm_communities"]
    assert {"graphs", "classes", "feature_width", "mean_nodes", "max_nodes"} <= set(rows[0])


def test_unknown_dataset_is_one_line_and_exit_2(capsys):
    assert main(["info", "NOPE"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown dataset 'NOPE'; valid datasets: synthetic" in err[0]


def test_missing_data_offline_names_the_root(capsys, monkeypatch, tmp_path, offline):
    monkeypatch.delenv("FEDGRAPH_DATA_ROOT", raising=False)
    monkeypatch.setenv("FEDGRAPH_CACHE", str(tmp_path))
    assert main(["info", "MUTAG"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: dataset MUTAG: not available offline "
                                               "(FEDGRAPH_DATA_ROOT is not set)")


def test_a_max_nodes_that_keeps_no_graph_is_one_line_and_exit_2(capsys):
    assert main(["info", "synthetic", "--max-nodes", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --max-nodes: no graph of synthetic has at most 1 nodes")


def test_attacks_lists_every_registered_attack_with_its_defaults(capsys, monkeypatch):
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "docs" / "examples"))
    assert main(["attacks", "--json", "--plugin", "ring_attack"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert {"dlg", "grain", "graphdlg", "majority_type", "ring"} <= set(rows)  # the plugin's too
    assert rows["graphdlg"]["requires"] == ["exact_gradient", "aux_graphs"]
    assert rows["graphdlg"]["batch_output"] == "one_for_batch" and rows["dlg"]["params"]["iterations"] == 100


def test_an_unimportable_plugin_for_attacks_is_one_line_and_exit_2(capsys):
    assert main(["attacks", "--plugin", "no_such_plugin_mod"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --plugin: cannot import 'no_such_plugin_mod'")
