"""A pool of attack workers: attack calls apart from the server, in worker processes with a hard
time limit (``attack.executor: pool``; with ``ray``, each Ray actor owns a pool of one).

Each worker is a fresh interpreter (``server/sandbox.py`` run as a program, so a user's script is
never re-imported) that holds none of the server's memory (no audit records, no datasets, no run
directory). By default it runs in the sandbox's namespaces, where the data, the caches, the runs
and the server's processes do not exist (:mod:`server.boundary`); in every mode the data, cache
and run locations are removed from its environment, it runs on one torch thread, and it exits
when the server dies (its lifeline pipe closes). The server sends it pickled copies of what an
attack may see, the ``ObservedUpdate`` and the ``AttackerKnowledge`` with the granted hints, and
receives pickled results back, so an attack can neither read the ground truth through the server's
objects nor change what the server holds.

Calls of attacks that keep state between calls (``Attack.keeps_state``: GraphDLG's decoder) run
in one worker per attack, variants included (``graphdlg`` and ``graphdlg@refine`` share a
``ctx.shared`` store), in the order the server makes them; every other call goes to the first free
worker, followed there by the calls that share its fit on the same update (``Attack.after_fit``:
``dlg@fedgig_bp`` after ``dlg@fedgig``, which then find the fit in ``ctx.fits``); the queue is
:mod:`server.attack_scheduling`'s, the worker's side :mod:`server.worker_loop`'s. Every call seeds
torch's global RNG with its own seed and runs on one torch thread, so rows do not depend on the
number of workers. A call still running ``grace`` seconds after its budget is killed (status
``timeout``, scored on the last graphs it streamed with ``ctx.checkpoint``, if any); a worker that
dies is ``crashed`` with its exit code or signal. Either way the worker is started afresh for the
next call, so an attack's state from earlier rounds (a trained decoder) is lost with it.

``workers=0`` runs every call in the server's own process instead (:mod:`server.in_process_executor`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from multiprocessing import connection
from typing import Any, Iterator

from attacks.base import Attack
from fedgraph_sim.processes import end, kill_group, spawn
from server import sandbox
from server.attack_calls import Call, CallResult, Listener
from server.attack_scheduling import CallQueue, slots, stateful_groups
from server.boundary import Boundary
from server.worker_loop import ENTRY, attack_specs

__all__ = ["HIDDEN_ENV", "STARTUP_SECONDS", "WorkerPool", "exit_reason"]

#: Environment variables that point at data, caches or run directories: not for attack workers.
HIDDEN_ENV = ("FEDGRAPH_DATA_ROOT", "FEDGRAPH_CACHE", "FLWR_HOME", "PWD", "OLDPWD")
#: How long a new worker may take to import torch and build its attacks before its first call
#: starts (the call's own clock starts when it does).
STARTUP_SECONDS = 300.0


@dataclass
class _Running:
    call: Call
    kill_at: float  # time.monotonic(): startup allowance, then budget + grace from the call's start
    streamed: Any = None  # the last graphs the call streamed (ctx.checkpoint)
    started: float | None = None  # time.perf_counter() when the worker began the call


@dataclass
class _Worker:
    process: subprocess.Popen | None = None
    conn: Any = None
    lifeline: int | None = None  # the server's end of the worker's lifeline pipe (server.sandbox)
    busy: _Running | None = None
    reserved: list[Call] = dataclasses.field(default_factory=list)  # calls sharing a fit it computes


class WorkerPool:
    """Up to ``workers`` worker processes, each with every attack (built from its class and
    parameters). The groups of attacks that keep state are spread over the workers, one worker
    each; the other calls go to whichever worker is free."""

    def __init__(self, attacks: dict[str, Attack], plugins: list[str], grace: float, workers: int,
                 boundary: Boundary | None = None) -> None:
        self.specs = attack_specs(attacks)
        self.plugins, self.grace = list(plugins), grace
        self.boundary = boundary or Boundary(isolate=False)
        stateful = stateful_groups(attacks)
        self.workers = [_Worker() for _ in range(slots(attacks, workers))]
        self.stopped = False  # set by stop() from another thread
        self.queue = CallQueue({g: self.workers[i % len(self.workers)] for i, g in enumerate(stateful)})
        for worker in self.workers:  # now: their start-up overlaps the federation's own
            self._start(worker)

    def _start(self, worker: _Worker) -> None:
        parent_end, child_end = socket.socketpair()
        life_read, worker.lifeline = os.pipe()
        layout = {**self.boundary.layout(child_end.fileno(), life_read), "entry": ENTRY}
        env = {k: v for k, v in os.environ.items() if k not in HIDDEN_ENV}
        try:
            worker.process = spawn(sandbox.command(layout), die_signal=None,  # its lifeline instead
                                   pass_fds=(child_end.fileno(), life_read), env=env, cwd="/",
                                   stdin=subprocess.DEVNULL)
        finally:
            child_end.close()
            os.close(life_read)
        worker.conn = connection.Connection(parent_end.detach())
        try:
            worker.conn.send_bytes(pickle.dumps((self.specs, self.plugins), protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:  # it ended as it started (seen once under a start-up Ctrl-C on a loaded machine):
            pass  # _dispatch starts a dead worker again for its next call, and a death there is a row

    def _stop(self, worker: _Worker) -> None:
        if worker.process is not None:
            end([worker.process], grace=0)
            with contextlib.suppress(Exception):
                worker.conn.close()
            with contextlib.suppress(Exception):
                os.close(worker.lifeline)
        worker.process = worker.conn = worker.lifeline = None

    def _next_call(self, worker: _Worker) -> Call | None:
        """The next call reserved for this worker, else the next the queue gives it (with the
        calls that share its fit, reserved for it)."""
        if not worker.reserved:
            worker.reserved = self.queue.take(worker)
        return worker.reserved.pop(0) if worker.reserved else None

    def _dispatch(self, worker: _Worker, listener: Listener) -> None:
        if self.stopped:
            return
        if worker.busy is None and (call := self._next_call(worker)) is not None:
            if worker.process is None or worker.process.poll() is not None:
                self._stop(worker)
                self._start(worker)
            listener.started(call)
            # the call's clock starts with its "started" message; until then the worker may be starting
            worker.busy = _Running(call, time.monotonic() + STARTUP_SECONDS)
            try:
                worker.conn.send_bytes(pickle.dumps(call, protocol=pickle.HIGHEST_PROTOCOL))
            except OSError:  # the worker died (its death is read from the pipe next), or stop() killed it
                if not self.stopped:
                    raise

    def run(self, calls: list[Call], listener: Listener) -> Iterator[tuple[Call, CallResult]]:
        """Every call's result, in the order of ``calls`` (as a serial run would give them)."""
        self.queue.pending = list(calls)
        done: dict[int, CallResult] = {}
        order = [c.index for c in calls]
        by_index = {c.index: c for c in calls}
        position = 0
        while position < len(order) and not self.stopped:
            for worker in self.workers:
                self._dispatch(worker, listener)
            busy = [w for w in self.workers if w.busy is not None]
            if not busy:
                raise RuntimeError("attack workers idle with calls outstanding")  # a bug, not an input
            deadline = min(w.busy.kill_at for w in busy)
            ready = connection.wait([w.conn for w in busy], timeout=max(0.0, deadline - time.monotonic()))
            if self.stopped:
                return  # the workers were killed by stop(): what they return now is not a result
            for worker in busy:
                running, call = worker.busy, worker.busy.call
                if worker.conn in ready:
                    result = self._receive(worker, listener)
                elif time.monotonic() >= running.kill_at:
                    self._stop(worker)
                    if running.started is None:
                        result = CallResult("crashed", f"its worker did not start within {STARTUP_SECONDS:g} s")
                    else:
                        result = CallResult("timeout", f"killed {self.grace:g} s after its {call.budget:g} s budget",
                                            running.streamed, time.perf_counter() - running.started)
                else:
                    continue
                if result is None:
                    continue  # progress or a checkpoint; still running
                worker.busy = None
                listener.finished(call)
                done[call.index] = result
            while position < len(order) and order[position] in done:
                index = order[position]
                yield by_index[index], done.pop(index)
                position += 1

    def _receive(self, worker: _Worker, listener: Listener) -> CallResult | None:
        """The call's result when it ends, None for a message on the way."""
        running = worker.busy
        try:
            message = pickle.loads(worker.conn.recv_bytes())
        except (EOFError, OSError):
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.process.wait(timeout=5)
            how = exit_reason(worker.process.returncode, self.boundary.isolate)
            self._stop(worker)
            seconds = 0.0 if running.started is None else time.perf_counter() - running.started
            return CallResult("crashed", f"its worker process died ({how})", running.streamed, seconds)
        if message[0] == "started":
            running.started = time.perf_counter()
            running.kill_at = time.monotonic() + running.call.budget + self.grace
        elif message[0] == "progress":
            listener.progress(running.call, message[1], message[2])
        elif message[0] == "checkpoint":
            running.streamed = message[1]
        else:
            return message[1]
        return None

    def stop(self) -> None:
        """Kill every worker now (from another thread: :meth:`run` then returns without results)."""
        self.stopped = True
        for worker in self.workers:  # kill only: the serving thread may be waiting on the pipes
            if worker.process is not None:
                kill_group(worker.process)

    def close(self) -> None:
        for worker in self.workers:
            if worker.conn is not None:
                with contextlib.suppress(Exception):
                    worker.conn.send_bytes(pickle.dumps(None))
                    worker.process.wait(timeout=5)
            self._stop(worker)


def exit_reason(code: int | None, isolated: bool) -> str:
    """How a worker ended, from its exit status (the sandbox's reaper reports a signal as 128 + it)."""
    if code is not None and isolated and 128 < code <= 128 + 64:
        code = 128 - code
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by signal {signal.Signals(-code).name}"
    return f"exit code {code}"
