"""A Simulation Engine backend that runs the ClientApp in this process, one message at a time.

Flower's Simulation Engine (``flwr.simulation.run_simulation``) keeps everything it has: the
SuperLink's state, the message routing, each node's context, the mods. Only where a ClientApp
runs changes. Flower's Ray backend starts a Ray cluster and a pool of client actors, each of which
imports torch, PyG and this package (about 16 s of a 45 s federation on 2 cores) and receives
every message and context through Ray's object store; this backend calls the app in the engine's
worker thread, on a copy of the message and the node's context as an actor receives them, as
:class:`flwr.simulation.ray_transport.ray_actor.VirtualClientEngineActor` does inside an actor (an
exception becomes :class:`ClientAppException`, so the engine replies with the same error).

It is for a federation that is already one job of a process pool (a sweep's, an audit's): the
pool is the parallelism, and Ray inside each job buys only its start. A client's turn draws from
seeds of its own (``clients.turn.turn_seed``, ``clients.training.round_batches``) and the job's
torch runs one thread, so the rows equal those of the Ray backend (tested). What this backend does
not give: a client process that dies is not replaced (it is this one), and clients run one after
another.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable

from flwr.app import Context, Message
from flwr.clientapp.client_app import ClientApp, ClientAppException, LoadClientAppError
from flwr.server.superlink.fleet.vce.backend import Backend, BackendConfig

#: ``backend_config[SECTION][ENGINE]`` names the backend (``fedgraph_sim.runtime.ray_backend``
#: builds the one named); Flower passes the sections it does not know through.
SECTION, ENGINE = "fedgraph", "engine"
RAY, IN_PROCESS = "ray", "in_process"
ENGINES = (RAY, IN_PROCESS)


def engine_of(backend_config: BackendConfig | None) -> str:
    """The engine a Simulation Engine backend config names (default Ray, Flower's)."""
    return str(((backend_config or {}).get(SECTION) or {}).get(ENGINE, RAY))


class InProcessBackend(Backend):
    """Runs each message's ClientApp in the calling thread."""

    def __init__(self, backend_config: BackendConfig) -> None:
        super().__init__(backend_config)
        self.app_fn: Callable[[], ClientApp] | None = None

    def build(self, app_fn: Callable[[], ClientApp]) -> None:
        self.app_fn = app_fn

    @property
    def num_workers(self) -> int:
        return 1

    def is_worker_idle(self) -> bool:
        return True  # the engine's one worker thread calls process_message and waits for it

    def terminate(self) -> None:
        self.app_fn = None

    def process_message(self, message: Message, context: Context) -> tuple[Message, Context]:
        if self.app_fn is None:
            raise ValueError("InProcessBackend.build() was not called")
        # a copy, as Ray's actor gets one: the app and its mods may change what they receive
        # (Flower's secaggplus_mod pops the stage from a ConfigRecord the server sent to every
        # node), and a turn that raises leaves the node's stored context as it was
        message, context = pickle.loads(pickle.dumps((message, context), protocol=pickle.HIGHEST_PROTOCOL))
        try:
            return self.app_fn()(message=message, context=context), context
        except LoadClientAppError:
            raise
        except Exception as exc:  # as Flower's actor reports it, so the engine's error reply is the same
            raise ClientAppException(str(exc)) from exc
