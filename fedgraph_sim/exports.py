"""A package's public names imported on first use (PEP 562), so that importing one light module
of a package (``fedgraph_sim.report.tables``, ``fedgraph_sim.runtime.cli``) does not load every
heavy one its ``__init__`` re-exports: ``fedgraph-sim --help`` and a bad option's error stay well
under a second instead of paying for torch, PyG, Flower, Ray and matplotlib.

Usage in a package's ``__init__.py``::

    __getattr__, __all__ = lazy_exports(__name__, {"run": "simulation", "Session": "session"})
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable


def lazy_exports(package: str, homes: dict[str, str]) -> tuple[Callable[[str], Any], list[str]]:
    """A module ``__getattr__`` serving each name of ``homes`` (name -> submodule of ``package``
    that defines it) from its submodule, imported when the name is first used and then kept as
    the package's attribute, and the sorted ``__all__``.

    Args:
        package (str): the package's dotted name (its ``__name__``).
        homes (dict[str, str]): each exported name -> the submodule (relative to ``package``)
            that defines it.

    Returns:
        ``(__getattr__, __all__)``; an unknown name raises :class:`AttributeError`.
    """

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{homes[name]}"), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    return __getattr__, sorted(homes)
