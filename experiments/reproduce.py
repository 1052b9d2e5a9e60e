"""`python experiments/reproduce.py ...` is `fedgraph-sim reproduce ...`: see
fedgraph_sim/runtime/commands/reproduce.py."""

import sys

from fedgraph_sim.runtime.commands.reproduce import main

if __name__ == "__main__":
    sys.exit(main())
