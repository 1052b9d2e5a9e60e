"""The report: tables computed from hand-made rows, figures as valid PNGs, robustness, the CLI."""

import json
import math

import pytest
import yaml

from fedgraph_sim.runtime.cli import main
from fedgraph_sim.report import render, write_report
from fedgraph_sim.report.document import markdown_tables
from fedgraph_sim.report.drawings import pick
from fedgraph_sim.report.groups import group_rows
from fedgraph_sim.report.inputs import defense_setting, load
from fedgraph_sim.report.rounds import round_windows
from fedgraph_sim.metrics import metric, shown_in
from fedgraph_sim.rows.store import read_rows, seal

#: The report's metrics shown whatever the rows (the fixture has no GSM or FULL scores).
ALWAYS = tuple(m for m in shown_in("report") if not metric(m).counts_failures)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
STACKS = {"none": [], "dp_gradients(sigma=0.1)": [{"name": "dp_gradients", "sigma": 0.1}],
          "dp_gradients(sigma=1.0)": [{"name": "dp_gradients", "sigma": 1.0}]}
# (attack, defense) -> type ACC of its two ok graphs; AUC and AP follow from it.
TYPE_ACC = {("graphdlg", "none"): [0.6, 0.8], ("graphdlg", "dp_gradients(sigma=0.1)"): [0.4, 0.6],
            ("graphdlg", "dp_gradients(sigma=1.0)"): [0.2, 0.2], ("majority_type", "none"): [0.5, 0.5],
            ("majority_type", "dp_gradients(sigma=0.1)"): [0.5, 0.5],
            ("majority_type", "dp_gradients(sigma=1.0)"): [0.5, 0.5]}
ACCURACY = {"none": 0.9, "dp_gradients(sigma=0.1)": 0.8, "dp_gradients(sigma=1.0)": 0.6}


def _row(attack, defense, seed, graph_id, type_acc, test_accuracy, status="ok"):
    row = {"run": f"fixture-s{seed}", "dataset": "toy", "seed": seed, "round": graph_id + 1, "client": 0,
           "graph_id": graph_id, "attack": attack, "defense": defense, "defense_stack": STACKS[defense],
           "status": status, "test_accuracy": test_accuracy, "sweep": "fixture",
           "cell": f"toy_s{seed}_{defense}-0000__{attack}", "defense_family": defense.split("(")[0],
           "defense_param": None if defense == "none" else "sigma",
           "defense_strength": float(STACKS[defense][0]["sigma"]) if STACKS[defense] else 0.0}
    if status == "ok":
        for alignment in ("identity", "matched"):
            row.update({f"{alignment}_node_type_accuracy": type_acc, f"{alignment}_adj_auc": 0.5 + type_acc / 2,
                        f"{alignment}_adj_ap": type_acc, f"{alignment}_feature_mse": 1 - type_acc,
                        f"{alignment}_edge_accuracy": 0.7,
                        f"prior_{alignment}_node_type_accuracy": 0.5, f"prior_{alignment}_adj_auc": 0.6,
                        f"prior_{alignment}_adj_ap": 0.3, f"prior_{alignment}_feature_mse": 0.4,
                        f"prior_{alignment}_edge_accuracy": 0.6,
                        f"gain_{alignment}_node_type_accuracy": type_acc - 0.5,
                        f"gain_{alignment}_adj_auc": type_acc / 2 - 0.1})
    return row


def _drawing(attack, defense, smiles):
    return {"attack": attack, "defense": defense, "dataset": "toy", "round": 1, "client": 0, "graph_id": 0,
            "type_block": "atomic_num", "type_values": ["6", "7", "8"], "true_types": [0, 0, 2],
            "true_edge_index": [[0, 1, 1, 2], [1, 0, 2, 1]], "smiles": smiles, "rec_types": [0, 1, 2],
            "rec_adj": [[0, 0.9, 0.1], [0.9, 0, 0.8], [0.1, 0.8, 0]],
            "scores": {"node_type_accuracy": 2 / 3, "adj_auc": 1.0, "adj_ap": 1.0}}


