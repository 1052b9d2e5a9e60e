import os

import pytest
import torch

from fedgraph_sim.data import store


def pytest_configure(config):
    """Under pytest-xdist (``-n 2``), each worker runs torch on one thread, and so do the processes
    it starts: two workers of two threads each on two cores spend most of their time waiting on
    each other (GRAIN's unit tests ran 10x slower)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ["OMP_NUM_THREADS"] = "1"
        torch.set_num_threads(1)


@pytest.fixture
def data_root():
    """The real raw-data root, or skip (CI sets FEDGRAPH_DATA_ROOT)."""
    root = store.data_root()
    if root is None or not (root / "tu").is_dir():
        pytest.skip("FEDGRAPH_DATA_ROOT not set: real-data test skipped")
    return root


@pytest.fixture
def offline(monkeypatch):
    """Any network connection attempt fails the test."""
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")


@pytest.fixture
def flower_task(monkeypatch):
    """Building Messages outside a Flower runtime needs the process' task identity."""
    from flwr.supercore.task_identity import TaskIdentity

    for attr in ("_run_id", "_node_id", "_task_id"):
        monkeypatch.setattr(TaskIdentity, attr, 1)


@pytest.fixture(scope="session")
def local_ray():
    """One local Ray for the session's in-process federations and Ray attack workers: a run joins a
    Ray that is already up and leaves it up (``runtime.ray_backend``), so Ray starts once."""
    ray = pytest.importorskip("ray")
    from fedgraph_sim.local_ray import init_ray
    from fedgraph_sim.runtime.simulation import FLOWER_ENV

    for key, value in FLOWER_ENV.items():  # as a run sets them before it starts its Ray
        os.environ.setdefault(key, value)
    init_ray(None)  # the runtime environment Flower's backend gives the Ray it starts: this sys.path
    yield
    ray.shutdown()
