"""Check DP claims with the one-run canary audit: each case of a spec (``base`` and ``cases``, each
a label and the keys it sets) is run as a federation with canaries, and a markdown table gives each
claimed epsilon beside its measured lower bound.

    PYTHONPATH=. python experiments/dp_audit.py --config experiments/dp_claims/claims.yaml [--out DIR]

Each case's run directory (``canaries.json``, the scores) is kept under ``--out``. Prints the table
with the command and commit that made it. ``--dry-run`` validates every case (config, data,
defenses, canaries) and runs nothing. The specs live in ``experiments/dp_claims/`` (not among the
run configs: a spec is cases of them).
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
import time
from pathlib import Path

from fedgraph_sim.config import merge_tree, set_dotted
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.yaml_files import read_yaml

HEADER = ["case", "canaries", "claimed epsilon", "lower bound (95%)", "guesses right", "bound / claim",
          "f-DP bound (Gaussian)", "finding", "seconds"]


def case_tree(base: dict, changes: dict, out: Path, number: int) -> dict:
    tree = set_dotted(copy.deepcopy(base), copy.deepcopy(changes))
    return merge_tree(tree, {"name": f"dp_audit_{number}", "output": {"dir": str(out)}})


def row(label: str, outcome: dict, seconds: float) -> list[str]:
    claimed, bound = outcome["epsilon_claimed"], outcome["epsilon_lower_bound"]
    finding = ("no claim" if claimed is None else "**CLAIM REFUTED**" if outcome["claim_refuted"]
               else "not measured (the canaries told nothing)" if bound == 0 else "consistent")
    ratio = "-" if not claimed else f"{bound / claimed:.2f}"
    return [label, f"{outcome['count']} {outcome['kind']}", "-" if claimed is None else f"{claimed:.3g}",
            f"{bound:.2f}", f"{outcome['correct']} of {outcome['guesses']}", ratio,
            f"{outcome['gdp_epsilon_lower_bound']:.2f}", finding, f"{seconds:.0f}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--out", default="runs/dp_audit")
    parser.add_argument("--dry-run", action="store_true", help="validate every case; nothing runs")
    args = parser.parse_args(argv)
    from fedgraph_sim.runtime import Session
    from fedgraph_sim.runtime.session import resolve
    from fedgraph_sim.runtime.simulation import run

    spec, out = read_yaml(args.config), Path(args.out)
    rows = []
    try:
        for number, case in enumerate(spec["cases"]):
            config, scenario = resolve(case_tree(spec["base"], case.get("set", {}), out, number))
            session = Session(config, scenario=scenario)  # every piece checked before anything runs
            if args.dry_run:
                print(f"{case['label']}: {config.canaries.count} {config.canaries.kind} canaries, "
                      f"{config.federation.rounds} round(s)")
                continue
            start = time.monotonic()
            done = run(config, session=session, run_dir=out / str(number), engine="in_process")
            outcome = json.loads((done.run_dir / "canaries.json").read_text())
            rows.append(row(case["label"], outcome, time.monotonic() - start))
            print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ConfigError.exit_code
    if args.dry_run:
        return 0
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True).stdout.strip()
    print(f"`PYTHONPATH=. python experiments/dp_audit.py --config {args.config}`, commit {commit or '?'}"
          f"{' (uncommitted changes)' if dirty else ''}\n")
    print("| " + " | ".join(HEADER) + " |\n|" + "---|" * len(HEADER))
    for cells in rows:
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
