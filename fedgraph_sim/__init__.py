"""fedgraph_sim: a privacy audit bench for federated graph learning.

The core library: datasets, models, metrics, configuration and the wire types between the
honest-but-curious server and the attacks. It imports none of ``clients``, ``server`` or
``attacks``. The curious server inside a user's own Flower app is the runtime's:
``from fedgraph_sim.runtime import curious, Federation``.
"""

__version__ = "0.1.0"
