"""Run a reproduction config through the real federation; write our table beside the paper's.

    python experiments/reproduce.py --config experiments/configs/reproduce/graphdlg_table1.yaml \
        [--cases MUTAG,PTC_MR] [key=value ...]

Each case is one federation (``experiments/run_round.py`` semantics); the markdown table goes to
``<output.dir>/<timestamp>-<name>/table.md`` and to the terminal.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fedgraph_sim.errors import ConfigError  # noqa: E402
from fedgraph_sim.reproduction import load_reproduction, markdown, table_columns  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True)
    parser.add_argument("--cases", default=None, help="comma-separated case labels (default: all)")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        spec, cases, reference = load_reproduction(args.config, args.overrides,
                                                   args.cases.split(",") if args.cases else None)
        from fedgraph_sim.results import new_run_dir
        from fedgraph_sim.scenario import build_scenario
        from fedgraph_sim.simulation import Session, run

        sessions = []
        for case in cases:  # validate and build every case before running any
            if "victim_graphs" in spec:
                victims = len(build_scenario(case.config).clients[0])
                case.config.federation.rounds = min(int(spec["victim_graphs"]), victims)
            sessions.append(Session(case.config))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ConfigError.exit_code

    out_dir = new_run_dir(cases[0].config.output.dir, Path(args.config).stem)
    table = out_dir / "table.md"
    table.write_text(f"# {reference.get('source', Path(args.config).stem)}\n\n")
    for case, session in zip(cases, sessions):
        start = time.time()
        result = run(case.config, session=session)
        note = (f"{case.config.federation.rounds} rounds; run `{result.run_dir}`; "
                f"{time.time() - start:.0f} s (attacks {result.timings['attacks']:.0f} s)")
        section = markdown(case.label, result.summary, reference, note, **table_columns(spec))
        with table.open("a") as fh:
            fh.write(section + "\n")
        print(section, flush=True)
    print(f"table: {table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
