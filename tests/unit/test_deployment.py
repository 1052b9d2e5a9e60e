"""The Deployment Engine launcher's parts that need no Flower process (the launches themselves:
tests/integration/test_deployment.py)."""

import os
import subprocess
import sys

import pytest

from fedgraph_sim.config import DEFAULT_CONFIG, load_config
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.processes import alive, descendants
from fedgraph_sim.runtime.deployment import Launch, Processes, flwr_home, parse_address
from fedgraph_sim.runtime.simulation import ray_init_args


def test_addresses_are_host_and_port_or_a_free_loopback_port():
    assert parse_address("10.0.0.1:9100") == ("10.0.0.1", 9100)
    host, port = parse_address(None)
    assert host == "127.0.0.1" and 0 < port < 65536
    for bad in ("nohost", "host:", ":80", "host:99999", "host:x"):
        with pytest.raises(ConfigError, match="--superlink"):
            parse_address(bad)


def test_the_flower_home_holds_one_insecure_connection(tmp_path):
    text = (flwr_home(tmp_path / "flwr", "127.0.0.1", 9100) / "config.toml").read_text()
    assert 'default = "fedgraph"' in text and 'address = "127.0.0.1:9100"' in text and "insecure = true" in text


def test_bad_roles_partitions_and_launchers_are_refused_before_anything_is_written(tmp_path):
    config = load_config(None, ["federation.num_clients=2", f"output.dir={tmp_path}"])
    with pytest.raises(ConfigError, match="--role"):
        Launch(config, DEFAULT_CONFIG, [], role="workers")
    with pytest.raises(ConfigError, match="--clientapps: unknown 'forking'; valid: forked, flower"):
        Launch(config, DEFAULT_CONFIG, [], clientapps="forking")
    with pytest.raises(ConfigError, match="--partitions"):
        Launch(config, DEFAULT_CONFIG, [], partitions=[0, 2])
    assert list(tmp_path.iterdir()) == []


def test_stopping_ends_the_processes_started_and_their_children(tmp_path):
    processes = Processes(tmp_path, dict(os.environ))
    # a parent that starts a child in its own session (out of the parent's process group)
    script = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], "
              "start_new_session=True); time.sleep(60)")
    parent = processes.start("parent", [sys.executable, "-c", script])
    for _ in range(100):
        if descendants(parent.pid):
            break
        subprocess.run(["sleep", "0.1"])
    (child,) = descendants(parent.pid)
    stopped = processes.stop()
    assert {parent.pid, child} <= stopped
    assert not alive(parent.pid) and not alive(child)
    assert (tmp_path / "pids").read_text().split() == [str(p) for p in sorted(stopped)]


def test_federations_join_the_configured_ray_cluster():
    assert "address" not in ray_init_args(load_config(None, []))
    assert ray_init_args(load_config(None, ["federation.ray_address=auto"]))["address"] == "auto"