def _write_rows(directory, rows):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture(scope="module")
def sweep_report(tmp_path_factory):
    """A sweep directory: 2 attacks x 3 defense settings, seed 0 with two ok graphs per cell, and a
    second federation (seed 1) of the undefended setting whose only graphdlg row failed."""
    directory = tmp_path_factory.mktemp("sweep")
    rows = [_row(attack, defense, 0, i, acc, ACCURACY[defense])
            for (attack, defense), accs in TYPE_ACC.items() for i, acc in enumerate(accs)]
    rows.append(_row("graphdlg", "none", 1, 5, None, 0.5, status="error"))
    _write_rows(directory, rows)
    (directory / "sweep.yaml").write_text(yaml.safe_dump({"name": "fixture"}))
    (directory / "reference.yaml").write_text(yaml.safe_dump({
        "source": "Paper Table 9", "metrics": ["node_type_accuracy", "adj_auc", "adj_ap"],
        "values": {"none": {"graphdlg": [0.7435, 0.9042, 0.7556]},
                   "dp_gradients(sigma=0.1)": {"graphdlg": [0.6350, 0.9045, 0.7564]}}}))
    for attack, smiles in (("graphdlg", "CCO"), ("majority_type", None)):
        cell = directory / "cells" / f"toy_s0_none-0000__{attack}" / "drawings"
        cell.mkdir(parents=True)
        (cell / f"{attack}_0.json").write_text(json.dumps(_drawing(attack, "none", smiles)))
    for seed, defense in [(0, d) for d in STACKS] + [(1, "none")]:  # each federation's round by round
        fed = directory / "federations" / f"toy_s{seed}_{defense}-0000"
        fed.mkdir(parents=True)
        fed.joinpath("utility.jsonl").write_text("".join(
            json.dumps({"round": r, "test_accuracy": 0.5 + r * (ACCURACY[defense] - 0.5) / 2,
                        "centralised_test_accuracy": 0.5 + r * 0.2}) + "\n" for r in range(3)))
    return render(directory)


def test_the_sealed_parquet_rows_give_the_same_report(sweep_report):
    """The fixture's rows as a finished run keeps them (``results.parquet``): the same report."""
    directory = sweep_report.path.parent
    before = sweep_report.path.read_text()
    seal(directory)
    assert not (directory / "results.jsonl").exists()
    try:
        assert render(directory).path.read_text() == before
    finally:  # the module's other tests read the fixture's JSON lines
        _write_rows(directory, read_rows(directory))
        (directory / "results.parquet").unlink()


def _table_row(markdown, prefix):
    return next(line for line in markdown.splitlines() if line.startswith(prefix))


def test_markdown_cells_are_mean_and_std_over_ok_graphs(sweep_report):
    md = sweep_report.path.read_text()
    # type ACC of graphdlg without defense: graphs 0.6 and 0.8 -> 0.7 ± 0.1; AUC 0.8 and 0.9.
    row = _table_row(md, "| graphdlg | none |")
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == "2 (1 error)"
    assert cells[3] == "0.7000 ± 0.1000 [Δ +0.2000 vs 0.5000]"  # the gain over the prior beside it
    assert cells[4] == "0.8500 ± 0.0500 [Δ +0.2500 vs 0.6000]"
    assert _table_row(md, "| graphdlg | dp_gradients(sigma=1.0) |").split("|")[4].strip() == ("0.2000 ± 0.0000 "
                                                                                              "[Δ -0.3000 vs 0.5000]")


