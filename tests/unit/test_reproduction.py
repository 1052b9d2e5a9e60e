from pathlib import Path

import pytest
import yaml

from attacks.base import build_attack

from fedgraph_sim.errors import ConfigError
from fedgraph_sim.runtime.reproduction import load_reproduction, markdown

REPRO = Path(__file__).resolve().parents[2] / "experiments" / "configs" / "reproduce"


@pytest.mark.parametrize("name, cases", [("graphdlg_table1", 5), ("graphdlg_table1_shuffled", 5),
                                         ("graphdlg_table3", 5), ("graphdlg_table4", 12)])
def test_reproduction_configs_validate(name, cases):
    spec, loaded, reference = load_reproduction(REPRO / f"{name}.yaml")
    assert len(loaded) == cases
    assert set(reference["values"]) == {c.label for c in loaded}
    config = loaded[0].config
    assert config.federation.num_clients == 2 and config.attack.clients == [0]
    assert config.metrics.entries == "full" and config.train.batch_size == 1


def test_table1_matches_the_paper_setup():
    _, cases, reference = load_reproduction(REPRO / "graphdlg_table1.yaml")
    c = cases[0].config
    assert (c.model.conv, c.model.layers, c.model.hidden, c.model.pool) == ("gcn", 2, 16, "mean")
    assert c.aux.scenario == "same" and c.aux.source == "client:1" and c.partition.alpha == 1.0
    for case in cases:  # every row of the paper's table, and the priors
        assert set(reference["values"][case.label]) | {"majority_type", "aux_mean_adjacency"} <= set(
            case.config.attack.names)
    tableak = build_attack("tableak", c.attack.params["tableak"]).params
    assert (tableak.iterations, tableak.ensemble, tableak.lr, tableak.signed) == (100, 30, 0.06, True)


def test_cases_filter_and_bad_case():
    _, cases, _ = load_reproduction(REPRO / "graphdlg_table1.yaml", only=["PTC_MR"])
    assert [c.label for c in cases] == ["PTC_MR"]
    with pytest.raises(ConfigError, match="--cases: unknown case NOPE"):
        load_reproduction(REPRO / "graphdlg_table1.yaml", only=["NOPE"])


def test_glg_synthetic_carries_the_papers_nearest_numbers_for_every_case():
    from fedgraph_sim.runtime.reproduction import paper_values

    _, cases, reference = load_reproduction(REPRO / "glg_synthetic.yaml")
    assert set(reference["values"]) == {c.label for c in cases if not c.label.endswith("shuffled")}
    assert paper_values(reference, "node-1, SAGE", "glg") == {"target_rnmse": 0.0028}
    assert paper_values(reference, "graph, SAGE", "glg") == {"adj_auc": 1.0, "adj_ap": 1.0}


def test_a_case_may_set_its_own_number_of_victims():
    _, cases, reference = load_reproduction(REPRO / "glg_batched.yaml")
    victims = {c.label: c.victim_graphs for c in cases}
    assert victims["Graph-b, d=4, B=50"] == 1 and victims["Node-1, B=20"] == 4
    assert set(reference["values"]) == set(victims)
    node = next(c for c in cases if c.label == "Node-1, B=20").config
    assert node.data.options["labelled"] == 20 and node.attack.params["glg"]["targets"] == 20


def test_fedgig_table1_runs_every_row_of_the_paper_with_the_features_granted():
    from fedgraph_sim.runtime.reproduction import paper_values

    _, cases, reference = load_reproduction(REPRO / "fedgig_table1.yaml")
    by_label = {case.label: case.config for case in cases}
    for dataset in ("MUTAG", "NCI1", "Tox21", "ClinTox"):
        for label in (dataset, f"{dataset}, shuffled"):
            config = by_label[label]
            assert config.data.dataset == dataset
            assert set(reference["values"][dataset]) <= set(config.attack.names)
            assert set(config.threat.features_known) == {n for n in config.attack.names if "@" in n or n == "fedgig"}
    tox21 = by_label["Tox21, shuffled"].attack.params
    assert tox21["fedgig"]["n_max"] == 5 and tox21["fedgig@no_sr"] == {"n_max": 5, "alpha": 0.13, "sr": False}
    assert paper_values(reference, "MUTAG", "fedgig") == {"edge_accuracy": 0.906, "edge_jaccard": 0.452,
                                                          "adj_mse": 0.154, "adj_auc": 0.676}


def test_case_labels_with_commas_are_selected_whole():
    _, cases, _ = load_reproduction(REPRO / "glg_synthetic.yaml", only="graph, GCN,node-1, SAGE")
    assert [c.label for c in cases] == ["graph, GCN", "node-1, SAGE"]
    _, cases, _ = load_reproduction(REPRO / "glg_synthetic.yaml", only="node-2, SAGE, shuffled,node-1, SAGE")
    assert [c.label for c in cases] == ["node-1, SAGE", "node-2, SAGE, shuffled"]  # in the config's order
    with pytest.raises(ConfigError, match="--cases: unknown case graph"):
        load_reproduction(REPRO / "glg_synthetic.yaml", only="graph")


