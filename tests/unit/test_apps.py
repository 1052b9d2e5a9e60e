"""One app per role: the ``flwr run .`` components and ``run`` use the same factories."""

import importlib
import tomllib
from pathlib import Path

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


def test_the_run_config_names_the_config_file_and_overrides(tmp_path):
    config, run_dir = config_from_run_config({"config-file": "", "overrides": "federation.rounds=3 seed=7",
                                              "run-dir": str(tmp_path / "r")})
    assert (config.federation.rounds, config.seed, run_dir) == (3, 7, tmp_path / "r")
    config, run_dir = config_from_run_config({})
    assert run_dir == Path(config.output.dir) / "flwr-app"
