"""The forking SuperExec: each ClientApp task runs Flower's ``run_clientapp`` in a child forked from
the warm parent, which reaps it; other task types are refused. (A real deployment through it is
tests/integration/test_deployment.py.)"""

import os
import time
from types import SimpleNamespace

import pytest
from flwr.supercore.constant import TaskType
from flwr.supercore.superexec.executor.types import LaunchResultStatus

from fedgraph_sim.runtime.forking_superexec import ForkingExecutor


def spec(task_type=TaskType.CLIENT_APP, token="ab" * 8):
    return SimpleNamespace(task_type=task_type, runtime_api_address="127.0.0.1:1", token=token, insecure=True,
                           parent_pid=os.getpid())


def test_a_clientapp_task_runs_flowers_runner_in_a_forked_child(tmp_path, monkeypatch):
    import flwr.supernode.runtime.run_clientapp as runner

    def fake_run_clientapp(**kwargs):  # what the child runs: record who ran it, with what
        (tmp_path / f"{os.getpid()}.token").write_text(kwargs["token"] + " " + kwargs["runtime_api_address"])

    monkeypatch.setattr(runner, "run_clientapp", fake_run_clientapp)
    executor = ForkingExecutor()
    result = executor.launch(spec())
    assert result.status == LaunchResultStatus.ACCEPTED
    child, = executor.children
    deadline = time.monotonic() + 30
    while executor.children and time.monotonic() < deadline:
        executor.reconcile()
        time.sleep(0.05)
    assert not executor.children  # reaped
    written, = tmp_path.glob("*.token")
    assert int(written.stem) == child != os.getpid()
    assert written.read_text() == "abababababababab 127.0.0.1:1"


def test_other_task_types_are_refused():
    executor = ForkingExecutor()
    result = executor.launch(spec(TaskType.SERVER_APP))
    assert result.status == LaunchResultStatus.FAILED and "ClientApps only" in result.message
    assert not executor.children


@pytest.mark.parametrize("argv", [[], ["--config-file", "x.yaml"]])
def test_the_runtime_api_address_is_required(argv):
    from fedgraph_sim.runtime.forking_superexec import main

    with pytest.raises(SystemExit):
        main(argv)
