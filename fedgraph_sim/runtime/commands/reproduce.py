"""Run a reproduction config through the real federation; write our table beside the paper's.

    fedgraph-sim reproduce --config experiments/configs/reproduce/graphdlg_table1.yaml \\
        [--cases MUTAG,PTC_MR] [--reuse runs/<stamp>-graphdlg_table1 ...] [--dry-run] [key=value ...]

Each case is one federation (``fedgraph-sim run`` semantics); the markdown table goes to
``<output.dir>/<timestamp>-<name>/table.md``, the same table to the terminal (rich, sized to it),
and ``cases.json`` there maps each case to its run directory. ``--reuse DIR`` takes the rows of a case from an earlier
reproduction's run instead of running it again, when that run's configuration is this case's
(e.g. GRAIN's Table 3 regroups the GCN runs of its Table 2 by graph size); give several
directories when the cases ran separately. ``--dry-run`` validates and builds every case as a run
would (data, partitions, attacks, defenses, ``--reuse`` matches), lists the cases and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from fedgraph_sim.errors import ConfigError, RunFailed, Stopped
from fedgraph_sim.runtime.stopping import startup_checkpoint


def reusable_run(reuse: list[Path], label: str, config) -> Path | None:
    """The earlier run of case ``label`` if its resolved configuration equals ``config``'s."""
    from fedgraph_sim.yaml_files import read_yaml

    if not reuse:
        return None
    runs = {}
    for folder in reuse:
        index = folder / "cases.json"
        runs.update(json.loads(index.read_text()) if index.is_file() else {})
    if label not in runs:
        raise ConfigError(f"--reuse: no run of case '{label}' in {', '.join(map(str, reuse))}")
    run_dir = Path(runs[label])
    earlier = read_yaml(run_dir / "config.yaml", "--reuse") or {}
    mine = config.model_dump(mode="json")
    for key in ("name", "output", "versions", "project", "config_sha256"):
        earlier.pop(key, None)
        mine.pop(key, None)
    if earlier != mine:
        raise ConfigError(f"--reuse: the run of '{label}' in {run_dir} used another configuration")
    return run_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fedgraph-sim reproduce", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True)
    parser.add_argument("--cases", default=None, help="comma-separated case labels (default: all); "
                                                      "a label with a comma in it is given as it is")
    parser.add_argument("--reuse", nargs="+", default=[], help="earlier reproductions' directories to take runs from")
    parser.add_argument("--strict", action="store_true", help="exit 1 when any row records a failure")
    parser.add_argument("--dry-run", action="store_true",
                        help="validate every case and list them; run and write nothing")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_intermixed_args(argv)  # options may follow the overrides
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    # here, not at the top: --help needs none of the configuration and reproduction code
    from fedgraph_sim.runtime.reproduction import case_grid, load_reproduction, markdown, size_buckets, table_columns
    from fedgraph_sim.yaml_files import read_yaml

    startup_checkpoint()  # a Ctrl-C during these imports ends the command here
    try:
        spec, cases, reference = load_reproduction(args.config, args.overrides,
                                                   args.cases or None)
        from fedgraph_sim.report.terminal import console, print_grid
        from fedgraph_sim.provenance import provenance_line
        from fedgraph_sim.rows.statistics import faults, summarize
        from fedgraph_sim.rows.store import read_rows
        from fedgraph_sim.run_dirs import new_run_dir
        from fedgraph_sim.runtime import Session, resolve, run

        reuse = [Path(d) for d in args.reuse]
        for folder in reuse:
            if not folder.is_dir():
                raise ConfigError(f"--reuse: no such directory {folder}")
        configs, sessions, earlier = [], [], []
        for case in cases:  # validate and build every case before running any
            config, scenario = resolve(case.tree, victim_graphs=case.victim_graphs)
            configs.append(config)
            earlier.append(reusable_run(reuse, case.label, config))
            sessions.append(None if earlier[-1] else Session(config, scenario=scenario))
        if args.dry_run:
            for case, config, run_dir in zip(cases, configs, earlier):
                print(f"case {case.label}: {config.federation.rounds} rounds"
                      + (f", reusing {run_dir}" if run_dir else f", attacks {', '.join(config.attack.names)}"))
            print(f"{len(cases)} cases")
            return 0
        out_dir = new_run_dir(configs[0].output.dir, Path(args.config).stem)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ConfigError.exit_code

    table = out_dir / "table.md"
    command = " ".join(["fedgraph-sim reproduce", *(argv if argv is not None else sys.argv[1:])])
    table.write_text(f"# {reference.get('source', Path(args.config).stem)}\n\n"
                     f"Command: `{command}`; {provenance_line()}.\n\n")
    columns, buckets = table_columns(spec), size_buckets(spec)
    case_runs, pooled = {}, []

    out = console()

    def emit(label: str, summary: list[dict], note: str) -> None:
        with table.open("a") as fh:
            fh.write(markdown(label, summary, reference, note, **columns) + "\n")
        print_grid(case_grid(label, summary, reference, style="compact", **columns), out)
        out.print(note)

    for case, config, session, run_dir in zip(cases, configs, sessions, earlier):
        start = time.time()
        if run_dir is None:
            try:
                result = run(config, session=session)
            except (RunFailed, Stopped) as exc:  # the cases before it are in the table already
                print(f"error: case {case.label}: {exc}", file=sys.stderr)
                return exc.exit_code
            run_dir, summary = result.run_dir, result.summary
            note = (f"{config.federation.rounds} rounds; run `{run_dir}`; "
                    f"{time.time() - start:.0f} s (attacks {result.timings['attacks']:.0f} s)")
        else:
            summary = summarize(read_rows(run_dir))
            earlier_version = (read_yaml(run_dir / "config.yaml", "--reuse") or {}).get("project", {})
            note = (f"{config.federation.rounds} rounds; reused run `{run_dir}` "
                    f"(commit {str(earlier_version.get('commit', 'unknown'))[:12]})")
        case_runs[case.label] = str(run_dir)
        (out_dir / "cases.json").write_text(json.dumps(case_runs, indent=1))
        if buckets:
            pooled.extend(read_rows(run_dir))
        else:
            emit(case.label, summary, note)
    for label, low, high in buckets or ():
        rows = [{**r, "dataset": label} for r in pooled if low <= r["num_nodes"] <= high]
        note = f"{len({(r['run'], r['graph_id']) for r in rows})} graphs of {', '.join(case_runs)}"
        emit(label, summarize(rows), note)
    out.print(f"table: {table}")
    warning = faults(row for run_dir in case_runs.values() for row in read_rows(run_dir))
    if warning:
        out.print(warning, style="yellow")
    return 1 if warning and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
