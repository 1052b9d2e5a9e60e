import os

import pytest
import torch

from fedgraph_sim.data import store


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
