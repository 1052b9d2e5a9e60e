"""The ``fedgraph-sim`` subcommands that run federations: ``run``, ``sweep``, ``reproduce`` (each
module's ``main(argv)``; ``experiments/*.py`` are thin wrappers around them)."""
