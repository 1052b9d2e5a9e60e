"""The report's DP-audit section: a refuted claim is said loudly, agreement is not called proof,
and a DP audit's run (canaries, no attack rows) has a report."""

import json

from fedgraph_sim.report.document import render
from fedgraph_sim.report.dp_audit import dp_audit_section


def _outcome(claimed, bound, refuted):
    return {"kind": "gradient", "count": 1000, "delta": 1e-5, "confidence": 0.95, "epsilon_claimed": claimed,
            "epsilon_lower_bound": bound, "claim_refuted": refuted, "guesses": 200, "correct": 196}


def test_each_runs_bound_stands_beside_its_claim(tmp_path):
    for name, outcome in {"a": _outcome(0.8, 2.59, True), "b": _outcome(8.0, 2.59, False),
                          "c": _outcome(None, 4.85, False)}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "canaries.json").write_text(json.dumps(outcome))
    lines = "\n".join(dp_audit_section(tmp_path))
    rows = [line for line in lines.splitlines() if line.startswith("| a") or line.startswith("| b")
            or line.startswith("| c")]
    assert len(rows) == 3
    assert "CLAIM REFUTED" in rows[0] and "2.59" in rows[0] and "0.8" in rows[0]
    assert "consistent with the claim (the audit reaches 32% of it)" in rows[1]
    assert "no claim to test" in rows[2]
    assert dp_audit_section(tmp_path / "a" / "nothing") == []


def test_a_dp_audits_run_without_attack_rows_has_a_report(tmp_path):
    (tmp_path / "config.yaml").write_text("name: audit\n")
    (tmp_path / "canaries.json").write_text(json.dumps(_outcome(1.0, 0.06, False)))
    text = render(tmp_path).path.read_text()
    assert "## DP audit" in text and "| . | 1000 gradient | 1 | 1e-05 | 0.06 | 196 of 200 |" in text


def test_canaries_that_told_nothing_are_not_measured_never_a_confirmation(tmp_path):
    (tmp_path / "canaries.json").write_text(json.dumps({**_outcome(4.73, 0.0, False), "guesses": 0, "correct": 0}))
    (row,) = [line for line in "\n".join(dp_audit_section(tmp_path)).splitlines() if line.startswith("| .")]
    assert "not measured: the canaries told nothing" in row and "consistent" not in row
