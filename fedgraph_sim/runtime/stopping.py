"""Stopping a run on request: one Ctrl-C (SIGINT) or SIGTERM ends it within seconds, a second at once.

Flower's simulation runs the ServerApp in a thread of its own while the main thread drives the
Ray backend. Interrupting the main thread (Python's default for SIGINT) tears Ray down under the
backend's worker threads, which then wait forever for their results and keep the process alive.
Here the first signal only sets a :class:`StopRequest` and runs its callbacks: the attack
workers are killed (no row is written after them) and so are the Ray actors running client turns
(:func:`fedgraph_sim.runtime.ray_backend.kill_actors`; a turn in flight would otherwise be awaited,
and an actor's first turn, its imports included, can take a minute on a loaded machine). The ServerApp's grid
(:class:`StoppableGrid`) raises :class:`RunStopped` at its next poll, which ends the strategy's
loop, and the backend then shuts down as at the end of any run.
The run writes the summary of the rows so far and reports the stop
(:class:`~fedgraph_sim.errors.Stopped`, exit code 130). A second signal exits at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Callable, Iterable, Iterator


if TYPE_CHECKING:
    from flwr.app import Message
    from flwr.serverapp import Grid

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _raise_interrupt(signum: int, _frame) -> None:
    raise KeyboardInterrupt


def interrupt_on_signals() -> None:
    """Ctrl-C and SIGTERM raise KeyboardInterrupt in the main thread (a sweep's or an audit's
    runner stops on it). Both are installed: Python leaves SIGINT ignored when it starts ignored,
    as in any job a non-interactive shell puts in the background (a CI script's ``&``)."""
    for sig in SIGNALS:
        signal.signal(sig, _raise_interrupt)


#: Signals received during start-up (``defer_startup_signals``), checked at ``startup_checkpoint``.
_STARTUP_SIGNALS: list[int] = []
#: What a stop during start-up says: one line, exit code 130 (``Stopped.exit_code``).
STARTUP_STOP = "error: stopped during start-up, before the federation ran"


def defer_startup_signals() -> None:
    """During a command's start-up (imports, the data, the attack workers), Ctrl-C and SIGTERM are
    remembered and acted on at the next :func:`startup_checkpoint`, a few seconds at most, instead
    of raising KeyboardInterrupt wherever Python is: raised inside a C extension's import (numpy's,
    torch's), it becomes an ImportError with a traceback, or marks the interpreter to end itself by
    SIGINT. A second signal exits at once."""
    for sig in SIGNALS:
        signal.signal(sig, _remember_startup_signal)


def _remember_startup_signal(signum: int, _frame) -> None:
    if _STARTUP_SIGNALS:
        exit_stopped_at_startup()
    _STARTUP_SIGNALS.append(signum)


def startup_checkpoint() -> None:
    """End the process here if a signal came during start-up (:func:`defer_startup_signals`)."""
    if _STARTUP_SIGNALS:
        exit_stopped_at_startup()


def exit_stopped_at_startup() -> None:
    """End the process after a Ctrl-C (or SIGTERM) during start-up: one line, exit code 130. Nothing
    has been written yet; the attack workers started so far end when their lifeline closes."""
    from fedgraph_sim.errors import Stopped

    print(STARTUP_STOP, file=sys.stderr)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(Stopped.exit_code)  # from a signal handler too, where raising SystemExit would be caught


def quiet_console(logger_names: tuple[str, ...] = ("flwr", "ray")) -> None:
    """Keep these loggers' terminal handlers from printing the errors a stop causes on purpose
    (Flower reports each killed actor with a traceback, and so may Ray while it deserializes the
    actor's death); their log files still record them."""
    for name in logger_names:
        for handler in logging.getLogger(name).handlers:
            if not isinstance(handler, logging.FileHandler):
                handler.setLevel(logging.CRITICAL + 1)


class RunStopped(Exception):
    """Raised in the ServerApp's thread to end the strategy's loop after a stop request."""


class StopRequest:
    """Whether, and by which signal, a stop was requested; shared by the run's threads.
    ``callbacks`` run once, in the thread that requests the stop."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signal_name = ""
        self.callbacks: list[Callable[[], None]] = []

    def __bool__(self) -> bool:
        return self._event.is_set()

    def set(self, signal_name: str) -> None:
        if self:
            return
        self.signal_name = signal_name
        self._event.set()
        for callback in self.callbacks:
            callback()

    @contextlib.contextmanager
    def on_signals(self) -> Iterator["StopRequest"]:
        """While inside: the first SIGINT or SIGTERM sets this request, a second exits the process
        at once (code 128 + signal). Outside the main thread, where Python allows no handler, the
        signals keep theirs."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return

        def handler(signum: int, _frame) -> None:
            name = signal.Signals(signum).name
            if self:
                os._exit(128 + signum)  # the second: at once
            print(f"\n{name}: stopping the run after the client turns in flight (the rows so far are kept); "
                  "again to exit at once", file=sys.stderr, flush=True)
            self.set(name)

        previous = {s: signal.signal(s, handler) for s in SIGNALS}
        if _STARTUP_SIGNALS:  # one came during the command's start-up, after its last checkpoint
            handler(_STARTUP_SIGNALS.pop(), None)
        try:
            yield self
        finally:
            for s, old in previous.items():
                signal.signal(s, old)


class StoppableGrid:
    """A Flower :class:`~flwr.serverapp.Grid` whose ``send_and_receive`` gives up when a stop is
    requested (Flower's own waits for the replies until its timeout, an hour by default).
    Everything else is the wrapped grid's."""

    def __init__(self, grid: Grid, stop: StopRequest, poll_seconds: float = 0.1) -> None:
        self._grid, self._stop, self._poll = grid, stop, poll_seconds

    def __getattr__(self, name: str):
        return getattr(self._grid, name)

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        if self._stop:
            raise RunStopped(self._stop.signal_name)
        pending = set(self._grid.push_messages(messages))
        replies: list[Message] = []
        end = None if timeout is None else time.monotonic() + timeout
        while pending and (end is None or time.monotonic() < end):
            got = list(self._grid.pull_messages(pending))
            replies.extend(got)
            pending.difference_update(m.metadata.reply_to_message_id for m in got)
            if pending:
                if self._stop:
                    raise RunStopped(self._stop.signal_name)
                time.sleep(self._poll)
        return replies
