"""Does my federation leak, and what stops it? One command, one page.

    fedgraph-sim audit --config my_federation.yaml [key=value ...] [--jobs 2]
    fedgraph-sim audit --resume runs/<stamp>-audit-<name>
    fedgraph-sim audit --config my_federation.yaml --fail-on exact     # exit 1 when a graph is rebuilt

The federation config is taken unchanged (its ``attack`` section is the audit's own). The audit
runs it, attacks the first, middle and last round with every registered attack at the strongest
threat level and, with the attacks that rebuilt graphs there, at the two weaker ones; runs it
again under a malicious server that crafts the weights of those rounds, attacked by the attacks
that read crafted updates, its clients checking whether they would have caught it; trains a
small what-if ladder of defenses on the same config over seeds and attacks it until each claim
is decided or the wall budget (``--minutes``) ends (``runtime.what_if_plan``); and writes
``audit.html`` (one self-contained page: the verdict, the evidence, the reconstructions, leakage
against round beside utility, the what-if) and ``audit.json`` (the same facts, for CI gates).
Interrupted, it resumes like a sweep (``--resume``).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from fedgraph_sim.errors import ConfigError

#: ``--fail-on`` conditions, each true when ...
FAIL_ON = {
    "exact": "some attack rebuilt a graph exactly, at any threat level and round",
    "exact@update": "some attack rebuilt a graph exactly from the update alone",
    "exact@aux": "... from the update and auxiliary graphs",
    "exact@hints": "... from the update, auxiliary graphs and hints",
    "exact@malicious": "... from weights a malicious server crafted",
    "no-stop": "no what-if setting is shown to stop the exact attacks",
    "unmeasured": "some verdict cell was not measured (no attack applied, every call failed, a federation "
                  "diverged, or the wall budget ended first); cells the audit skipped by its rules do not count",
}


def failing(facts: dict, condition: str) -> bool:
    """Whether ``condition`` (one of ``FAIL_ON``) holds for the audit's facts."""
    from fedgraph_sim.report.audit_facts import LEAKS, NOT_MEASURED

    if condition == "no-stop":
        return bool(facts["what_if"]) and facts["cheapest_stop"] is None
    cells = [c for entry in facts["levels"].values() for c in entry["rounds"].values()]
    if condition == "unmeasured":
        measured = cells + [s["best"] for s in facts["what_if"]]
        return any(c["outcome"] == NOT_MEASURED and not c.get("skipped") for c in measured)
    levels = [condition.split("@")[1]] if "@" in condition else list(facts["levels"])
    return any(c["outcome"] == LEAKS for level in levels for c in facts["levels"][level]["rounds"].values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fedgraph-sim audit", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--config", help="the federation to audit (a run config, YAML)")
    source.add_argument("--resume", help="an interrupted audit directory to continue")
    parser.add_argument("--out", default=None, help="audit directory (default: a new one under output.dir)")
    parser.add_argument("--jobs", type=int, default=2, help="parallel worker processes (default 2)")
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds per attack call (default 20)")
    parser.add_argument("--clients", type=int, default=2,
                        help="clients attacked per audited round in the first stage: its first updates (default 2)")
    parser.add_argument("--graphs", type=int, default=4, help="graphs scored per attacked update (default 4)")
    parser.add_argument("--seeds", type=int, default=3,
                        help="federations per what-if setting, for its accuracy interval (default 3)")
    parser.add_argument("--minutes", type=float, default=30.0,
                        help="wall budget of the whole audit; what it does not reach is undecided (default 30)")
    parser.add_argument("--what-if", nargs="+", default=None, metavar="CHANGE",
                        help="the what-if changes to try (default all: dp_sgd_nm0.1 dp_sgd_nm1 prune_0.9 batch_x4 "
                             "secure_aggregation)")
    parser.add_argument("--no-what-if", action="store_true", help="skip the what-if stage")
    parser.add_argument("--no-malicious", action="store_true",
                        help="skip the malicious level (a federation of its own, under a server that crafts weights)")
    parser.add_argument("--attacks", nargs="+", default=None, metavar="NAME",
                        help="audit with these attacks only (default: every registered one; bounds the time)")
    parser.add_argument("--fail-on", action="append", default=[], metavar="CONDITION",
                        help="exit 1 when it holds: " + "; ".join(f"{k}: {v}" for k, v in FAIL_ON.items()))
    parser.add_argument("--dry-run", action="store_true", help="validate and list what would run; nothing runs")
    parser.add_argument("overrides", nargs="*", help="dotted key=value overrides of the config")
    args = parser.parse_intermixed_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        sweep, sweep_dir = _plan(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ConfigError.exit_code
    if args.dry_run:
        cell = sweep.cells[0]
        print(f"federation {sweep.federations[0].id}: {cell.config.federation.rounds} rounds, attacked in rounds "
              f"{', '.join(map(str, cell.config.attack.rounds))}")
        print(f"  first at the strongest threat level ({cell.attack}), attacks: {', '.join(cell.config.attack.names)}; "
              "the weaker levels by the attacks that rebuilt graphs there")
        changes = sweep.spec["what_if"]
        print(f"what if: {', '.join(changes) if changes else 'not run'} (planned once the first stage has run)")
        return 0

    from fedgraph_sim.report.terminal import console as terminal_console, job_progress
    from fedgraph_sim.runtime.stopping import interrupt_on_signals
    from fedgraph_sim.runtime.sweeps import open_sweep

    console = terminal_console()
    progress = job_progress(console)
    try:
        runner = open_sweep(sweep, sweep_dir or args.out, args.jobs, progress)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ConfigError.exit_code

    interrupt_on_signals()  # SIGTERM stops an audit as Ctrl-C does
    deadline = time.time() + 60 * sweep.spec["budget"]["minutes"]
    what_if, note, federations, unfinished, claims = None, "not run (--no-what-if)", [], 0, {}
    try:
        with progress:
            failures, unfinished = _first_stage(sweep, runner, deadline)
            if sweep.spec["what_if"] and not unfinished:  # the changes to try
                what_if, note = _what_if_runner(sweep, runner.dir, args.jobs, progress)
                if what_if is not None:
                    more, federations, unfinished = _decide(what_if, deadline, args.jobs)
                    failures += more
                    claims = _check_claims(what_if.sweep, runner.dir, deadline)
            elif unfinished:
                note = "not run: the wall budget ended in the first stage"
    except KeyboardInterrupt:
        console.print(f"interrupted; finished jobs are kept. Continue with: fedgraph-sim audit --resume {runner.dir}")
        return 130
    from fedgraph_sim.report.audit_facts import verdict_lines
    from fedgraph_sim.report.audit_page import write_audit
    from fedgraph_sim.rows.store import read_rows
    from fedgraph_sim.runtime.audit_plan import describe

    plan = describe(sweep, read_rows(runner.dir), what_if.sweep if what_if else None)
    facts = write_audit(runner.dir, {**plan, "unfinished": unfinished},
                        [runner.cell_dir(c) for c in sweep.cells], runner.fed_dir(sweep.federations[0]),
                        what_if.dir if what_if else None, note, federations, claims)
    for line in verdict_lines(facts):
        console.print(line)
    for failure in failures:
        console.print(f"[red]failed[/red] {failure}")
    if unfinished:
        console.print(f"the wall budget ({sweep.spec['budget']['minutes']:g} min) ended with {unfinished} job(s) "
                      f"unfinished. Continue with: fedgraph-sim audit --resume {runner.dir}")
    console.print(f"audit page: {runner.dir / 'audit.html'}\nfacts: {runner.dir / 'audit.json'}")
    held = [c for c in args.fail_on if failing(facts, c)]
    for condition in held:
        console.print(f"--fail-on {condition}: holds ({FAIL_ON[condition]})")
    return 1 if held or failures else 0


def _first_stage(sweep, runner, deadline: float) -> tuple[list[str], int]:
    """The strongest level, every other update of its rounds that decided nothing, then the weaker
    levels its rows call for and the malicious level (each planned from rows that a resumed audit
    reads alike); failures and the jobs the wall budget left unfinished."""
    from fedgraph_sim.rows.store import read_rows
    from fedgraph_sim.runtime.audit_plan import plan_extension, plan_levels, plan_malicious

    failures = []
    for plan_next in (lambda: plan_extension(sweep, read_rows(runner.cell_dir(sweep.cells[0]))),
                      lambda: plan_levels(sweep, read_rows(runner.dir)) + plan_malicious(sweep)):
        result = runner.run(deadline)
        failures += result.failures
        if result.out_of_time:
            return failures, result.out_of_time
        sweep.cells += plan_next()
    result = runner.run(deadline)
    return failures + list(result.failures), result.out_of_time


def _what_if_runner(sweep, audit_dir: Path, jobs: int, progress):
    """The what-if stage's runner (in ``<audit>/what_if``), planned from the first stage's rows, or
    None and why it does not run."""
    from fedgraph_sim.report.audit_facts import exact_attacks
    from fedgraph_sim.rows.store import read_rows
    from fedgraph_sim.runtime.sweeps import open_sweep
    from fedgraph_sim.runtime.what_if_plan import plan_what_if

    config = sweep.federations[0].config
    if config.federation.client_app is not None:
        return None, ("not run: the federation's clients are your own ClientApp (federation.client_app), which "
                      "applies its defenses itself; audit a config of the bench's clients to try defenses")
    attacks, rounds = exact_attacks(read_rows(audit_dir))
    if not attacks:
        return None, "not run: no attack rebuilt a graph exactly, so there is no exact attack to stop"
    plan = plan_what_if(config, attacks, _budget(sweep.spec), sweep.spec["what_if"], rounds)
    return open_sweep(plan, audit_dir / "what_if", jobs, progress), None


def _decide(runner, deadline: float, jobs: int) -> tuple[list[str], list[dict], int]:
    """Train the what-if federations, then attack them unit by unit until every claim is decided
    (``what_if_plan.next_cells``) or the deadline passes; failures, each trained federation's
    setting, seed and accuracy, and the jobs left unfinished."""
    from fedgraph_sim.rows.store import read_rows
    from fedgraph_sim.runtime.sweeps.jobs import DONE
    from fedgraph_sim.runtime.what_if_plan import next_cells
    from fedgraph_sim.utility import final_utility

    plan, failures, tried, accuracy = runner.sweep, [], set(), {}
    while True:
        result = runner.run(deadline)
        failures += result.failures
        trained = [f for f in plan.federations if (runner.fed_dir(f) / DONE).is_file()]
        for fed in trained:  # a trained federation's accuracy is final: read once
            if fed.id not in accuracy:
                accuracy[fed.id] = final_utility(runner.fed_dir(fed)).get("test_accuracy")
        if result.out_of_time:
            break
        cells = [c for c in next_cells(plan, read_rows(runner.dir), accuracy, jobs) if c.id not in tried]
        if not cells:
            break
        tried.update(c.id for c in cells)  # a cell whose job failed is not retried in this run
        plan.cells += cells
    federations = [{"setting": f.setting, "seed": f.config.seed, "accuracy": accuracy[f.id]} for f in trained]
    return failures, federations, result.out_of_time


def _check_claims(what_if, audit_dir: Path, deadline: float) -> dict[str, dict]:
    """Every tried setting's DP claim checked with canaries (``runtime.dp_checks``)."""
    from fedgraph_sim.report.audit_facts import AS_CONFIGURED
    from fedgraph_sim.runtime.audit_plan import WHAT_IF, _with
    from fedgraph_sim.runtime.dp_checks import check_claims

    spec = what_if.spec
    tried = {AS_CONFIGURED: {}, **{k: v for k, v in WHAT_IF.items()
                                   if (spec["changes"] is None or k in spec["changes"]) and k not in spec["skipped"]}}
    return check_claims({label: _with(spec["what_if"], changes) for label, changes in tried.items()},
                        audit_dir / "dp_checks", deadline)


def _budget(spec: dict):
    from dataclasses import fields

    from fedgraph_sim.runtime.audit_plan import AuditBudget

    names = {f.name for f in fields(AuditBudget)}
    return AuditBudget(**{k: v for k, v in (spec.get("budget") or {}).items() if k in names})


def _plan(args):
    """The audit's sweep and its directory (``None``: a new one), or ConfigError."""
    from fedgraph_sim.config import load_config, validate_config
    from fedgraph_sim.runtime.audit_plan import AuditBudget, plan_audit

    for condition in args.fail_on:
        if condition not in FAIL_ON:
            raise ConfigError(f"--fail-on: unknown condition '{condition}'; valid: {', '.join(FAIL_ON)}")
    if args.jobs < 1:
        raise ConfigError(f"--jobs: must be >= 1 (got {args.jobs})")
    if args.resume:
        audit_dir = Path(args.resume)
        if not (audit_dir / "sweep.yaml").is_file():
            raise ConfigError(f"--resume: {audit_dir} is not an audit directory (no sweep.yaml)")
        from fedgraph_sim.yaml_files import read_yaml

        spec = read_yaml(audit_dir / "sweep.yaml", "--resume")
        if not isinstance(spec, dict) or "audit" not in spec:
            raise ConfigError(f"--resume: {audit_dir} holds a sweep, not an audit (fedgraph-sim sweep --resume)")
        return plan_audit(validate_config(spec["audit"]), _budget(spec), spec.get("what_if"),
                          spec.get("attacks"), spec.get("malicious", True)), audit_dir
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        raise ConfigError(f"--out: {args.out} is a file, not an audit directory")
    config = load_config(args.config, args.overrides)
    budget = AuditBudget(seconds=args.seconds, clients=args.clients, graphs=args.graphs, seeds=args.seeds,
                         minutes=args.minutes)
    if args.no_what_if and args.what_if:
        raise ConfigError("--what-if: names changes to try, but --no-what-if skips them; give one of the two")
    return plan_audit(config, budget, [] if args.no_what_if else args.what_if, args.attacks,
                      not args.no_malicious), None


if __name__ == "__main__":
    sys.exit(main())
