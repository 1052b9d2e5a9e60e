"""User plugins: modules named under the config's ``plugins:`` key, imported in every process that
builds or validates a run (the driver, each ClientApp actor, each sweep worker), so that a user's
own attack, defense or dataset registers itself everywhere without editing the package.

A plugin is an importable module (on ``PYTHONPATH`` or installed) whose import registers its
pieces, e.g. an :class:`attacks.base.Attack` subclass decorated with ``attacks.register``.
"""

from __future__ import annotations

import importlib
import re

from fedgraph_sim.errors import ConfigError

MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def load_plugins(names: list[str]) -> None:
    """Import each module in ``names`` (once per process; Python caches modules).

    Args:
        names (list[str]): dotted module names. One that is not a module name, cannot be found
            or fails while importing raises :class:`~fedgraph_sim.errors.ConfigError`.
    """
    for name in names:
        if not isinstance(name, str) or not MODULE_NAME.fullmatch(name):
            raise ConfigError(f"plugins: '{name}' is not a module name (dotted Python identifiers)")
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ConfigError(f"plugins: cannot import '{name}' ({exc}); put its folder on PYTHONPATH "
                              "or install it") from None
        except ConfigError:
            raise
        except Exception as exc:  # e.g. an attack class the base class refuses at definition
            raise ConfigError(f"plugins: '{name}' failed while importing: {type(exc).__name__}: "
                              f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
