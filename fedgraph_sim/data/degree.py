"""A one-hot node-degree block appended to a dataset's features (``data.degree_feature``).

GRAIN (Drencheva et al., ICLR 2025) reads each node's degree from its features: it gives the
number of neighbours to attach, the GCN normalisation of partly known neighbourhoods, and marks
nodes that still need neighbours. Molecule sets with GRAIN's features carry it; for TU sets
(MUTAG, COX2, ...) and ``synthetic`` this appends a block ``degree`` with values 0..D, D the
largest degree in the dataset (the server fixes the schema from its data, as it fixes the value
sets of every other block).
"""

from __future__ import annotations

from dataclasses import replace

import torch
from torch_geometric.data import Data
from torch_geometric.utils import degree as node_degree, remove_self_loops

from fedgraph_sim.data.dataset import GraphDataset
from fedgraph_sim.data.schema import FeatureBlock
from fedgraph_sim.errors import ConfigError


def degrees_of(g: Data) -> torch.Tensor:
    """Each node's degree ``[n]`` (long), self-loops not counted.

    Args:
        g (Data): a graph with an undirected ``edge_index`` (each edge in both directions).
    """
    edge_index, _ = remove_self_loops(g.edge_index)
    return node_degree(edge_index[0], g.num_nodes, dtype=torch.long)


def with_degree_block(dataset: GraphDataset) -> GraphDataset:
    """``dataset`` with a one-hot ``degree`` block (values ``0..D``, ``D`` the largest degree)
    appended to every graph's ``x`` and its schema, which names it as the degree block.

    Args:
        dataset (GraphDataset): a dataset without a degree block (else :class:`ConfigError`).
    """
    if dataset.schema.degree_block is not None:
        raise ConfigError(f"data.degree_feature: {dataset.name} already has the degree block "
                          f"'{dataset.schema.degree_block}'")
    degs = [degrees_of(g) for g in dataset.graphs]
    top = max((int(d.max()) for d in degs if d.numel()), default=0)
    block = FeatureBlock("degree", tuple(range(top + 1)))
    schema = dataset.schema.with_block(block, degree=True)
    graphs = []
    for g, d in zip(dataset.graphs, degs):
        h = g.clone()
        onehot = torch.nn.functional.one_hot(d, top + 1).to(g.x.dtype)
        h.x = torch.cat([g.x, schema.standardize(onehot, slice(schema.width - block.width, None))], dim=1)
        graphs.append(h)
    return replace(dataset, graphs=graphs, schema=schema, meta={**dataset.meta, "degree_feature": top})
