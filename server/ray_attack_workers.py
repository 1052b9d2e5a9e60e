"""Attack calls on the federation's own Ray (``attack.executor: ray``): local, or the cluster at
``federation.ray_address``.

``attack.workers`` Ray actors are spread over the cluster's nodes; each owns one attack worker of
:class:`server.attack_pool.WorkerPool` on its node, so every call still runs in a fresh,
sandboxed interpreter behind the same boundary, with the same hard limit (killed ``grace`` seconds
past its budget by the actor's pool) and the same copies of what the server saw. The actor itself
runs no attack code: it relays the calls and their results. The server's scheduling is the
pool's (:class:`~server.attack_scheduling.CallQueue`: a stateful group pinned to one actor, calls
sharing a fit sent together), results come back in the server's order, and rows do not depend on
the executor. Actors reserve no CPU, so they never wait behind Flower's client actors, which
reserve them all; a stop kills them, and their workers die with them (the lifeline closes).

What this buys is the attacks' compute on other machines of a cluster. On one machine the
in-process pool does the same work without Ray's hops (``benchmarks/bench_attack_workers.py``).
"""

from __future__ import annotations

import pickle
from typing import Any, Iterator

from attacks.base import Attack
from fedgraph_sim.local_ray import init_ray
from server.attack_calls import Call, CallResult, Listener
from server.attack_pool import WorkerPool
from server.attack_scheduling import CallQueue, slots, stateful_groups
from server.boundary import Boundary
from server.worker_loop import attack_specs

__all__ = ["AttackActor", "RayWorkers"]


class AttackActor:
    """One Ray actor: a pool of one attack worker on the actor's node."""

    def __init__(self, specs: bytes, plugins: list[str], grace: float, boundary: Boundary) -> None:
        from fedgraph_sim.plugins import load_plugins

        load_plugins(plugins)  # first: the attack classes may come from a plugin's modules
        attacks = {name: cls(**params) for name, (cls, params) in pickle.loads(specs).items()}
        self.pool = WorkerPool(attacks, plugins, grace, 1, boundary)

    def run(self, calls: list[Call]) -> list[CallResult]:
        return [result for _, result in self.pool.run(calls, Listener())]

    def close(self) -> None:
        self.pool.close()


class RayWorkers:
    """The executor's interface (``run``, ``stop``, ``close``) over ``workers`` :class:`AttackActor`
    actors, started at the first call (the federation's Ray is up by then; a replay starts or
    joins one at ``address``)."""

    def __init__(self, attacks: dict[str, Attack], plugins: list[str], grace: float, workers: int,
                 boundary: Boundary | None = None, address: str | None = None) -> None:
        self.specs = pickle.dumps(attack_specs(attacks))
        self.plugins, self.grace = list(plugins), grace
        self.boundary = boundary or Boundary(isolate=False)
        self.address = address
        self.count = slots(attacks, workers)
        self.groups = stateful_groups(attacks)
        self.actors: list = []
        self.stopped = False
        self._own_ray = False

    def _start(self) -> None:
        # the actors import plugins and the attacks' classes from where this process does (init_ray)
        self._own_ray = init_ray(self.address)
        self.actors = [self._new_actor() for _ in range(self.count)]
        self.slots = [object() for _ in range(self.count)]  # the queue tells workers apart by identity
        self.queue = CallQueue({g: self.slots[i % self.count] for i, g in enumerate(self.groups)})

    def run(self, calls: list[Call], listener: Listener) -> Iterator[tuple[Call, CallResult]]:
        """Every call's result, in the order of ``calls``."""
        import ray

        if not self.actors:
            self._start()
        self.queue.pending = list(calls)
        order, by_index = [c.index for c in calls], {c.index: c for c in calls}
        done: dict[int, CallResult] = {}
        running: dict[Any, tuple[int, list[Call]]] = {}  # object ref -> (actor, its calls)
        position = 0
        while position < len(order) and not self.stopped:
            busy = {slot for slot, _ in running.values()}
            for slot in range(self.count):
                if slot not in busy and (unit := self.queue.take(self.slots[slot])):
                    for call in unit:
                        listener.started(call)
                    running[self.actors[slot].run.remote(unit)] = (slot, unit)
            if not running:
                raise RuntimeError("attack actors idle with calls outstanding")  # a bug, not an input
            ready, _ = ray.wait(list(running), num_returns=1)
            if self.stopped:
                return
            for ref in ready:
                slot, unit = running.pop(ref)
                try:
                    results = ray.get(ref)
                except ray.exceptions.RayError as exc:  # the actor or its node died
                    reason = str(exc).strip().splitlines()[0][:200]
                    results = [CallResult("crashed", f"its Ray actor died ({reason})") for _ in unit]
                    self.actors[slot] = self._new_actor()
                for call, result in zip(unit, results):
                    listener.finished(call)
                    done[call.index] = result
            while position < len(order) and order[position] in done:
                yield by_index[order[position]], done.pop(order[position])
                position += 1

    def _new_actor(self):
        import ray

        actor = ray.remote(num_cpus=0, max_restarts=0, scheduling_strategy="SPREAD")(AttackActor)
        return actor.remote(self.specs, self.plugins, self.grace, self.boundary)

    def stop(self) -> None:
        """Kill every actor now (from another thread), and with them their workers."""
        import ray

        self.stopped = True
        for actor in self.actors:
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # Ray is already down
                pass

    def close(self) -> None:
        import ray

        if not self.actors:
            return
        try:
            ray.get([actor.close.remote() for actor in self.actors], timeout=30)
        except Exception:  # a dead actor, or Ray already shut down: its workers went with it
            pass
        self.stop()
        self.actors = []
        if self._own_ray:
            ray.shutdown()
