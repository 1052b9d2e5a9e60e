"""The claims-table script (``experiments/dp_audit.py``): every committed spec's cases validate
(as committed configs do, so a spec cannot rot unseen), bad input is one line and exit 2, and the
table's rows say what the outcome says."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted((ROOT / "experiments" / "dp_claims").glob("*.yaml"))


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("dp_audit_script", ROOT / "experiments" / "dp_audit.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_every_committed_spec_validates(script, path, data_root, capsys):
    assert script.main(["--config", str(path), "--dry-run"]) == 0
    assert "canaries" in capsys.readouterr().out


def test_a_bad_case_is_one_line_and_exit_2(script, tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text("base: {data: {dataset: synthetic}, attack: {names: []}}\n"
                    "cases: [{label: bad, set: {canaries.kind: nonsense, canaries.count: 4}}]\n")
    assert script.main(["--config", str(spec), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: canaries.kind") and err.count("\n") == 1


def test_a_row_says_refuted_consistent_or_no_claim(script):
    outcome = {"count": 1000, "kind": "gradient", "epsilon_claimed": 0.8, "epsilon_lower_bound": 2.59,
               "gdp_epsilon_lower_bound": 3.69, "claim_refuted": True, "correct": 196, "guesses": 200}
    assert script.row("double", outcome, 3.2) == ["double", "1000 gradient", "0.8", "2.59", "196 of 200", "3.24",
                                                 "3.69", "**CLAIM REFUTED**", "3"]
    assert script.row("none", {**outcome, "epsilon_claimed": None, "claim_refuted": False}, 1)[5:8] == [
        "-", "3.69", "no claim"]


def test_a_zero_bound_is_not_measured(script):
    outcome = {"count": 1000, "kind": "gradient", "epsilon_claimed": 4.73, "epsilon_lower_bound": 0.0,
               "gdp_epsilon_lower_bound": 0.0, "claim_refuted": False, "correct": 0, "guesses": 0}
    assert script.row("dp_gradients", outcome, 2)[7] == "not measured (the canaries told nothing)"
