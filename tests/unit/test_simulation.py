"""The simulation's terminal output: a failed client turn is one line, its traceback in log.txt."""

import logging

from fedgraph_sim.runtime.simulation import LastLineFormatter


def _format(message: str, exc_info=None) -> str:
    record = logging.LogRecord("flwr", logging.ERROR, __file__, 1, message, None, exc_info)
    return LastLineFormatter(logging.Formatter("%(levelname)s : %(message)s")).format(record)


def test_a_traceback_in_the_message_becomes_its_last_line():
    text = _format("Traceback (most recent call last):\n  File \"x.py\", line 1\nray.exceptions.ActorDiedError: died")
    assert text == "ERROR : ray.exceptions.ActorDiedError: died (the traceback is in the run's log.txt)"


def test_an_exception_is_shown_by_its_last_line():
    try:
        raise ValueError("bad update")
    except ValueError as exc:
        text = _format("the turn failed", (ValueError, exc, exc.__traceback__))
    assert text == "ERROR : ValueError: bad update (the traceback is in the run's log.txt)"
    assert "\n" not in text


def test_one_line_messages_are_unchanged():
    assert _format("plain") == "ERROR : plain"
