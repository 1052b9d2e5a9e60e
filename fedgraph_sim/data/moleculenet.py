"""MoleculeNet (Wu et al. 2018) through PyG's ``MoleculeNet``, with an explicit feature schema.

PyG gives 9 integer atom features per node (``torch_geometric.utils.smiles.x_map``). We one-hot
encode each into its own block, in this order and with these widths:

=====================  =====  ===============================================
block                  width  values
=====================  =====  ===============================================
atomic_num             119    0 .. 118 (the node type)
chirality              9      RDKit ChiralType names
degree                 11     0 .. 10
formal_charge          12     -5 .. 6
num_hs                 9      0 .. 8
num_radical_electrons  5      0 .. 4
hybridization          8      RDKit HybridizationType names
is_aromatic            2      False, True
is_in_ring             2      False, True
=====================  =====  ===============================================

Total width 177. ``features="grain"`` replaces them with GRAIN's 8 RDKit atom properties (140
slots, standardised with the dataset's statistics; ``fedgraph_sim/data/grain_features.py``).
Labels: one task is chosen (``task``: index or column name, default the first);
graphs whose label is missing (NaN) are dropped. Regression sets (ESOL, FreeSolv, Lipo) keep their
real targets with ``task_type="regression"`` (``data.task_type``; a one-output model trained with
MSE) and by default become binary classification by splitting at the task's median; either way
``meta["label_rule"]`` records it.
"""

from __future__ import annotations

import math
import warnings

import torch
from torch_geometric.data import Data
from torch_geometric.datasets import MoleculeNet
from torch_geometric.utils.smiles import x_map

from fedgraph_sim.data import store
from fedgraph_sim.data.dataset import GraphDataset, split_in_memory
from fedgraph_sim.data.grain_features import grain_molecules
from fedgraph_sim.data.schema import FeatureBlock, FeatureSchema
from fedgraph_sim.errors import ConfigError

SCHEMA = FeatureSchema(
    tuple(FeatureBlock(name, tuple(values)) for name, values in x_map.items()),
    type_block="atomic_num",
)
REGRESSION = {"esol", "freesolv", "lipo"}
FEATURES = ("pyg", "grain")
# PyG's key -> display name; PCBA/MUV/ToxCast load too when their raw files exist.
MOLECULENET_NAMES = {key: spec[0] for key, spec in MoleculeNet.names.items()}
MOLECULENET_NAMES["lipo"] = "Lipo"


def task_names(raw_csv) -> list[str]:
    """Column names of the label columns, read from the raw CSV header at PyG's indices.

    Args:
        raw_csv (Path): the dataset's raw CSV, ``<root>/<key>/raw/<file>`` (``key`` PyG's lower-case
            name, read from the path).
    """
    key = raw_csv.parent.parent.name
    header = raw_csv.read_text().split("\n", 1)[0].split(",")
    target = MoleculeNet.names[key][4]
    picked = header[target] if isinstance(target, slice) else [header[target]]
    return [name.strip().strip('"') for name in picked]


def _resolve_task(task, names: list[str], dataset: str) -> int:
    if task is None:
        return 0
    if isinstance(task, int) or (isinstance(task, str) and task.lstrip("-").isdigit()):
        index = int(task)
        if 0 <= index < len(names):
            return index
    elif task in names:
        return names.index(task)
    raise ConfigError(f"data.task: '{task}' is not a task of {dataset}; valid: 0..{len(names) - 1} "
                      f"or one of {', '.join(names)}")


def load_moleculenet(name: str, task=None, features: str = "pyg", task_type: str = "classification") -> GraphDataset:
    """One MoleculeNet dataset with one task as its labels (module docstring): graphs with SMILES,
    one-hot (or GRAIN's) node features, binary labels (a regression set's split at its median) or
    real targets; graphs without a label dropped.

    Args:
        name (str): PyG's name of the dataset, any case (``tox21``, ``ESOL``, ...).
        task (int or str, optional): the label column, by index or name; None is the first.
            (default: :obj:`None`)
        features (str, optional): ``pyg`` (177 one-hot slots) or ``grain`` (140, standardised).
            (default: ``"pyg"``)
        task_type (str, optional): ``classification``, or ``regression`` for ESOL, FreeSolv and
            Lipo. (default: ``"classification"``)

    Raises:
        ConfigError: for unknown features, a task the set lacks, regression on a classification
            set, GRAIN's features on a set none of whose molecules they fit, or data neither
            offline nor downloadable.
    """
    if features not in FEATURES:
        raise ConfigError(f"data.features: unknown node features '{features}' for {name}; "
                          f"valid: {', '.join(FEATURES)}")
    key = name.lower()
    regression = task_type == "regression"
    if regression and key not in REGRESSION:
        raise ConfigError(f"data.task_type: {MOLECULENET_NAMES[key]} has class labels, not real targets; "
                          f"regression needs {', '.join(MOLECULENET_NAMES[k] for k in sorted(REGRESSION))}")
    with store.prepared("moleculenet", key) as root:  # the cache's lock held while PyG reads and processes
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # PyG warns once per SMILES RDKit rejects
                with store.quiet_processing(name):
                    pyg = MoleculeNet(str(root), name=MOLECULENET_NAMES[key])
        except Exception as exc:
            raise store.missing_data_error(name, "moleculenet", key, exc) from None
        names = task_names(root / key / "raw" / pyg.raw_file_names)
    index = _resolve_task(task, names, MOLECULENET_NAMES[key])

    y_all = pyg._data.y.view(len(pyg), -1)[:, index]
    x_all = SCHEMA.encode(pyg._data.x)  # one-hot once for the whole dataset, then slice
    meta = {"pyg_graphs": len(pyg), "task": names[index], "num_tasks": len(names)}
    if regression:
        meta["label_rule"] = f"{names[index]} (real-valued)"
    elif key in REGRESSION:
        finite = y_all[~torch.isnan(y_all)]
        threshold = float(finite.median())
        meta["label_rule"] = f"{names[index]} > median ({threshold:.4g})"
    graphs, dropped = [], 0
    node_ptr = pyg.slices["x"]
    for i, (n, _, edge_index, _) in enumerate(split_in_memory(pyg)):
        value = float(y_all[i])
        if math.isnan(value):
            dropped += 1
            continue
        if regression:
            y = torch.tensor([value], dtype=torch.float32)
        else:
            y = torch.tensor([int(value > threshold) if key in REGRESSION else int(value)])
        graphs.append(Data(x=x_all[node_ptr[i]:node_ptr[i + 1]].clone(), edge_index=edge_index,
                           y=y, num_nodes=n, graph_id=i,
                           smiles=pyg._data.smiles[i]))
    meta["dropped_missing_label"] = dropped
    schema = SCHEMA
    if features == "grain":
        graphs, schema, outside = grain_molecules(graphs)
        meta["features"], meta["dropped_outside_schema"] = "grain", outside
    return GraphDataset(name=MOLECULENET_NAMES[key], graphs=graphs, num_classes=1 if regression else 2,
                        schema=schema, source="moleculenet", meta=meta,
                        task_type="regression" if regression else "classification")
