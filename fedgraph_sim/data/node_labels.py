"""Random node labels on a graph-level dataset (``data.node_labels``): node classification on
whole graphs, as GRAIN evaluates it (Drencheva et al., "GRAIN: Exact Graph Reconstruction from
Gradients", ICLR 2025, Table 5: molecules whose every node carries a uniformly random one of two
classes, the loss per node, no pooling).

Every node gets ``node_y``, a class drawn uniformly from ``classes`` by a generator seeded with the
run's seed and the graph's ``graph_id`` (so a graph's labels do not depend on which graphs were
loaded beside it, and move with its nodes under ``data.node_order``); ``train_mask`` marks every
node as labelled. The dataset's task becomes ``node``; ``y`` keeps the graph's own label, which
then only stratifies the splits and the partition.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from fedgraph_sim.data.dataset import GraphDataset
from fedgraph_sim.errors import ConfigError


def with_random_node_labels(dataset: GraphDataset, classes: int, seed: int) -> GraphDataset:
    """``dataset`` with a uniformly random class of ``classes`` on every node (module docstring).

    Args:
        dataset (GraphDataset): a graph-classification dataset (else :class:`ConfigError`).
        classes (int): the number of node classes, at least 2.
        seed (int): the run's seed; with each graph's ``graph_id``, it seeds the graph's labels.
    """
    if dataset.task != "graph" or dataset.task_type != "classification":
        raise ConfigError(f"data.node_labels: {dataset.name} is a {dataset.task}-level "
                          f"{dataset.task_type} dataset; random node labels go on graph classification sets")
    if classes < 2:
        raise ConfigError(f"data.node_labels: needs at least 2 classes (got {classes})")
    graphs = []
    for g in dataset.graphs:
        rng = np.random.default_rng([seed, 104_729, int(g.graph_id)])
        h = g.clone()
        h.node_y = torch.from_numpy(rng.integers(classes, size=g.num_nodes)).long()
        h.train_mask = torch.ones(g.num_nodes, dtype=torch.bool)
        graphs.append(h)
    return replace(dataset, graphs=graphs, num_classes=classes, task="node",
                   meta={**dataset.meta, "node_labels": classes})
