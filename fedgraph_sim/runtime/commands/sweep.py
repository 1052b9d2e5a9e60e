"""Defense-vs-attack sweeps: datasets x defense settings x seeds federations, each replayed to
every attack, with the global model's test accuracy beside every reconstruction score.

    fedgraph-sim sweep --config experiments/configs/reproduce/graphdlg_table9.yaml [--jobs 2]
    fedgraph-sim sweep --resume runs/<stamp>-graphdlg_table9 [--jobs 2]
    fedgraph-sim sweep --config SPEC --backend ray [--ray-address auto]   jobs as tasks on a Ray cluster
    fedgraph-sim sweep --config SWEEP.yaml --dry-run        # list federations and cells

Then ``fedgraph-sim report <sweep dir>`` writes the tables and figures.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path


from fedgraph_sim.errors import ConfigError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fedgraph-sim sweep", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--config", help="sweep spec (YAML)")
    source.add_argument("--resume", help="an interrupted sweep directory to continue")
    parser.add_argument("--jobs", type=int, default=1, help="parallel worker processes (default 1; local backend)")
    parser.add_argument("--backend", default="local",
                        help="local (--jobs spawned processes) | ray (Ray tasks; the cluster sets the parallelism)")
    parser.add_argument("--ray-address", default=None,
                        help="with --backend ray: the cluster to join (e.g. auto, ray://HOST:10001); "
                             "default a local Ray")
    parser.add_argument("--out", default=None, help="sweep directory (default: a new one under output.dir)")
    parser.add_argument("--force-new", action="store_true",
                        help="when --out holds a sweep of another spec, write to a new directory instead")
    parser.add_argument("--dry-run", action="store_true", help="validate and list the jobs")
    parser.add_argument("--strict", action="store_true", help="exit 1 when any row records a failure")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        from fedgraph_sim.runtime.sweeps import build_sweep, load_sweep

        if args.jobs < 1:
            raise ConfigError(f"--jobs: must be >= 1 (got {args.jobs})")
        from fedgraph_sim.runtime.sweeps.runner import check_backend

        check_backend(args.backend, args.ray_address)  # also under --dry-run
        if args.resume:
            sweep_dir = Path(args.resume)
            if not (sweep_dir / "sweep.yaml").is_file():
                raise ConfigError(f"--resume: {sweep_dir} is not a sweep directory (no sweep.yaml)")
            from fedgraph_sim.yaml_files import read_yaml

            sweep = build_sweep(read_yaml(sweep_dir / "sweep.yaml", "--resume"), sweep_dir)
        else:
            sweep = load_sweep(args.config)
            sweep_dir = None
            if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
                raise ConfigError(f"--out: {args.out} is a file, not a sweep directory")
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ConfigError.exit_code

    if args.dry_run:
        for fed in sweep.federations:
            print(f"federation {fed.id}: {fed.config.federation.rounds} rounds")
            for cell in sweep.cells:
                if cell.federation is fed:
                    print(f"  cell {cell.id}")
        print(f"{len(sweep.federations)} federations, {len(sweep.cells)} attack cells")
        return 0


    from fedgraph_sim.report.terminal import console as terminal_console, job_progress, print_summary
    from fedgraph_sim.rows.statistics import faults
    from fedgraph_sim.rows.store import read_rows
    from fedgraph_sim.runtime.stopping import interrupt_on_signals
    from fedgraph_sim.runtime.sweeps import open_sweep

    console = terminal_console()
    progress = job_progress(console)
    try:
        runner = open_sweep(sweep, sweep_dir or args.out, args.jobs, progress, args.force_new, args.backend,
                            args.ray_address)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ConfigError.exit_code
    sweep_dir = runner.dir
    interrupt_on_signals()  # SIGTERM stops a sweep as Ctrl-C does
    try:
        with progress:
            result = runner.run()
    except KeyboardInterrupt:
        console.print(f"interrupted; finished cells are kept. Continue with: "
                      f"fedgraph-sim sweep --resume {sweep_dir}")
        return 130
    print_summary([e for e in result.summary if e["alignment"] == "identity"],
                  f"sweep {sweep.name}: {len(sweep.cells)} cells (matched alignment in summary.csv)", console,
                  metrics=sweep.metrics)
    for failure in result.failures:
        console.print(f"[red]failed[/red] {failure}")
    t = result.timing
    console.print(f"wall time {t['wall_seconds']:.0f} s with {t['jobs']} job(s): {t['federations_run']} "
                  f"federations and {t['cells_run']} attack cells run ({t['cells_per_minute']:.2f} cells/min)")
    console.print(f"sweep directory: {sweep_dir}\nreport: fedgraph-sim report {sweep_dir}")
    warning = faults(read_rows(sweep_dir))
    if warning:
        console.print(warning, style="yellow")
    return 1 if result.failures or (warning and args.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