def test_test_accuracy_is_averaged_over_federations_not_rows(sweep_report):
    md = sweep_report.path.read_text()
    # Seed 0 (two rows at 0.9) and seed 1 (one row at 0.5): 0.7 ± 0.2 over federations, 0.767 over rows.
    assert _table_row(md, "| graphdlg | none |").rstrip(" |").endswith("0.7000 ± 0.2000 (n=2)")
    assert _table_row(md, "| majority_type | dp_gradients(sigma=0.1) |").rstrip(" |").endswith("0.8000 ± 0.0000 (n=1)")
    # No epsilon column without DP-SGD rows, and no utility column in the matched table.
    assert "| attack | defense | graphs | type ACC | AUC | AP | feat MSE | edge ACC | test acc |" in md
    assert "| attack | defense | graphs | type ACC | AUC | AP | feat MSE | edge ACC |\n" in md


def test_paper_rows_follow_the_matching_rows(sweep_report):
    lines = sweep_report.path.read_text().splitlines()
    ours = lines.index(_table_row("\n".join(lines), "| graphdlg | none |"))
    paper = lines[ours + 1]
    assert paper.startswith("| *graphdlg (paper)* | *none* |") and "*0.7435* | *0.9042* | *0.7556*" in paper
    # none and sigma=0.1 have paper numbers; they appear under the identity table only.
    assert sum(line.startswith("| *graphdlg (paper)*") for line in lines) == 2
    assert not any(line.startswith("| *majority_type (paper)*") for line in lines)
    assert "Paper Table 9" in "\n".join(lines)


def test_every_expected_figure_is_a_png_embedded_in_the_report(sweep_report):
    md = sweep_report.path.read_text()
    names = {"metric_vs_strength_dp_gradients", "drawings_graphdlg", "drawings_majority_type",
             *(f"{kind}_{m}" for kind in ("heatmap", "frontier", "pareto") for m in ALWAYS),
             "utility_toy", "leakage_vs_round_graphdlg"}  # one figure of each kind per table column
    assert {f.path.stem for f in sweep_report.figures} == names and not sweep_report.skipped
    for name in names:
        path = sweep_report.path.parent / "figures" / f"{name}.png"
        data = path.read_bytes()
        assert data[:8] == PNG_SIGNATURE and len(data) > 1024, name
        assert f"](figures/{name}.png)" in md


def test_drawings_use_rdkit_with_smiles_and_networkx_without(sweep_report):
    captions = {f.path.stem: f.caption for f in sweep_report.figures}
    assert "RDKit" in captions["drawings_graphdlg"]
    assert "RDKit" not in captions["drawings_majority_type"]
    assert "node colour = node type" in captions["drawings_majority_type"]


def test_drawings_prefer_different_defenses():
    drawings = [dict(_drawing("a", "none", None), graph_id=i) for i in range(3)]
    drawings.append(_drawing("a", "prune(p=0.9)", None))
    order = {"none": (-1, False, 0.0, "none"), "prune(p=0.9)": (0, False, 0.9, "prune(p=0.9)")}
    assert [d["defense"] for d in pick(drawings, order)] == ["none", "prune(p=0.9)", "none"]


def test_unparsable_smiles_falls_back_to_networkx(tmp_path):
    _write_rows(tmp_path, [_row("graphdlg", "none", 0, 0, 0.5, 0.9)])
    (tmp_path / "drawings").mkdir()
    (tmp_path / "drawings" / "graphdlg_0.json").write_text(json.dumps(_drawing("graphdlg", "none", "C1CC(")))
    report = render(tmp_path)
    drawing = next(f for f in report.figures if f.path.stem == "drawings_graphdlg")
    assert "RDKit" not in drawing.caption and drawing.path.read_bytes()[:8] == PNG_SIGNATURE


