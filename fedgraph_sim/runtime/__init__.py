"""The runtime, fedgraph_sim's composition root: the only code that imports ``clients``, ``server``
and ``attacks`` and wires them into Flower apps, simulations, sweeps and reproductions, plus the
command line. Everything else in ``fedgraph_sim`` is the core below them.

From a notebook::

    from fedgraph_sim.config import load_config
    from fedgraph_sim.runtime import run
    result = run(load_config(None, ["federation.rounds=2"]))
"""

from fedgraph_sim.runtime.session import Session, resolve
from fedgraph_sim.runtime.simulation import RunResult, replay, run

__all__ = ["RunResult", "Session", "replay", "resolve", "run"]
