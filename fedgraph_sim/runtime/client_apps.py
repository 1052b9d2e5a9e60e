"""A user's own Flower ``ClientApp`` in place of the bench's clients (``federation.client_app``).

The ClientApp takes its data from :class:`fedgraph_sim.runtime.user_app.Federation`, which follows
the run's config that the server sends with every train message."""

from __future__ import annotations

from fedgraph_sim.config import RunConfig
from fedgraph_sim.errors import ConfigError


def client_app_of(config: RunConfig):
    """The user's Flower ``ClientApp`` of ``federation.client_app``; a :class:`ConfigError` naming
    the key otherwise."""
    from flwr.clientapp import ClientApp

    from fedgraph_sim.models.user import load_attribute

    app = load_attribute(config.federation.client_app, "federation.client_app")
    if not isinstance(app, ClientApp):
        raise ConfigError(f"federation.client_app: {config.federation.client_app} is a {type(app).__name__}, "
                          "not a flwr.clientapp.ClientApp")
    return app