def test_single_run_derives_family_utility_and_epsilon(tmp_path):
    stack = [{"name": "dp_sgd", "noise_multiplier": 1.0}]
    rows = [{"run": "single", "dataset": "toy", "seed": 0, "round": r, "client": 0, "graph_id": r,
             "attack": "idlg", "defense": "dp_sgd(noise_multiplier=1.0)", "defense_stack": stack,
             "defense_epsilon": eps, "status": "ok", "identity_node_type_accuracy": 0.5}
            for r, eps in ((1, 1.0), (2, 2.0))]
    _write_rows(tmp_path, rows)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"name": "single"}))
    (tmp_path / "utility.jsonl").write_text('{"round": 1, "test_accuracy": 0.6, "test_loss": 1.0}\n'
                                            '{"round": 2, "test_accuracy": 0.75, "test_loss": 0.9}\n')
    md = write_report(tmp_path).read_text()
    assert md.startswith("# Privacy audit report: single")
    row = _table_row(md, "| idlg | dp_sgd(noise_multiplier=1.0) |")
    assert row.endswith("| 0.7500 ± 0.0000 (n=1) | 2 |")  # 2 rounds: the last round's accuracy; the largest ε
    assert "metric_vs_strength_dp_sgd skipped: only one strength (1) and no undefended rows." in md
    assert "drawings skipped:" in md


def test_defense_setting_from_the_stack():
    assert defense_setting({"defense": "none", "defense_stack": []}) == ("none", None, 0.0)
    assert defense_setting({"defense_stack": [{"name": "prune", "p": 0.9}]}) == ("prune", "p", 0.9)
    family, param, strength = defense_setting({"defense_stack": [{"name": "prune", "p": 0.9},
                                                                 {"name": "dp_gradients", "sigma": 0.1}]})
    assert (family, param) == ("prune+dp_gradients", None) and math.isnan(strength)
    assert defense_setting({"defense_family": "dp_hybrid", "defense_param": "sigma",
                            "defense_strength": 0.2}) == ("dp_hybrid", "sigma", 0.2)


def test_failed_and_nan_rows_still_give_a_report(tmp_path):
    rows = [{"dataset": "toy", "attack": "graphdlg", "defense": "prune(p=0.9)", "status": "timeout",
             "defense_stack": [{"name": "prune", "p": 0.9}]},
            {"dataset": "toy", "attack": "graphdlg", "defense": "none", "defense_stack": [], "status": "ok",
             "identity_node_type_accuracy": float("nan"), "identity_adj_auc": None}]
    _write_rows(tmp_path, rows)
    with (tmp_path / "results.jsonl").open("a") as fh:
        fh.write('{"half a line')  # a killed run's last line
    report = render(tmp_path)
    md = report.path.read_text()
    assert "| graphdlg | prune(p=0.9) | 0 (1 timeout) | - | - |" in md
    assert "results.jsonl: 1 unreadable line(s) ignored" in md
    assert "frontier skipped: no test accuracy" in md
    assert "heatmap_adj_auc skipped: no ok row has adj_auc." in md
    assert "failed with" not in md
    assert "No result rows" not in md  # rows without utility.jsonl are still rows


def test_cli_report_prints_path_and_figure_count(sweep_report, capsys):
    assert main(["report", str(sweep_report.path.parent)]) == 0
    out = capsys.readouterr().out.strip()
    assert out == f"report: {sweep_report.path} ({len(sweep_report.figures)} figures)"
    assert len(sweep_report.figures) == 5 + 3 * len(ALWAYS)


