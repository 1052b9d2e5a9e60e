"""``federation.client_app`` (``fedgraph_sim.runtime.client_apps``): a user's ClientApp is loaded
from a file or an import path; anything else is one line naming the key."""

from pathlib import Path

import pytest
from flwr.clientapp import ClientApp

from fedgraph_sim.config import load_config
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.runtime.client_apps import client_app_of

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "mutag_gin"


def test_the_examples_client_app_loads_from_its_file():
    config = load_config(None, [f"federation.client_app={EXAMPLE / 'client_app.py'}:app"])
    assert isinstance(client_app_of(config), ClientApp)


@pytest.mark.parametrize("target, says", [
    (f"{EXAMPLE / 'gin.py'}:Net", "is a type, not a flwr.clientapp.ClientApp"),
    (f"{EXAMPLE / 'client_app.py'}:nope", "has no attribute nope"),
])
def test_anything_else_names_the_key(target, says):
    with pytest.raises(ConfigError, match="^federation.client_app: ") as err:
        client_app_of(load_config(None, [f"federation.client_app={target}"]))
    assert says in str(err.value)


def test_a_user_client_app_refuses_the_benchs_defenses():
    with pytest.raises(ConfigError, match="^federation.client_app: a user's ClientApp applies its defenses"):
        load_config(None, [f"federation.client_app={EXAMPLE / 'client_app.py'}:app",
                           "defenses=[{name: prune, p: 0.5}]"])
