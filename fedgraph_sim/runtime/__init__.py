"""The runtime, fedgraph_sim's composition root: the only code that imports ``clients``, ``server``
and ``attacks`` and wires them into Flower apps, simulations, sweeps and reproductions, plus the
command line. Everything else in ``fedgraph_sim`` is the core below them.

From a notebook::

    from fedgraph_sim.config import load_config
    from fedgraph_sim.runtime import run, sweep
    result = run(load_config(None, ["federation.rounds=2"]))   # result.run_dir, result.summary
    swept = sweep("experiments/configs/defense_matrix.yaml", jobs=2)   # swept.sweep_dir, .summary

In a user's own Flower app (``user_app``)::

    from fedgraph_sim.runtime import curious, Federation
    strategy = curious(FedAvg(fraction_evaluate=0.0), config="federation.yaml")
"""

from fedgraph_sim.exports import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "Session": "session", "resolve": "session", "RunResult": "simulation", "replay": "simulation",
    "run": "simulation", "SweepResult": "sweeps", "sweep": "sweeps", "curious": "user_app",
    "Federation": "user_app"})
