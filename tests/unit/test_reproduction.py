from pathlib import Path

import pytest

from fedgraph_sim.errors import ConfigError
from fedgraph_sim.reproduction import load_reproduction, markdown

REPRO = Path(__file__).resolve().parents[2] / "experiments" / "configs" / "reproduce"


@pytest.mark.parametrize("name, cases", [("graphdlg_table1", 5), ("graphdlg_table1_shuffled", 5), ("graphdlg_table3", 5),
                                         ("graphdlg_table4", 12)])
def test_reproduction_configs_validate(name, cases):
    spec, loaded, reference = load_reproduction(REPRO / f"{name}.yaml")
    assert len(loaded) == cases
    assert set(reference["values"]) == {c.label for c in loaded}
    config = loaded[0].config
    assert config.federation.num_clients == 2 and config.attack.clients == [0]
    assert config.metrics.entries == "full" and config.train.batch_size == 1


def test_table1_matches_the_paper_setup():
    _, cases, _ = load_reproduction(REPRO / "graphdlg_table1.yaml")
    c = cases[0].config
    assert (c.model.conv, c.model.layers, c.model.hidden, c.model.pool) == ("gcn", 2, 16, "mean")
    assert c.aux.scenario == "same" and c.aux.source == "client:1" and c.partition.alpha == 1.0
    assert {"random", "dlg", "idlg", "inverting_gradients", "graphdlg", "graphdlg@refine",
            "majority_type", "aux_mean_adjacency"} == set(c.attack.names)


def test_cases_filter_and_bad_case():
    _, cases, _ = load_reproduction(REPRO / "graphdlg_table1.yaml", only=["PTC_MR"])
    assert [c.label for c in cases] == ["PTC_MR"]
    with pytest.raises(ConfigError, match="--cases: unknown case NOPE"):
        load_reproduction(REPRO / "graphdlg_table1.yaml", only=["NOPE"])


def test_markdown_puts_the_paper_row_under_ours():
    _, _, reference = load_reproduction(REPRO / "graphdlg_table1.yaml")
    entry = {"attack": "graphdlg", "alignment": "identity", "graphs": 3, "failed": 0}
    from fedgraph_sim.metrics import METRICS

    for m in METRICS:
        entry[f"{m}_mean"], entry[f"{m}_std"] = 0.5, 0.1
    entry["gain_adj_auc_mean"], entry["prior_adj_auc_mean"] = -0.25, 0.75
    text = markdown("MUTAG", [entry], reference)
    lines = text.splitlines()
    assert lines[-2].startswith("| graphdlg | identity | 3 | 0.5000 ± 0.1000 | 0.5000 ± 0.1000 | "
                                "0.5000 ± 0.1000 [Δ -0.2500 vs 0.7500] |")
    assert lines[-1] == ("| *graphdlg (paper)* | *identity* | | *0.0844* | *0.7435* | *0.9042* | "
                         "*0.7556* | *0.9341* |  |  |")
