"""Run one federation with an honest-but-curious server and score its attacks.

    fedgraph-sim run [--config FILE] [--dry-run] [--strict] [key=value ...]

Examples:
    fedgraph-sim run                                  # the default round: does MUTAG leak?
    fedgraph-sim run --config experiments/configs/default.yaml data.dataset=synthetic attack.names=[random,idlg]
    fedgraph-sim run --dry-run federation.rounds=3     # print the resolved config
"""

from __future__ import annotations

import argparse
import logging
import sys

from fedgraph_sim.errors import ConfigError, RunFailed, Stopped
from fedgraph_sim.runtime.stopping import defer_startup_signals, startup_checkpoint


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fedgraph-sim run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=None,
                        help="YAML file (default: the default round, experiments/configs/default_round.yaml)")
    parser.add_argument("--dry-run", action="store_true", help="validate and print the resolved config")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 when any row records a failure (a failed client turn, a crashed, raising "
                             "or invalid attack)")
    parser.add_argument("overrides", nargs="*", help="dotted key=value overrides")
    args = parser.parse_intermixed_args(argv)  # options may follow the overrides
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    defer_startup_signals()  # start-up (imports, data, workers) ends on Ctrl-C or SIGTERM too
    try:
        from fedgraph_sim.config import DEFAULT_ROUND, load_config, to_yaml  # here: --help needs none of it

        config = load_config(args.config or DEFAULT_ROUND, args.overrides)
        startup_checkpoint()
        if not config.attack.names and not config.canaries.count:  # a captured federation (sweeps) may
            raise ConfigError("attack.names: empty, so the run would write nothing; name at least "
                              "one attack or prior, e.g. [random], or audit the DP claim with canaries.count")
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from fedgraph_sim.report.terminal import console as terminal_console
        from fedgraph_sim.runtime import Session, run

        console = terminal_console()
        progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=console, transient=True)
        session = Session(config, progress=progress)  # validates names, data, attacks first
        startup_checkpoint()
        if args.dry_run:
            print(to_yaml(config), end="")
            return 0
        with progress:
            result = run(config, session=session)
    except (ConfigError, RunFailed, Stopped) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code

    from fedgraph_sim.report.headline import draw_exact, headline
    from fedgraph_sim.report.terminal import print_summary
    from fedgraph_sim.rows.statistics import faults
    from fedgraph_sim.rows.store import read_rows

    rows = read_rows(result.run_dir)
    console.print(headline(rows), style="bold")  # the verdict first, the evidence under it
    # Identity alignment (node i against node i, the papers' convention) scores the node order an
    # attack happened to return: no attack sees the clients' order, so it is left out here.
    shown = [entry for entry in result.summary if entry.get("alignment") != "identity"]
    print_summary(shown, f"{config.name}: {config.data.dataset}, {config.federation.num_clients} "
                         f"clients, {config.federation.rounds} round(s)", console)
    if len(shown) < len(result.summary):
        console.print("Alignments: matched (Hungarian, best node matching) and gsm (GRAIN's); identity (node i "
                      "against node i) is left out here, as no attack observes the clients' node order, and kept "
                      "in results.parquet and the report.")
    t = result.timings
    console.print(f"wall time {t['total']:.1f} s: setup {t['setup']:.1f} s, Ray start + messaging "
                  f"{t['ray_and_messaging']:.1f} s, client training {t['client_training']:.1f} s, "
                  f"attacks {t['attacks']:.1f} s")
    for path in draw_exact(result.run_dir):
        console.print(f"drawn beside the truth: {path}")
    console.print(f"run directory: {result.run_dir}")
    warning = faults(rows, result.failed_turns)
    if warning:
        console.print(warning, style="yellow")
    return 1 if warning and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
