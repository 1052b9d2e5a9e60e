"""The simulation's Ray backend ends its client actors by killing them, submitting no task that
Ray could retry after ``ray.shutdown()`` (a retry then exits the whole run)."""

import ray
from flwr.server.superlink.fleet.vce.backend import raybackend

from fedgraph_sim.runtime import ray_backend


class Actor:
    def __init__(self) -> None:
        self.terminate = self  # ``actor.terminate.remote()`` would record a submitted task
        self.submitted = 0

    def remote(self) -> None:
        self.submitted += 1


class Pool:
    def __init__(self, actors) -> None:
        self.pool = list(actors)

    def terminate_all_actors(self) -> None:
        for actor in self.pool:
            actor.terminate.remote()


def test_terminate_kills_every_actor_without_restart_and_submits_nothing(monkeypatch):
    ray_backend.install()
    ray_backend.install()  # idempotent: one subclass, not a subclass of itself
    backend_class = raybackend.RayBackend
    assert backend_class.kills_actors_on_terminate and backend_class.__mro__[2].__name__ == "Backend"
    killed, shutdowns = [], []
    monkeypatch.setattr(ray, "kill", lambda actor, no_restart: killed.append((actor, no_restart)))
    monkeypatch.setattr(ray, "shutdown", lambda: shutdowns.append(True))
    actors = [Actor(), Actor()]
    backend = object.__new__(backend_class)  # no Ray cluster: only terminate() is exercised
    backend.pool = Pool(actors)
    backend.terminate()
    assert killed == [(actors[0], True), (actors[1], True)] and shutdowns == [True]
    assert [a.submitted for a in actors] == [0, 0]