@pytest.mark.parametrize("make", [lambda p: p / "missing", lambda p: p])
def test_cli_report_without_results_is_one_line_and_exit_2(tmp_path, capsys, make):
    directory = make(tmp_path)
    assert main(["report", str(directory)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {directory}: ")


def test_the_utility_table_sets_the_federation_beside_its_centralised_baseline(sweep_report):
    md = sweep_report.path.read_text()
    # dp_gradients(sigma=1.0): the federation reaches 0.6 by round 2, the baseline 0.9
    assert "| toy | - | dp_gradients(sigma=1.0) | 2 | 0.600 | 0.900 | -0.300 |" in md


@pytest.mark.parametrize("metrics, header, note", [
    (["adj_auc", "node_type_accuracy"], "| attack | defense | graphs | AUC | type ACC | test acc |", None),
    (None, "| attack | defense | graphs | type ACC | AUC | AP | feat MSE | edge ACC | test acc |", None),
    (["nope"], "| attack | defense | graphs | type ACC | AUC | AP | feat MSE | edge ACC | test acc |",
     "sweep.yaml: metrics: unknown metric 'nope'"),
])
def test_a_sweep_specs_metrics_are_its_tables_columns(tmp_path, metrics, header, note):
    _write_rows(tmp_path, [_row("graphdlg", "none", 0, 0, 0.6, 0.9)])
    spec = {"name": "s", **({"metrics": metrics} if metrics else {})}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(spec))
    data = load(tmp_path)
    assert header in markdown_tables(data, group_rows(data.rows))
    notes = [n for n in data.notes if n.startswith("sweep.yaml")]
    assert notes == [] if note is None else (len(notes) == 1 and notes[0].startswith(note)
                                             and notes[0].endswith("; the default columns are shown"))


@pytest.mark.parametrize("rounds, windows", [
    ([50, 1, 10, 10], [(1, 1), (10, 10), (50, 50)]),
    (list(range(1, 151)), [(1 + 15 * i, 15 * (i + 1)) for i in range(10)]),
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 95], [(1, 10), (91, 100)]),  # spans without an attacked round dropped
])
def test_round_windows_are_each_round_or_ten_equal_spans(rounds, windows):
    assert round_windows(rounds) == windows


def test_leakage_by_round_summarizes_each_rounds_graphs_beside_the_model_they_trained(sweep_report):
    md = sweep_report.path.read_text()
    section = md[md.index("## Leakage by round"):]
    # graphdlg undefended: round 1's graph has type ACC 0.6, round 2's 0.8; round 1's clients
    # trained the initial model (0.5 in both federations), round 2's the one after round 1 (0.7);
    # round 6's model (after round 5) has no utility point
    assert "| graphdlg | none | 1 | 1 | 0.6000 ± 0.0000 [Δ +0.1000 vs 0.5000] |" in section
    assert _table_row(section, "| graphdlg | none | 1 |").endswith("| 0.5000 ± 0.0000 (n=2) |")
    assert _table_row(section, "| graphdlg | none | 2 |").endswith("| 0.7000 ± 0.0000 (n=2) |")
    assert _table_row(section, "| graphdlg | none | 6 |").endswith("| 0 (1 error) | - | - | - | - | - | - |")
    assert "| majority_type |" not in section  # the priors are in every row's gain


def test_one_attacked_round_has_no_leakage_by_round(tmp_path):
    _write_rows(tmp_path, [_row("graphdlg", "none", 0, 0, 0.6, 0.9)])
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump({"name": "s"}))
    assert "Leakage by round" not in render(tmp_path).path.read_text()


def test_a_runs_tables_gain_the_exact_recovery_columns_when_rows_carry_them(tmp_path):
    row = _row("grain", "none", 0, 0, 0.6, 0.9)
    _write_rows(tmp_path / "plain", [row])
    _write_rows(tmp_path / "exact", [{**row, "matched_gsm0": 1.0, "matched_gsm2": 1.0, "matched_full_iso": 1.0}])
    for name in ("plain", "exact"):
        (tmp_path / name / "config.yaml").write_text(yaml.safe_dump({"name": name}))
    assert load(tmp_path / "plain").metrics == ("node_type_accuracy", "adj_auc", "adj_ap", "feature_mse",
                                                "edge_accuracy")
    assert load(tmp_path / "exact").metrics[-3:] == ("gsm0", "gsm2", "full_iso")
    assert "| graphs | type ACC | AUC | AP | feat MSE | edge ACC | GSM-0 | GSM-2 | FULL |" in \
        render(tmp_path / "exact").path.read_text()


