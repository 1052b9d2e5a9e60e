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
"""

from __future__ import annotations

import contextlib


def install() -> None:
    """Make the simulation engine build the :class:`RayBackend` subclass below (idempotent). Flower
    1.41 imports ``RayBackend`` from its module each time it builds the backend."""
    from flwr.server.superlink.fleet.vce.backend import raybackend

    if getattr(raybackend.RayBackend, "kills_actors_on_terminate", False):
        return

    class KillingRayBackend(raybackend.RayBackend):
        kills_actors_on_terminate = True

        def terminate(self) -> None:
            import ray

            if self.pool:
                for actor in self.pool.pool:
                    with contextlib.suppress(Exception):  # already dead: nothing to end
                        ray.kill(actor, no_restart=True)
                self.pool.pool.clear()
            super().terminate()  # no actor left to terminate; shuts Ray down

    raybackend.RayBackend = KillingRayBackend
