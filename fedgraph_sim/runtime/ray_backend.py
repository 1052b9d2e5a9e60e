"""Flower's Ray backend, ended so that its end cannot end the run.

Flower's ``RayBackend.terminate`` submits ``terminate()`` to every client actor (each calls
``ray.actor.exit_actor()``) and calls ``ray.shutdown()`` at once. Our client actors are created
with ``max_task_retries: 1`` (a turn whose process dies runs once more in its replacement), so Ray
counts each exit as a failed task and schedules a retry; when that retry is scheduled after
``ray.shutdown()`` has closed the raylet connection, Ray's core worker exits this process
("Exiting because the Raylet IPC connection failed"): the run ends with no summary, no message and
no traceback. Seen at the end of 2 of 3 reproduction cases on a loaded 2-core machine, and as the
console line "Task ClientAppActor.terminate failed. There are 1 retries remaining" where the race
went the other way. Killing the actors without restart submits no task, so nothing is retried.

The same holds for a stop request (:mod:`fedgraph_sim.runtime.stopping`): :func:`kill_actors` kills
every client actor, the busy ones included, without restart, so the backend's waits on the turns
in flight end at once with an error and no turn is retried. Killing their processes instead would
make Ray restart them and retry the turn, the race above. And ``ray.init`` replaces the SIGTERM
handler by ``sys.exit``, which would end the main thread under the backend's worker threads
(left waiting forever); the backend puts back the handler it found.

A Ray the backend starts is prepared as every Ray started here is (:mod:`fedgraph_sim.local_ray`).
A Ray that is already up when the backend is built (a notebook's, or a test session's) is joined,
as Flower's backend does, and left up at the end: only a Ray the backend started is shut down.

The engine builds this class whatever the backend config says, so it is also where the config's
choice of engine is made: ``{"fedgraph": {"engine": "in_process"}}`` builds
:class:`fedgraph_sim.runtime.in_process_backend.InProcessBackend` instead, and no Ray starts.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import weakref

_LIVE: weakref.WeakSet = weakref.WeakSet()  # the backends built in this process and not yet ended
_STOPPING = threading.Event()  # set by kill_actors: a backend not yet built starts no Ray, no actors


def kill_actors() -> int:
    """Kill, without restart, every client actor of this process's live backends; returns how many.
    A backend built after it starts no Ray, and one still in ``ray.init`` starts no actor: their
    start-up (each actor imports torch and the client code) would only delay the stop."""
    _STOPPING.set()
    return sum(backend.kill_actors() for backend in list(_LIVE))


def install() -> None:
    """Make the simulation engine build the :class:`RayBackend` subclass below (idempotent). Flower
    1.41 imports ``RayBackend`` from its module each time it builds the backend. Called by every
    run: it forgets an earlier run's stop, so a new run in this process builds its actors."""
    _STOPPING.clear()
    from flwr.server.superlink.fleet.vce.backend import raybackend

    if getattr(raybackend.RayBackend, "kills_actors_on_terminate", False):
        return

    from fedgraph_sim.runtime.in_process_backend import IN_PROCESS, InProcessBackend, engine_of

    class KillingRayBackend(raybackend.RayBackend):
        kills_actors_on_terminate = True
        owns_ray = True  # whether this backend started the Ray it runs on

        def __new__(cls, backend_config=None):
            # Flower 1.41's engine always builds this class; the config names the engine
            if engine_of(backend_config) == IN_PROCESS:
                return InProcessBackend(backend_config)  # not a cls: __init__ (ray.init) is skipped
            return super().__new__(cls)

        def __init__(self, backend_config) -> None:
            import ray

            if _STOPPING.is_set():  # stopped before Ray started: none starts, the run ends
                self.pool, self.owns_ray = None, False
                return
            self.owns_ray = not ray.is_initialized()  # else Flower joins it, and we leave it up
            main = threading.current_thread() is threading.main_thread()
            sigterm = signal.getsignal(signal.SIGTERM) if main else None
            super().__init__(backend_config)  # ray.init
            if sigterm is not None:
                signal.signal(signal.SIGTERM, sigterm)
            _LIVE.add(self)

        def build(self, app_fn) -> None:
            if not _STOPPING.is_set():  # stopped during ray.init: no actor, no turn, the run ends
                super().build(app_fn)

        def kill_actors(self) -> int:
            """Kill the idle and the busy client actors without restart; returns how many."""
            import ray

            if not self.pool:
                return 0
            actors = [*self.pool.pool, *list(self.pool._future_to_actor.values())]
            for actor in actors:
                with contextlib.suppress(Exception):  # already dead: nothing to end
                    ray.kill(actor, no_restart=True)
            return len(actors)

        def terminate(self) -> None:
            self.kill_actors()
            if self.pool:
                self.pool.pool.clear()
            _LIVE.discard(self)
            if self.owns_ray:
                super().terminate()  # no actor left to terminate; shuts Ray down

    raybackend.RayBackend = KillingRayBackend
