"""The in-memory dataset every other layer works with."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
from torch import Tensor
from torch_geometric.data import Data

from fedgraph_sim.data.schema import FeatureSchema
from fedgraph_sim.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass
class GraphDataset:
    """A list of PyG graphs with float one-hot ``x``, ``edge_index``, ``y`` of shape ``[1]``.

    ``task`` is what the federation learns on them: ``graph`` classification (``y`` the label),
    or ``node`` classification, where each graph is a client's subgraph and also carries
    ``node_y`` (every node's label), ``train_mask`` (the labelled nodes) and ``center`` (the
    node it was grown around, whose label ``y`` is).

    Each graph also carries ``graph_id``, its index in the source dataset before any filtering,
    so audit records and reports can always point back at the original graph.
    """

    name: str
    graphs: list[Data]
    num_classes: int
    schema: FeatureSchema
    source: str
    meta: dict = field(default_factory=dict)
    task: str = "graph"  # graph | node
    task_type: str = "classification"  # classification | regression (y real, num_classes 1)

    def __len__(self) -> int:
        return len(self.graphs)

    def __getitem__(self, index: int) -> Data:
        return self.graphs[index]

    @property
    def labels(self) -> np.ndarray:
        """Class labels, the strata of the stratified splits and the Dirichlet partition. A
        regression set's strata are its targets above (1) or not above (0) their median."""
        if self.task_type == "regression":
            targets = self.targets
            return (targets > np.median(targets)).astype(np.int64) if len(targets) else np.zeros(0, np.int64)
        return np.array([int(g.y.view(-1)[0]) for g in self.graphs], dtype=np.int64)

    @property
    def targets(self) -> np.ndarray:
        """Every graph's first target as a float (a class index, or a regression target)."""
        return np.array([float(g.y.view(-1)[0]) for g in self.graphs], dtype=np.float64)

    @property
    def num_features(self) -> int:
        """The width ``F`` of ``x`` (the schema's)."""
        return self.schema.width

    def subset(self, indices: Sequence[int]) -> "GraphDataset":
        """The same dataset holding only the graphs at ``indices``, in that order.

        Args:
            indices (Sequence[int]): positions in :attr:`graphs` (repeats allowed).
        """
        return replace(self, graphs=[self.graphs[int(i)] for i in indices])

    def stats(self) -> dict:
        """A summary for listings: name, source, task, counts, feature width, mean and largest node
        count, mean undirected edge count, then the class counts (or the regression targets' mean and
        std) and :attr:`meta`."""
        nodes = np.array([g.num_nodes for g in self.graphs]) if self.graphs else np.zeros(1)
        edges = np.array([g.edge_index.size(1) // 2 for g in self.graphs]) if self.graphs else np.zeros(1)
        return {
            "name": self.name,
            "source": self.source,
            "task": self.task,
            "graphs": len(self.graphs),
            "classes": self.num_classes,
            "feature_width": self.num_features,
            "mean_nodes": round(float(nodes.mean()), 2),
            "max_nodes": int(nodes.max()),
            "mean_edges": round(float(edges.mean()), 2),
            **({"target_mean": round(float(self.targets.mean()), 4), "target_std": round(float(self.targets.std()), 4)}
               if self.task_type == "regression" else
               {"class_counts": np.bincount(self.labels, minlength=self.num_classes).tolist()}),
            **self.meta,
        }


def drop_large_graphs(dataset: GraphDataset, max_nodes: int | None) -> GraphDataset:
    """Keep graphs with at most ``max_nodes`` nodes (a decoder's N_max), logging what was dropped.

    Args:
        dataset (GraphDataset): the dataset.
        max_nodes (int, optional): the largest node count kept; None returns ``dataset`` as it is.

    Raises:
        ConfigError: when no graph is small enough.
    """
    if max_nodes is None:
        return dataset
    kept = [g for g in dataset.graphs if g.num_nodes <= max_nodes]
    if dataset.graphs and not kept:
        smallest = min(g.num_nodes for g in dataset.graphs)
        raise ConfigError(f"data.max_nodes: no graph of {dataset.name} has at most {max_nodes} nodes "
                          f"(the smallest has {smallest})")
    dropped = len(dataset.graphs) - len(kept)
    if dropped:
        log.info("%s: dropped %d of %d graphs with more than max_nodes=%d nodes",
                 dataset.name, dropped, len(dataset.graphs), max_nodes)
    meta = {**dataset.meta, "max_nodes_filter": max_nodes, "dropped_by_max_nodes": dropped}
    return replace(dataset, graphs=kept, meta=meta)


def split_in_memory(pyg) -> list[tuple[int, Tensor | None, Tensor, Tensor]]:
    """``(num_nodes, x, edge_index, y)`` per graph of a PyG ``InMemoryDataset``, by slicing its
    storage once (indexing graph by graph is ~10x slower on large sets). PyG stores per-graph
    edge indices un-incremented, so the slices are already local. Each slice is copied into its
    own storage: a view would keep (and pickle, for every attack call) the whole dataset's.

    Args:
        pyg (InMemoryDataset): a loaded PyG dataset (``TUDataset``, ``MoleculeNet``); ``x`` is None
            per graph when it has no node features.
    """
    data, slices = pyg._data, pyg.slices
    node_ptr = slices["x"] if "x" in slices and data.x is not None else None
    edge_ptr = slices["edge_index"]
    out = []
    for i in range(len(pyg)):
        e = data.edge_index[:, edge_ptr[i]:edge_ptr[i + 1]].clone()
        if node_ptr is not None:
            x = data.x[node_ptr[i]:node_ptr[i + 1]].clone()
            n = x.size(0)
        else:
            x, n = None, pyg[i].num_nodes  # featureless TU sets: rare, so the slow path
        out.append((n, x, e, data.y[slices["y"][i]:slices["y"][i + 1]].clone()))
    return out
