"""Datasets by name: every loader registered in :data:`fedgraph_sim.registry.datasets` (any TU
dataset not listed loads as ``tu:NAME``), :func:`load_dataset` and :func:`available_datasets`."""

from __future__ import annotations

import inspect
from functools import partial
from typing import Any

from fedgraph_sim import registry
from fedgraph_sim.data import store
from fedgraph_sim.data.dataset import GraphDataset, drop_large_graphs
from fedgraph_sim.data.degree import with_degree_block
from fedgraph_sim.data.moleculenet import MOLECULENET_NAMES, load_moleculenet
from fedgraph_sim.data.random_graphs import make_random_graph_balls, make_random_graphs, make_sbm_communities
from fedgraph_sim.data.synthetic import make_synthetic
from fedgraph_sim.data.tu import TU_NAMES, load_tu
from fedgraph_sim.errors import ConfigError

registry.datasets.add("synthetic", make_synthetic)
for _name in TU_NAMES:
    registry.datasets.add(_name, partial(load_tu, _name))
for _key, _name in MOLECULENET_NAMES.items():
    registry.datasets.add(_name, partial(load_moleculenet, _key))
registry.datasets.add("random_graphs", make_random_graphs)
registry.datasets.add("random_graph_balls", make_random_graph_balls)
registry.datasets.add("sbm_communities", make_sbm_communities)


def _loader(name: str):
    if name.lower().startswith("tu:"):
        return partial(load_tu, name.split(":", 1)[1])
    try:
        return registry.datasets.get(name, key="data.dataset")
    except ConfigError as exc:
        raise ConfigError(f"{exc} (or tu:NAME for any TU dataset)") from None


def load_dataset(name: str, *, max_nodes: int | None = None, degree_feature: bool = False,
                 options: dict[str, Any] | None = None, **keywords) -> GraphDataset:
    """Load a dataset by name; ``options`` (``data.options``) and ``keywords`` go to its loader
    (``task`` and ``features`` for MoleculeNet, ``num_graphs``/``min_nodes``/``max_nodes``/``seed``
    for ``synthetic``: its ``max_nodes`` only through ``options``, this function's own being the
    size filter). Then drop graphs above ``max_nodes`` and append a degree block if
    ``degree_feature``. An option the loader does not take, or of another type than its default,
    is a :class:`ConfigError` naming it.

    Args:
        name (str): a registered dataset name (case-insensitive), or ``tu:NAME``.
        max_nodes (int, optional): the largest node count kept (``data.max_nodes``).
            (default: :obj:`None`)
        degree_feature (bool, optional): append a one-hot degree block (``data.degree_feature``).
            (default: :obj:`False`)
        options (dict[str, Any], optional): the loader's options (``data.options``).
            (default: :obj:`None`)
        **keywords: further loader arguments from their own config keys (``task``, ``features``,
            ``task_type``); they override ``options``.
    """
    loader = _loader(name)
    accepted = inspect.signature(loader).parameters
    options = {**(options or {}), **keywords}
    for key, value in options.items():
        where = f"data.{key}" if key in keywords else f"data.options.{key}"
        if key == "task_type" and key not in accepted:
            raise ConfigError(f"data.task_type: {name} has class labels, not real targets; regression needs "
                              "ESOL, FreeSolv or Lipo")
        if key not in accepted:
            valid = ", ".join(p for p in accepted if p != "name") or "none"
            raise ConfigError(f"{where}: not an option of dataset {name}; valid options: {valid}")
        _check_type(where, value, accepted[key].default)
    if max_nodes is not None and max_nodes < 1:
        raise ConfigError(f"data.max_nodes: must be >= 1 (got {max_nodes})")
    dataset = drop_large_graphs(loader(**options), max_nodes)
    return with_degree_block(dataset) if degree_feature else dataset


def _check_type(where: str, value: Any, default: Any) -> None:
    """``value`` of the kind of the loader's numeric ``default`` (an int where it is an int, a bool
    is not one; a number where it is a float), so a typo is a line here, not a TypeError inside."""
    if default is inspect.Parameter.empty or default is None:
        return
    if isinstance(default, bool):
        ok, kind = isinstance(value, bool), "true or false"
    elif isinstance(default, int):
        ok, kind = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif isinstance(default, float):
        ok, kind = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
    else:  # a string default may stand for several kinds (random graphs' labelled: 'all' or k); the loader checks
        return
    if not ok:
        raise ConfigError(f"{where}: must be {kind}, like the default {default!r} (got {value!r})")


def available_datasets() -> list[str]:
    """Names that load without a download: the generators plus those with raw files or a cache."""
    names = ["synthetic", "random_graphs", "random_graph_balls", "sbm_communities"]
    candidates = [("tu", n, n) for n in TU_NAMES]
    candidates += [("moleculenet", key, disp) for key, disp in MOLECULENET_NAMES.items()]
    root = store.data_root()
    if root is not None and (root / "tu").is_dir():
        extra = sorted(p.name for p in (root / "tu").iterdir() if p.name not in TU_NAMES)
        candidates += [("tu", n, f"tu:{n}") for n in extra]
    for family, folder, display in candidates:
        cached = (store.cache_root() / family / folder / "processed").is_dir()
        if store.raw_source(family, folder) is not None or cached:
            names.append(display)
    return names
