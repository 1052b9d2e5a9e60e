"""The polling SuperNode: Flower's own SuperNode command, its loop's sleeps capped, nothing else
changed. (A real deployment through it is tests/integration/test_deployment.py.)"""

import importlib
import inspect
import time

from fedgraph_sim.runtime import polling_supernode
from fedgraph_sim.runtime.polling_supernode import POLL_SECONDS, CappedClock


def test_the_clock_caps_sleeps_and_passes_everything_else_through(monkeypatch):
    slept = []
    monkeypatch.setattr(time, "sleep", slept.append)
    clock = CappedClock(0.1)
    clock.sleep(3), clock.sleep(0.5), clock.sleep(0.02)
    assert slept == [0.1, 0.1, 0.02]
    assert clock.time is time.time and clock.monotonic is time.monotonic


def test_flowers_loop_sleeps_only_through_its_module_time():
    """The cap reaches every wait of the loop only while the module calls ``time.sleep`` (a
    ``from time import sleep`` in a new Flower would bypass it: this fails then)."""
    loop = importlib.import_module("flwr.supernode.start_client_internal")
    source = inspect.getsource(loop)
    assert "time.sleep(3)" in source  # the idle wait this module exists to shorten
    assert "from time import" not in source and source.count("sleep(") == source.count("time.sleep(")


def test_main_runs_flowers_supernode_with_the_loops_clock_capped(monkeypatch):
    import flwr.supernode.cli as cli

    loop = importlib.import_module("flwr.supernode.start_client_internal")
    monkeypatch.setattr(loop, "time", time)  # restored after the test
    seen = {}

    def fake_flower_supernode():
        import sys

        seen["argv"], seen["clock"] = list(sys.argv), loop.time

    monkeypatch.setattr(cli, "flower_supernode", fake_flower_supernode)
    monkeypatch.setattr("sys.argv", ["python"])
    polling_supernode.main(["--insecure", "--superlink", "127.0.0.1:1"])
    assert seen["argv"] == ["flower-supernode", "--insecure", "--superlink", "127.0.0.1:1"]
    assert isinstance(seen["clock"], CappedClock) and seen["clock"].cap == POLL_SECONDS < 3
