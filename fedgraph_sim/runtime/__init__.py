"""The runtime, fedgraph_sim's composition root: the only code that imports ``clients``, ``server``
and ``attacks`` and wires them into Flower apps, simulations, sweeps and reproductions, plus the
command line. Everything else in ``fedgraph_sim`` is the core below them.

From a notebook::

    from fedgraph_sim.config import load_config
    from fedgraph_sim.runtime import run, sweep
    result = run(load_config(None, ["federation.rounds=2"]))   # result.run_dir, result.summary
    swept = sweep("experiments/configs/defense_matrix.yaml", jobs=2)   # swept.sweep_dir, .summary
"""

from fedgraph_sim.runtime.session import Session, resolve
from fedgraph_sim.runtime.simulation import RunResult, replay, run
from fedgraph_sim.runtime.sweeps import SweepResult, sweep

__all__ = ["RunResult", "Session", "SweepResult", "replay", "resolve", "run", "sweep"]
