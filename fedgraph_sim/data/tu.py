"""TU datasets (Morris et al. 2020) through PyG's ``TUDataset``.

Node features are the one-hot node labels only (``use_node_attr=False``), as in the GraphDLG
and GRAIN papers; datasets without node labels get one constant feature.
"""

from __future__ import annotations

import re

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.datasets import TUDataset

from fedgraph_sim.data import store
from fedgraph_sim.data.dataset import GraphDataset, split_in_memory
from fedgraph_sim.data.schema import single_block_schema

# TU datasets we document and test; any other TU name loads as "tu:NAME".
TU_NAMES = ("MUTAG", "PTC_MR", "PTC_FM", "PTC_FR", "PTC_MM", "AIDS", "ENZYMES", "PROTEINS",
            "NCI1", "NCI109", "COX2", "BZR", "DHFR", "DD", "Mutagenicity", "FRANKENSTEIN")


def _label_values(raw_dir, name: str, width: int) -> tuple:
    """The raw node-label codes behind the one-hot columns (PyG shifts them to start at 0)."""
    path = raw_dir / f"{name}_node_labels.txt"
    if not path.is_file():
        return tuple(range(width))
    labels = np.loadtxt(path, delimiter=",", dtype=np.int64, ndmin=2)[:, 0]
    low = int(labels.min())
    return tuple(range(low, low + width))


def _label_names(raw_dir, values: tuple) -> tuple | None:
    """What each node-label code stands for, from the dataset's README ("Node labels:" then lines
    such as ``0  C``; MUTAG's and PTC's list atoms); None when it does not say for every code."""
    path = raw_dir / "README.txt"
    if not path.is_file():
        return None
    names: dict[int, str] = {}
    lines = iter(path.read_text(errors="replace").splitlines())
    for line in lines:
        if line.strip().lower().startswith("node labels:"):
            for entry in lines:
                match = re.fullmatch(r"\s*(\d+)\s+(\S.*?)\s*", entry)
                if match:
                    names[int(match.group(1))] = match.group(2)
                elif entry.strip() and names:
                    break
            break
    return tuple(names[v] for v in values) if all(v in names for v in values) else None


def load_tu(name: str) -> GraphDataset:
    """The TU dataset ``name``: one-hot node labels as features (one constant feature without
    them), a one-block schema naming the label codes (and the atoms, when the README says).

    Args:
        name (str): the TU name as the files spell it (``MUTAG``, ``PROTEINS``, ...).

    Raises:
        ConfigError: when it is neither under the data root nor downloadable, or has no graph
            labels.
    """
    with store.prepared("tu", name) as root:  # the cache's lock held while PyG reads and processes
        try:
            with store.quiet_processing(name):
                pyg = TUDataset(str(root), name=name)
        except Exception as exc:  # any download/parse failure offline becomes one clear line
            raise store.missing_data_error(name, "tu", name, exc) from None
        if pyg.num_classes < 2 or pyg._data.y is None:
            raise store.missing_data_error(name, "tu", name, ValueError("no graph_labels"))

        graphs = []
        for i, (n, x, edge_index, y) in enumerate(split_in_memory(pyg)):
            x = x.float() if x is not None else torch.ones(n, 1)
            graphs.append(Data(x=x, edge_index=edge_index, y=y.view(1).long(), num_nodes=n, graph_id=i))
        width = graphs[0].x.size(1)
        has_labels = pyg._data.x is not None
        values = _label_values(root / name / "raw", name, width) if has_labels else (1,)
        schema = single_block_schema("node_label" if has_labels else "constant", values,
                                     names=_label_names(root / name / "raw", values) if has_labels else None)
    return GraphDataset(name=name, graphs=graphs, num_classes=int(pyg.num_classes),
                        schema=schema, source="tu")
