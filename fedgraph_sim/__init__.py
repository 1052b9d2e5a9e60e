"""fedgraph_sim: a privacy audit bench for federated graph learning.

The core library: datasets, models, metrics, configuration and the wire types between the
honest-but-curious server and the attacks. It imports none of ``clients``, ``server`` or
``attacks``. ``fedgraph_sim.curious`` and ``fedgraph_sim.Federation`` put the curious server and
its clients' data into a user's own Flower app (``runtime.user_app``, imported when first used).
"""

__version__ = "0.1.0"

#: The public surface for a user's own Flower app (``fedgraph_sim.runtime.user_app``), imported
#: on first use: importing the core must stay free of the runtime, the server and the clients.
_APP = ("curious", "Federation")


def __getattr__(name: str):
    if name in _APP:
        from fedgraph_sim.runtime import user_app
        return getattr(user_app, name)
    raise AttributeError(f"module 'fedgraph_sim' has no attribute '{name}'")
