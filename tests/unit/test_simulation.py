"""The simulation's terminal output: a failed client turn is one line, its traceback in log.txt."""

import io
import logging

from flwr.common.logger import ConsoleHandler

from fedgraph_sim.runtime.simulation import OneLineConsole


def _logged(message: str, exc_info: bool = False) -> tuple[str, str]:
    """What Flower's console handler and a file-like handler print for one record."""
    logger = logging.getLogger(f"test_simulation.{message[:12]}.{exc_info}")
    logger.propagate = False
    console, file = io.StringIO(), io.StringIO()
    console_handler = ConsoleHandler(colored=False, stream=console)
    console_handler.addFilter(OneLineConsole(console_handler))
    logger.addHandler(console_handler)
    logger.addHandler(logging.StreamHandler(file))
    if exc_info:
        try:
            raise ValueError("bad update")
        except ValueError:
            logger.exception(message)
    else:
        logger.error(message)
    return console.getvalue(), file.getvalue()


def test_a_traceback_in_the_message_is_its_last_line_on_the_console_and_whole_in_the_file():
    traceback = "Traceback (most recent call last):\n  File \"x.py\", line 1\nray.exceptions.ActorDiedError: died"
    console, file = _logged(traceback)
    assert console.strip().endswith(" ray.exceptions.ActorDiedError: died (the traceback is in the run's log.txt)")
    assert "\n" not in console.strip() and "ERROR" in console
    assert file.strip() == traceback


def test_an_exception_is_shown_by_its_last_line():
    console, file = _logged("the turn failed", exc_info=True)
    assert console.strip().endswith(" ValueError: bad update (the traceback is in the run's log.txt)")
    assert "Traceback" in file


def test_one_line_messages_are_unchanged():
    console, file = _logged("plain")
    assert console.strip().endswith(" plain") and file.strip() == "plain"
