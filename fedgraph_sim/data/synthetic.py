"""A deterministic generator of small molecule-like graphs, for tests and file-free demos.

Each graph is a random tree grown atom by atom under valence limits (types C, N, O, F with
maximum degrees 4, 3, 2, 1). Class 0 molecules grow as chains (each atom bonds to the newest open
atom) and stay acyclic; class 1 molecules branch (any of the three newest open atoms) and get two
ring closures between atoms 4-6 bonds apart (5- to 7-membered rings). The label therefore depends
on structure only; a 2-layer GCN learns it to about 90% accuracy. Nodes are numbered in growth
order, so bonded atoms sit at nearby indices, as in TU files.
"""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from fedgraph_sim.data.dataset import GraphDataset
from fedgraph_sim.data.schema import single_block_schema
from fedgraph_sim.errors import require

TYPES = ("C", "N", "O", "F")
VALENCE = np.array([4, 3, 2, 1])
TYPE_WEIGHTS = np.array([0.65, 0.15, 0.15, 0.05])
RINGS = 2  # ring closures per class-1 graph


def _molecule(rng: np.random.Generator, n: int, cyclic: bool) -> tuple[np.ndarray, list]:
    types = np.zeros(n, dtype=np.int64)
    degree = np.zeros(n, dtype=np.int64)
    edges = []
    for i in range(1, n):
        open_nodes = [j for j in range(i) if degree[j] < VALENCE[types[j]]]
        # Prefer recent atoms so bonded atoms keep nearby indices; cyclic molecules branch more.
        recent = open_nodes[-3:] if cyclic else open_nodes[-1:]
        parent = recent[rng.integers(len(recent))]
        # A new atom needs valence 2 if it should not end the chain while more atoms remain.
        allowed = TYPE_WEIGHTS.copy()
        if i < n - 1 and len(open_nodes) == 1 and degree[parent] == VALENCE[types[parent]] - 1:
            allowed[VALENCE < 2] = 0
        types[i] = rng.choice(len(TYPES), p=allowed / allowed.sum())
        edges.append((parent, i))
        degree[parent] += 1
        degree[i] += 1
    for _ in range(RINGS if cyclic else 0):
        dist = _tree_distances(n, edges)
        pairs = [(a, b) for a in range(n) for b in range(a + 1, n)
                 if 4 <= dist[a, b] <= 6 and degree[a] < VALENCE[types[a]]
                 and degree[b] < VALENCE[types[b]]]
        if not pairs:
            return None, None
        a, b = pairs[rng.integers(len(pairs))]
        edges.append((a, b))
        degree[a] += 1
        degree[b] += 1
    return types, edges


def _tree_distances(n: int, edges: list) -> np.ndarray:
    adj = [[] for _ in range(n)]
    for a, b in edges:
        adj[a].append(b)
        adj[b].append(a)
    dist = np.full((n, n), -1)
    for s in range(n):
        dist[s, s] = 0
        frontier = [s]
        while frontier:
            nxt = []
            for u in frontier:
                for v in adj[u]:
                    if dist[s, v] < 0:
                        dist[s, v] = dist[s, u] + 1
                        nxt.append(v)
            frontier = nxt
    return dist


def make_synthetic(num_graphs: int = 200, min_nodes: int = 6, max_nodes: int = 16,
                   seed: int = 0) -> GraphDataset:
    """``num_graphs`` graphs with ``min_nodes``..``max_nodes`` nodes, half of them cyclic
    (label 1; labels alternate 0, 1, ...).

    Args:
        num_graphs (int, optional): how many graphs, at least 2. (default: ``200``)
        min_nodes (int, optional): the fewest nodes, at least 6. (default: ``6``)
        max_nodes (int, optional): the most nodes. (default: ``16``)
        seed (int, optional): the generator's seed. (default: ``0``)
    """
    require(num_graphs >= 2, "data.options.num_graphs", f"must be >= 2 (got {num_graphs})")
    require(6 <= min_nodes <= max_nodes, "data.options.min_nodes",
            f"need 6 <= min_nodes <= max_nodes (got {min_nodes}, {max_nodes})")
    rng = np.random.default_rng(seed)
    graphs = []
    while len(graphs) < num_graphs:
        label = len(graphs) % 2
        n = int(rng.integers(min_nodes, max_nodes + 1))
        types, edges = _molecule(rng, n, cyclic=bool(label))
        if types is None:
            continue
        e = torch.tensor(edges, dtype=torch.long).t()
        graphs.append(Data(
            x=torch.nn.functional.one_hot(torch.from_numpy(types), len(TYPES)).float(),
            edge_index=to_undirected(e, num_nodes=n),
            y=torch.tensor([label]), num_nodes=n, graph_id=len(graphs)))
    return GraphDataset(
        name="synthetic", graphs=graphs, num_classes=2,
        schema=single_block_schema("atom_type", TYPES), source="synthetic",
        meta={"generator": {"num_graphs": num_graphs, "min_nodes": min_nodes,
                            "max_nodes": max_nodes, "seed": seed}})
