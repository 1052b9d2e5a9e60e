"""Stopping a run on request, piece by piece: the request, the signals, the grid and the console."""

import logging
import os
import signal
from types import SimpleNamespace

import pytest

from fedgraph_sim.runtime.stopping import RunStopped, StoppableGrid, StopRequest, quiet_console


def test_the_first_request_wins_and_runs_the_callbacks_once():
    stop, calls = StopRequest(), []
    stop.callbacks.append(lambda: calls.append(stop.signal_name))
    assert not stop
    stop.set("SIGINT")
    stop.set("SIGTERM")
    assert stop and stop.signal_name == "SIGINT" and calls == ["SIGINT"]


def test_a_signal_inside_sets_the_request_and_the_old_handler_returns_after(capsys):
    stop, before = StopRequest(), signal.getsignal(signal.SIGTERM)
    with stop.on_signals():
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.signal_name == "SIGTERM"
    assert signal.getsignal(signal.SIGTERM) is before
    assert "SIGTERM: stopping the run" in capsys.readouterr().err


class _Grid:
    """Replies to the first message at the first pull; never to the others."""

    def __init__(self):
        self.pulls = 0

    def push_messages(self, messages):
        return [m.id for m in messages]

    def pull_messages(self, ids):
        self.pulls += 1
        return [SimpleNamespace(metadata=SimpleNamespace(reply_to_message_id=1))] if 1 in ids else []

    def get_node_ids(self):
        return [7]


def test_the_grid_gives_up_at_its_next_poll_after_a_stop():
    stop, grid = StopRequest(), _Grid()
    stoppable = StoppableGrid(grid, stop, poll_seconds=0.01)
    assert len(stoppable.send_and_receive([SimpleNamespace(id=1)])) == 1
    assert stoppable.get_node_ids() == [7]  # everything else is the wrapped grid's
    stop.set("SIGINT")
    pulls = grid.pulls
    with pytest.raises(RunStopped, match="SIGINT"):
        stoppable.send_and_receive([SimpleNamespace(id=1)])
    assert grid.pulls == pulls  # nothing sent after the stop


def test_a_pending_wait_ends_when_the_stop_arrives():
    stop, grid = StopRequest(), _Grid()
    original = grid.pull_messages

    def pull_then_stop(ids):
        stop.set("SIGTERM")  # arrives while a reply is still pending
        return original(ids)

    grid.pull_messages = pull_then_stop
    with pytest.raises(RunStopped, match="SIGTERM"):
        StoppableGrid(grid, stop, poll_seconds=0.01).send_and_receive([SimpleNamespace(id=2)])


def test_quiet_console_silences_the_terminal_and_keeps_the_log_file(tmp_path):
    loggers = [logging.getLogger(f"test_quiet_{i}") for i in range(2)]
    consoles = [logging.StreamHandler() for _ in loggers]
    log_file = logging.FileHandler(tmp_path / "log.txt")
    for logger, console in zip(loggers, consoles):
        logger.handlers = [console, log_file]
    try:
        quiet_console(tuple(logger.name for logger in loggers))
        assert all(c.level > logging.CRITICAL for c in consoles)
        assert log_file.level == logging.NOTSET
    finally:
        log_file.close()
        for logger in loggers:
            logger.handlers = []


def test_by_default_flower_and_ray_are_quieted():
    """Ray logs a traceback of its own when it deserializes a killed actor's death."""
    pytest.importorskip("ray")
    handlers = [h for name in ("flwr", "ray") for h in logging.getLogger(name).handlers]
    levels = [h.level for h in handlers]
    try:
        quiet_console()
        consoles = [h for h in logging.getLogger("ray").handlers if not isinstance(h, logging.FileHandler)]
        assert consoles and all(h.level > logging.CRITICAL for h in consoles)
    finally:
        for handler, level in zip(handlers, levels):
            handler.setLevel(level)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_on_signals_raises_keyboard_interrupt_also_where_sigint_came_in_ignored(sig):
    import time

    from fedgraph_sim.runtime.stopping import SIGNALS, interrupt_on_signals

    previous = {s: signal.getsignal(s) for s in SIGNALS}
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job's inheritance
    try:
        interrupt_on_signals()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), sig)
            time.sleep(1)  # the handler raises as soon as Python runs again
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
