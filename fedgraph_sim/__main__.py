import sys

from fedgraph_sim.runtime.cli import main

if __name__ == "__main__":
    sys.exit(main())
