import sys

if __name__ == "__main__":
    from fedgraph_sim.runtime.stopping import defer_startup_signals

    defer_startup_signals()  # a Ctrl-C while Python still imports the command line is acted on after
    from fedgraph_sim.runtime.cli import main

    sys.exit(main())
