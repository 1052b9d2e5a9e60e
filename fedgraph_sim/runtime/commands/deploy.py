"""Run one federation on Flower's Deployment Engine: a SuperLink and one SuperNode per client as
separate processes, the curious ServerApp and the ClientApp submitted with ``flwr run``.

    fedgraph-sim deploy [--config FILE] [key=value ...]          # everything on 127.0.0.1

Across hosts (docs/scaling.md), the same command with the SuperLink's address:

    host A: fedgraph-sim deploy --config FILE --role superlink --superlink 10.0.0.1:9100
    host B: fedgraph-sim deploy --config FILE --role supernodes --superlink 10.0.0.1:9100 --partitions 0,1

Logs go to ``<run dir>/deployment/`` (one file per process); every process the command started
is stopped when the run ends, fails or is interrupted.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from fedgraph_sim.errors import ConfigError
from fedgraph_sim.runtime.stopping import startup_checkpoint


def _partitions(text: str) -> list[int]:
    try:
        return [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of partition ids") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fedgraph-sim deploy", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=None,
                        help="YAML file (default: the default round, experiments/configs/default_round.yaml)")
    parser.add_argument("--role", default="all", help="all (default) | superlink | supernodes")
    parser.add_argument("--superlink", default=None, help="the SuperLink's HOST:PORT (default 127.0.0.1, a free port)")
    parser.add_argument("--partitions", type=_partitions, default=None,
                        help="the SuperNodes this host runs, e.g. 0,1 (default: all of federation.num_clients)")
    parser.add_argument("--clientapps", default="forked",
                        help="forked (default): SuperNodes polling every 0.1 s, each task forked from a SuperExec "
                             "that has imported the client stack; flower: Flower's own SuperNode and SuperExec, "
                             "a fresh process per task")
    parser.add_argument("overrides", nargs="*", help="dotted key=value overrides")
    args = parser.parse_intermixed_args(argv)  # options may follow the overrides
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    from fedgraph_sim.config import DEFAULT_ROUND, load_config  # here: --help needs none of it
    from fedgraph_sim.runtime.deployment import Launch

    startup_checkpoint()  # a Ctrl-C during these imports ends the command here

    try:
        config_file = Path(args.config or DEFAULT_ROUND).resolve()
        config = load_config(str(config_file), args.overrides)
        # the apps run elsewhere (a SuperLink's subprocess): every path they get must be absolute
        overrides = [*args.overrides, f"output.dir={Path(config.output.dir).resolve()}"]
        launch = Launch(config, config_file, overrides, role=args.role, superlink=args.superlink,
                        partitions=args.partitions, clientapps=args.clientapps)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ConfigError.exit_code
    try:
        status = launch()
    except KeyboardInterrupt:
        print(f"interrupted; stopped {len(launch.stopped)} processes", file=sys.stderr)
        return 130
    except RuntimeError as exc:
        print(f"error: {exc} (logs in {launch.log_dir})", file=sys.stderr)
        return 1
    print(f"run {status}; run directory: {launch.run_dir}; stopped {len(launch.stopped)} processes")
    return 0 if status.endswith("completed") or args.role == "supernodes" else 1


if __name__ == "__main__":
    sys.exit(main())