def test_figures_show_full_as_the_tables_do_failures_counting_zero():
    from fedgraph_sim.report.pareto import settings

    def row(attack, defense, graph_id, status, full):
        out = {"run": defense, "dataset": "toy", "seed": 0, "graph_id": graph_id, "attack": attack,
               "defense": defense, "defense_family": defense.split("(")[0], "status": status,
               "defense_strength": 0.1 if "(" in defense else 0.0, "test_accuracy": 0.8,
               "prior_identity_full_repo": 0.0}  # a failed row carries its graph's prior too
        if status == "ok":
            out["identity_full_repo"] = full
        return out
    # GRAIN rebuilds 2 graphs and fails on 2: FULL 50% over the 4 attacked graphs, not 100% over 2
    rows = [row("grain", "none", i, "ok" if i < 2 else "failed", 1.0) for i in range(4)]
    rows += [row("grain", "prune(p=0.1)", i, "ok", float(i == 0)) for i in range(4)]
    rows += [row("aux_sample", d, i, "ok", 0.0) for d in ("none", "prune(p=0.1)") for i in range(4)]
    groups = group_rows(rows)
    assert next(g for g in groups if g.attack == "grain" and g.defense == "none").shown("full_repo")["mean"] == 0.5
    points = settings(groups, "full_repo")
    assert points["toy", "", "none"][1] == 0.5 and points["toy", "", "prune(p=0.1)"][1] == 0.25


def test_the_pareto_x_is_the_auc_where_the_task_has_one():
    from fedgraph_sim.report.pareto import settings

    def row(defense, auc):
        out = {"run": defense, "dataset": "toy", "seed": 0, "graph_id": 0, "attack": "grain", "defense": defense,
               "defense_family": defense.split("(")[0], "status": "ok", "defense_strength": 0.0,
               "test_accuracy": 0.94, "identity_full_repo": 1.0, "prior_identity_full_repo": 0.0}
        return out if auc is None else {**out, "test_auc": auc}
    points = settings(group_rows([row("none", 0.7), row("prune(p=0.9)", 0.6)]), "full_repo")
    assert points["toy", "", "none"][0] == 0.7 and points["toy", "", "prune(p=0.9)"][0] == 0.6
    assert settings(group_rows([row("none", None)]), "full_repo")["toy", "", "none"][0] == 0.94


@pytest.fixture
def metric_plugin(tmp_path, monkeypatch):
    """A plugin module defining one metric, importable for this test only."""
    import sys

    import fedgraph_sim.metrics.catalogue as catalogue

    monkeypatch.setattr(catalogue, "_plugged", [])
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "atom_count_metric.py").write_text(
        "from fedgraph_sim.metrics import Metric, register_metric\n\n"
        "register_metric(Metric('atom_count_error', 'atoms err', 'lower', 'nodes', lambda pair: 0.0,"
        " shown=('report',)))\n")
    monkeypatch.syspath_prepend(str(folder))
    yield "atom_count_metric"
    sys.modules.pop("atom_count_metric", None)


def test_a_plugins_metric_is_a_column_of_its_runs_report(tmp_path, metric_plugin):
    run = tmp_path / "run"
    rows = [{**_row("graphdlg", "none", 0, g, 0.6, 0.9), "identity_atom_count_error": 0.25 * g} for g in (0, 1)]
    _write_rows(run, rows)
    (run / "config.yaml").write_text(yaml.safe_dump({"name": "run", "plugins": [metric_plugin]}))
    md = render(run).path.read_text()
    header = next(line for line in md.splitlines() if line.startswith("| attack | defense |"))
    assert header.endswith("| edge ACC | atoms err | test acc |")  # after the package's, as registered
    assert _table_row(md, "| graphdlg | none |").split(" | ")[-2] == "0.1250 ± 0.1250"  # mean ± std of 0 and 0.25


def test_a_plugin_that_no_longer_imports_is_a_note(tmp_path):
    run = tmp_path / "run"
    _write_rows(run, [_row("graphdlg", "none", 0, 0, 0.6, 0.9)])
    (run / "config.yaml").write_text(yaml.safe_dump({"name": "run", "plugins": ["gone_plugin_module"]}))
    md = render(run).path.read_text()
    assert "plugins: cannot import 'gone_plugin_module'" in md and "its metrics are not shown" in md
