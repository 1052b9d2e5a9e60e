"""The papers' victims as named presets (``model: {preset: grain_gcn}``): one module per model,
saying which paper's model it is (``PAPER``) and the :class:`~fedgraph_sim.models.GraphClassifier`
options that build it (``OPTIONS``). A key set beside ``preset`` overrides the preset's
(``{preset: glg_sage, flatten_nodes: 28}``)."""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from types import ModuleType

from fedgraph_sim.errors import ConfigError


@lru_cache(maxsize=1)
def presets() -> dict[str, ModuleType]:
    """Every preset module of this package, by name."""
    return {info.name: importlib.import_module(f"{__name__}.{info.name}")
            for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")}


def expand(model: dict) -> dict:
    """The ``model`` section with its preset's options under the keys it sets itself.

    Args:
        model (dict): the ``model`` section as a tree; without ``preset`` it is returned as is.

    Raises:
        ConfigError: for an unknown preset, or a preset beside ``module``.
    """
    name = model.get("preset")
    if name is None:
        return model
    known = presets()
    if name not in known:
        raise ConfigError(f"model.preset: unknown preset '{name}'; valid: {', '.join(sorted(known))}")
    if model.get("module") is not None:
        raise ConfigError("model.preset: a preset is one of the bench's classifiers; a user's model (model.module) "
                          "takes no preset")
    return {**known[name].OPTIONS, **model}