def test_markdown_puts_the_paper_row_under_ours():
    _, _, reference = load_reproduction(REPRO / "graphdlg_table1.yaml")
    entry = {"attack": "graphdlg", "alignment": "identity", "graphs": 3, "failed": 0}
    from fedgraph_sim.metrics import metric_names

    for m in metric_names():
        entry[f"{m}_mean"], entry[f"{m}_std"] = 0.5, 0.1
    entry["gain_adj_auc_mean"], entry["prior_adj_auc_mean"] = -0.25, 0.75
    text = markdown("MUTAG", [entry], reference)
    lines = text.splitlines()
    assert lines[-2].startswith("| graphdlg | identity | 3 | 0.5000 ± 0.1000 | "
                                "0.5000 ± 0.1000 [Δ -0.2500 vs 0.7500] | 0.5000 ± 0.1000 |")
    assert lines[-1] == ("| *graphdlg (paper)* | *identity* |  | *0.7435* | *0.9042* | *0.7556* | "
                         "*0.0844* | *0.9341* |"
                         + "  |" * 9)  # deg, spec dist, GLG's five, FedGIG's two: no paper value


def test_grain_configs_extend_and_bucket():
    from fedgraph_sim.runtime.reproduction import size_buckets, table_columns

    spec2, cases2, ref2 = load_reproduction(REPRO / "grain_table2.yaml")
    spec3, cases3, ref3 = load_reproduction(REPRO / "grain_table3.yaml")
    assert [c.label for c in cases3] == ["Tox21 GCN", "ClinTox GCN", "BBBP GCN"]
    same = {c.label: c.config for c in cases2}
    assert all(c.config == same[c.label] for c in cases3)  # so Table 3 can reuse Table 2's runs
    assert [b[0] for b in size_buckets(spec3)] == list(ref3["values"])
    assert table_columns(spec3)["metrics"][:3] == ("gsm0", "gsm2", "full_repo")
    gat = next(c for c in cases2 if c.label == "Tox21 GAT")
    assert gat.config.model.heads == 2 and gat.config.model.readout_input == "last"
    # Table 3's cases run GRAIN and the priors only, as the paper's Table 3 reports GRAIN alone
    assert all(c.config.attack.names == ["grain", "majority_type", "aux_mean_adjacency", "aux_sample"]
               for c in cases3)


def test_markdown_shows_gsm_in_percent_with_intervals_beside_the_paper():
    _, _, reference = load_reproduction(REPRO / "grain_table2.yaml")
    entry = {"attack": "grain", "alignment": "matched", "graphs": 97, "failed": 3,
             "statuses": "failed=3 ok=97", "gsm0_all_mean": 0.85, "gsm0_ci_low": 0.8, "gsm0_ci_high": 0.9,
             "gsm0_mean": 0.88, "gsm0_std": 0.1, "gain_gsm0_mean": 0.3, "prior_gsm0_mean": 0.58,
             "gain_gsm0_all_mean": 0.3, "prior_gsm0_all_mean": 0.55}  # _all_: the 100 graphs of the mean
    text = markdown("Tox21 GCN", [entry], reference, metrics=("gsm0",), alignments=("matched",))
    lines = text.splitlines()
    assert lines[-2] == "| grain | matched | 97 (3 failed) | 85.0 [80.0, 90.0] [Δ +30.0 vs 55.0] |"
    assert lines[-1] == "| *grain (paper)* | *matched* |  | *86.9* |"


def test_paper_tables_come_from_beside_the_spec_else_from_the_package(tmp_path):
    from fedgraph_sim.runtime.reproduction import load_reference

    packaged = load_reference(tmp_path, "graphdlg_table9")  # a spec saved anywhere
    assert packaged["values"]["none"]["graphdlg"][0] == 0.7435
    (tmp_path / "reference_graphdlg.yaml").write_text("graphdlg_table9: {source: mine, values: {}}\n")
    assert load_reference(tmp_path, "graphdlg_table9")["source"] == "mine"  # the user's own first
    with pytest.raises(ConfigError, match="reference: no table 'graphdlg_table99' in reference_graphdlg.yaml"):
        load_reference(tmp_path, "graphdlg_table99")
    with pytest.raises(ConfigError, match="reference: no file reference_nopaper.yaml beside the spec"):
        load_reference(tmp_path, "nopaper_table1")


@pytest.mark.parametrize("metrics, message", [
    (["adj_auc", "nope"], "bad.yaml: metrics: unknown metric 'nope'; valid: node_type_accuracy"),
    ("adj_auc", "bad.yaml: metrics: a non-empty list of metric names"),  # not read letter by letter
])
def test_table_columns_are_catalogue_metrics(tmp_path, metrics, message):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"metrics": metrics, "base": {}, "cases": [{"label": "a"}]}))
    with pytest.raises(ConfigError) as info:
        load_reproduction(bad)
    assert str(info.value).startswith(message)
