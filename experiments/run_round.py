"""`python experiments/run_round.py ...` is `fedgraph-sim run ...`: see fedgraph_sim/runtime/commands/run.py."""

import sys

from fedgraph_sim.runtime.commands.run import main

if __name__ == "__main__":
    sys.exit(main())
