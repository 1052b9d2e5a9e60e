"""`python experiments/sweep.py ...` is `fedgraph-sim sweep ...`: see fedgraph_sim/runtime/commands/sweep.py."""

import sys

from fedgraph_sim.runtime.commands.sweep import main

if __name__ == "__main__":
    sys.exit(main())
