"""`python experiments/run_round.py ...` is `fedgraph-sim run ...`: see fedgraph_sim/runtime/commands/run.py."""

import sys

if __name__ == "__main__":  # a Ctrl-C while Python imports the command is acted on once it can be
    from fedgraph_sim.runtime.stopping import defer_startup_signals

    defer_startup_signals()

from fedgraph_sim.runtime.commands.run import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
