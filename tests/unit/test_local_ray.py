"""A Ray started here gets the local settings and its services in a session of their own, so a
signal to the run's process group cannot end the raylet under the run; a cluster joined at an
address is left as it is; ``ray.init``'s SIGTERM handler does not outlive :func:`init_ray`."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import ray
from ray._private import services

from fedgraph_sim import local_ray

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def console_popen(monkeypatch):
    """Ray's own ``ConsolePopen``, put back after the test."""
    monkeypatch.setattr(services, "ConsolePopen", services.ConsolePopen)
    while getattr(services.ConsolePopen, "own_session", False):  # patched earlier in this process
        monkeypatch.setattr(services, "ConsolePopen", services.ConsolePopen.__mro__[1])
    return services


def test_a_local_ray_gets_the_short_reconnect_timeout_and_a_cluster_does_not(monkeypatch, console_popen):
    for key in local_ray.LOCAL_RAY_ENV:
        monkeypatch.delenv(key, raising=False)
    local_ray.prepare_local_ray("10.0.0.1:6379")
    assert not any(key in os.environ for key in local_ray.LOCAL_RAY_ENV)
    assert not getattr(console_popen.ConsolePopen, "own_session", False)
    local_ray.prepare_local_ray(None)
    assert all(os.environ[key] == value for key, value in local_ray.LOCAL_RAY_ENV.items())


def test_ray_services_start_in_their_own_session(console_popen):
    local_ray.prepare_local_ray(None)
    local_ray.prepare_local_ray(None)  # idempotent: one subclass, not a subclass of itself
    assert console_popen.ConsolePopen.own_session
    assert console_popen.ConsolePopen.__mro__[1].__name__ == "ConsolePopen"
    assert not getattr(console_popen.ConsolePopen.__mro__[1], "own_session", False)
    # how Ray starts a service (services.start_ray_process): a ConsolePopen
    service = console_popen.ConsolePopen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert os.getsid(service.pid) == service.pid != os.getsid(0)
        assert os.getpgid(service.pid) != os.getpgid(0)  # a signal to our group misses it
    finally:
        service.kill()
        service.wait()


def test_a_group_sigterm_reaches_the_run_and_not_a_service(console_popen, tmp_path):
    """The failure this prevents, reproduced without Ray: a process group holding a "run" and a
    "service" it started; SIGTERM to the group ends the run's handler, the service lives on."""
    script = tmp_path / "run.py"
    script.write_text(
        "import signal, sys, time\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from ray._private import services\n"
        "from fedgraph_sim import local_ray\n"
        "local_ray.prepare_local_ray(None)\n"
        "service = services.ConsolePopen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "signal.signal(signal.SIGTERM, lambda *_: (print(service.pid, flush=True), sys.exit(0)))\n"
        "print('ready', flush=True)\n"
        "time.sleep(30)\n")
    run = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        assert run.stdout.readline().strip() == "ready"
        os.killpg(run.pid, signal.SIGTERM)
        service_pid = int(run.stdout.readline())
        assert run.wait(timeout=10) == 0
        os.kill(service_pid, 0)  # alive: the group's signal did not reach it
        os.kill(service_pid, signal.SIGKILL)
    finally:
        run.kill()


def test_init_ray_puts_back_the_sigterm_handler_and_joins_a_running_ray(monkeypatch):
    calls = []

    def fake_init(**kwargs):
        calls.append(kwargs)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(15))  # what ray.init does

    handler = lambda *_: None  # noqa: E731
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        monkeypatch.setattr(ray, "is_initialized", lambda: False)
        monkeypatch.setattr(ray, "init", fake_init)
        monkeypatch.setattr(local_ray, "prepare_local_ray", lambda address: None)
        assert local_ray.init_ray("10.0.0.1:6379", {"OMP_NUM_THREADS": "1"}) is True
        assert signal.getsignal(signal.SIGTERM) is handler
        env = calls[0]["runtime_env"]["env_vars"]
        assert calls[0]["address"] == "10.0.0.1:6379" and env["OMP_NUM_THREADS"] == "1"
        assert env["PYTHONPATH"].split(os.pathsep) == sys.path  # the workers import what we do
        monkeypatch.setattr(ray, "is_initialized", lambda: True)
        assert local_ray.init_ray(None) is False and len(calls) == 1  # joined: not ours to shut down
    finally:
        signal.signal(signal.SIGTERM, previous)
