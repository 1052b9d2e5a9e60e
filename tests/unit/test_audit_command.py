"""``fedgraph-sim audit``: bad input is one line naming the key and exit 2, before anything is
written; ``--fail-on`` conditions read the facts. (A whole audit runs in
tests/integration/test_audit.py.)"""

import pytest
import yaml

from fedgraph_sim.runtime.commands.audit import FAIL_ON, failing, main

USER = {"name": "mine", "data": {"dataset": "synthetic", "options": {"num_graphs": 40}},
        "federation": {"num_clients": 2, "rounds": 3}}


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(USER))
    return path


@pytest.mark.parametrize("args, message", [
    (["--fail-on", "leaks"], "--fail-on: unknown condition 'leaks'; valid: exact, exact@update"),
    (["--seconds", "0"], "--seconds: must be > 0 (got 0.0)"),
    (["--clients", "0"], "--clients: must be >= 1 (got 0)"),
    (["--jobs", "0"], "--jobs: must be >= 1 (got 0)"),
    (["model.task=node"], "model.task"),
    (["threat.per_node_gradients=true"], "threat.per_node_gradients"),
    (["federation.rounds=zero"], "federation.rounds"),
    (["--what-if", "dp"], "--what-if: unknown change 'dp'"),
    (["--what-if", "dp_sgd_nm1", "--no-what-if"], "--what-if: names changes to try, but --no-what-if"),
    (["--attacks", "nope"], "--attacks: 'nope' is not an attack the audit runs"),
])
def test_bad_input_is_one_line_and_exit_2_and_nothing_is_written(tmp_path, config, capsys, args, message):
    out = tmp_path / "audit"
    assert main(["--config", str(config), "--out", str(out), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err and "Traceback" not in err
    assert not out.exists()


def test_a_missing_config_or_a_directory_that_is_not_an_audit_is_refused(tmp_path, capsys):
    assert main(["--config", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err
    assert main(["--resume", str(tmp_path)]) == 2
    assert "is not an audit directory (no sweep.yaml)" in capsys.readouterr().err
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump({"name": "s", "base": {}}))
    assert main(["--resume", str(tmp_path)]) == 2
    assert "holds a sweep, not an audit" in capsys.readouterr().err


def facts(exact_by_level, stop=None, what_if=True):
    """Facts with one round per level: n exact of 4 graphs, or None for a cell not measured."""
    def cell(n):
        if n is None:
            return {"outcome": "not measured", "reason": "no attack applies"}
        return {"outcome": "leaks" if n else "no leak found", "exact": n, "attacked": 4}

    own = {"setting": "as configured", "best": cell(exact_by_level.get("hints", 0))}
    return {"levels": {level: {"rounds": {"1": cell(n)}} for level, n in exact_by_level.items()},
            "what_if": [own] if what_if else [], "cheapest_stop": stop}


def test_fail_on_conditions_hold_exactly_when_the_facts_say_so():
    assert set(FAIL_ON) == {"exact", "exact@update", "exact@aux", "exact@hints", "exact@malicious", "no-stop",
                            "unmeasured"}
    leaky = facts({"update": 0, "aux": None, "hints": 2})
    assert failing(leaky, "exact") and failing(leaky, "exact@hints")
    assert not failing(leaky, "exact@update") and not failing(leaky, "exact@aux")
    assert not failing(facts({"update": 0, "aux": 0, "hints": 0}), "exact")
    assert failing(facts({"hints": 2}), "no-stop")
    assert not failing(facts({"hints": 2}, stop={"setting": "dp"}), "no-stop")
    assert not failing(facts({"hints": 2}, what_if=False), "no-stop")  # not run: nothing to judge
    assert failing(leaky, "unmeasured")  # aux: not measured
    crafted = facts({"update": 0, "aux": 0, "hints": 0, "malicious": 3})
    assert failing(crafted, "exact@malicious") and failing(crafted, "exact") and not failing(crafted, "exact@hints")
    assert not failing(facts({"update": 0, "aux": 0, "hints": 2}), "unmeasured")


def test_a_dry_run_validates_and_lists_the_plan_and_writes_nothing(tmp_path, config, capsys):
    out = tmp_path / "audit"
    assert main(["--config", str(config), "--out", str(out), "--dry-run", "--what-if", "prune_0.9"]) == 0
    said = capsys.readouterr().out
    assert "50 rounds" not in said and "3 rounds, attacked in rounds 1, 2, 3" in said
    assert "first at the strongest threat level (hints)" in said and "grain@ext" in said
    assert "what if: prune_0.9" in said
    assert not out.exists()
