import sys

from fedgraph_sim.cli import main

if __name__ == "__main__":
    sys.exit(main())
