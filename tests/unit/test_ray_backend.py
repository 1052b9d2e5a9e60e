"""The simulation's Ray backend ends its client actors by killing them, submitting no task that
Ray could retry after ``ray.shutdown()`` (a retry then exits the whole run); a stop kills the busy
ones too; and ``ray.init``'s SIGTERM handler does not outlive the backend's construction."""

import signal
import sys

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
    def __init__(self, actors, busy=()) -> None:
        self.pool = list(actors)
        self._future_to_actor = {f"future-{i}": actor for i, actor in enumerate(busy)}

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
    actors = [Actor(), Actor(), Actor()]
    backend = object.__new__(backend_class)  # no Ray cluster: only terminate() is exercised
    backend.pool = Pool(actors[:2], busy=actors[2:])
    backend.terminate()
    assert killed == [(a, True) for a in actors] and shutdowns == [True]
    assert [a.submitted for a in actors] == [0, 0, 0]


def test_a_stop_kills_the_busy_actors_of_every_live_backend(monkeypatch):
    ray_backend.install()
    killed = []
    monkeypatch.setattr(ray, "kill", lambda actor, no_restart: killed.append((actor, no_restart)))
    idle, busy = Actor(), Actor()
    backend = object.__new__(raybackend.RayBackend)
    backend.pool = Pool([idle], busy=[busy])
    monkeypatch.setattr(ray_backend, "_LIVE", {backend})
    assert ray_backend.kill_actors() == 2
    assert killed == [(idle, True), (busy, True)]


def test_the_backend_puts_back_the_sigterm_handler_ray_init_replaced(monkeypatch):
    ray_backend.install()
    flower_backend = raybackend.RayBackend.__mro__[1]

    def init_like_ray(self, backend_config) -> None:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))  # as ray.init does
        self.pool = None

    def ours(signum, frame) -> None:
        pass

    monkeypatch.setattr(flower_backend, "__init__", init_like_ray)
    previous = signal.signal(signal.SIGTERM, ours)
    try:
        backend = raybackend.RayBackend({})
        assert signal.getsignal(signal.SIGTERM) is ours
        assert backend in ray_backend._LIVE
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_ray_that_was_up_before_the_backend_is_joined_and_left_up(monkeypatch):
    """A notebook's (or a test session's) Ray serves several runs: the backend shuts down only the
    Ray it started itself."""
    ray_backend.install()
    flower_backend = raybackend.RayBackend.__mro__[1]
    monkeypatch.setattr(flower_backend, "__init__", lambda self, backend_config: setattr(self, "pool", None))
    shutdowns = []
    monkeypatch.setattr(ray, "shutdown", lambda: shutdowns.append(True))
    for up_before, shut_down in ((True, []), (False, [True])):
        monkeypatch.setattr(ray, "is_initialized", lambda: up_before)
        backend = raybackend.RayBackend({})
        assert backend.owns_ray is not up_before
        backend.terminate()
        assert shutdowns == shut_down


def test_a_backend_built_after_a_stop_starts_no_ray_and_no_actor(monkeypatch):
    """Ctrl-C while the run starts: Ray's start-up (and each actor's torch import) would only delay
    the stop; the next run in this process (``install``) starts both again."""
    ray_backend.install()
    flower_backend = raybackend.RayBackend.__mro__[1]
    started, built, shutdowns = [], [], []
    monkeypatch.setattr(flower_backend, "__init__",
                        lambda self, backend_config: (started.append(True), setattr(self, "pool", None)))
    monkeypatch.setattr(flower_backend, "build", lambda self, app_fn: built.append(app_fn))
    monkeypatch.setattr(ray, "shutdown", lambda: shutdowns.append(True))
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray_backend, "_LIVE", set())
    ray_backend.kill_actors()
    backend = raybackend.RayBackend({})
    backend.build("app")
    backend.terminate()
    assert (started, built, shutdowns, backend.num_workers) == ([], [], [], 0)
    ray_backend.install()
    backend = raybackend.RayBackend({})
    backend.build("app")
    assert (started, built) == ([True], ["app"])
