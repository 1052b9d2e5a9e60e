"""One app per role: the ``flwr run .`` components and ``run`` use the same factories."""

import importlib
import tomllib
from pathlib import Path

import pytest

from flwr.clientapp import ClientApp
from flwr.serverapp import ServerApp

from fedgraph_sim.runtime.apps import config_from_run_config

ROOT = Path(__file__).resolve().parents[2]


def test_the_flwr_components_are_the_runtime_apps():
    flwr = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["flwr"]["app"]
    expected = {"serverapp": ServerApp, "clientapp": ClientApp}
    for role, reference in flwr["components"].items():
        module, attribute = reference.split(":")
        assert module == "fedgraph_sim.runtime.apps"
        assert isinstance(getattr(importlib.import_module(module), attribute), expected[role])


def test_the_run_config_names_the_config_file_and_overrides():
    config = config_from_run_config({"config-file": "", "overrides": "federation.rounds=3 seed=7"})
    assert (config.federation.rounds, config.seed) == (3, 7)
    # empty by default: every plain `flwr run` gets a fresh directory; `fedgraph-sim deploy` sets it
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]["run-dir"] == ""


def test_a_launched_run_directory_is_used_only_when_it_holds_nothing_but_the_launchers_logs(tmp_path, monkeypatch):
    from fedgraph_sim.errors import ConfigError
    from fedgraph_sim.runtime import apps

    monkeypatch.setattr(apps, "Session", lambda config, run_dir: run_dir)
    (tmp_path / "deployment").mkdir()
    context = type("Context", (), {"run_config": {"overrides": "data.dataset=synthetic", "run-dir": str(tmp_path)}})
    assert apps._session_from_run_config(context) == tmp_path
    (tmp_path / "results.jsonl").write_text("")
    with pytest.raises(ConfigError, match="run-dir"):
        apps._session_from_run_config(context)


def test_every_flwr_run_gets_a_fresh_run_directory(tmp_path, monkeypatch):
    from fedgraph_sim.runtime import apps

    monkeypatch.setattr(apps, "Session", lambda config, run_dir: run_dir)
    context = type("Context", (), {"run_config": {"overrides": f"data.dataset=synthetic output.dir={tmp_path}"}})
    first, second = apps._session_from_run_config(context), apps._session_from_run_config(context)
    assert first != second and first.parent == second.parent == tmp_path
