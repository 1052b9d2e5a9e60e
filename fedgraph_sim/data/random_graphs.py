"""GLG's synthetic graphs (Sinha, Liu, Du, Shen, "Gradient Inversion Attack on Graph Neural
Networks", arXiv:2411.19440, Sec. 5): random undirected graphs of average degree ``d`` whose
``d * n / 2`` edges have endpoints drawn uniformly over the nodes (self-pairs and duplicates
dropped), N(0, 1) node features and uniform labels. The paper gives neither the feature width nor
the number of classes; we use 128 (the width of its social sets) and 2.

Two datasets are built on the generator:

- ``random_graphs`` (graph classification): ``num_graphs`` graphs of ``nodes`` +- ``spread``
  nodes (default 50 +- 10, the paper's average of 50), one uniform label each.
- ``random_graph_balls`` (node classification, subgraph federated learning): one graph of
  ``graph_nodes`` nodes with a uniform label per node; each of ``num_subgraphs`` client subgraphs
  is the ``hops``-hop ball around a random centre, capped at ``subgraph_nodes`` nodes in BFS order (the
  farthest hop cut first), as GLG attacks "a random node and its 3-hop neighbourhood" and caps
  keep the dense attack feasible. ``labelled: center`` labels only the centre for training, so
  the client's gradient is the one target node's loss of GLG's Node-1 attacker; ``all`` labels
  every node (Node-2); an integer ``k`` labels the centre and ``k - 1`` other nodes drawn at
  random, the batch of ``k`` targets of GLG's batched Node-1 (Table 8).
- ``sbm_communities`` (node classification): a stochastic block model of ``communities`` blocks
  of ``community_size`` nodes (edge probability ``p_in`` inside a block, ``p_out`` across); each
  client subgraph is one block's induced subgraph, the community a client holds in subgraph FL.

The real social sets of the paper (Facebook Page-Page, GitHub) are not available offline.
"""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from fedgraph_sim.data.dataset import GraphDataset
from fedgraph_sim.data.schema import single_block_schema
from fedgraph_sim.errors import require

LABELLED = ("all", "center", "an integer k >= 1")


def _check_labelled(labelled) -> None:
    valid = labelled in ("all", "center") or (isinstance(labelled, int) and not isinstance(labelled, bool)
                                               and labelled >= 1)
    require(valid, "data.options.labelled", f"unknown '{labelled}'; valid: {', '.join(LABELLED)}")


def labelled_mask(n: int, labelled, rng: np.random.Generator) -> torch.Tensor:
    """The training mask ``[n]`` (bool) of a subgraph of ``n`` nodes whose node 0 is the centre.

    Args:
        n (int): the subgraph's node count.
        labelled (str or int): ``all``, ``center``, or ``k``: the centre and ``k - 1`` other nodes
            (as many as there are).
        rng (np.random.Generator): draws the other labelled nodes.
    """
    if labelled == "all":
        return torch.ones(n, dtype=torch.bool)
    mask = torch.zeros(n, dtype=torch.bool)
    mask[0] = True
    if labelled != "center" and labelled > 1:
        others = rng.choice(np.arange(1, n), size=min(labelled - 1, n - 1), replace=False)
        mask[torch.from_numpy(others)] = True
    return mask


def random_edges(n: int, degree: float, rng: np.random.Generator) -> torch.Tensor:
    """``round(degree * n / 2)`` endpoint pairs drawn uniformly, self-pairs and duplicates dropped,
    as an undirected ``edge_index``.

    Args:
        n (int): the node count.
        degree (float): the intended average degree (somewhat less remains after the drops).
        rng (np.random.Generator): draws the endpoints.

    Returns:
        ``[2, 2 * E]`` (long), each edge in both directions.
    """
    pairs = rng.integers(0, n, size=(int(round(degree * n / 2)), 2))
    pairs = np.unique(np.sort(pairs[pairs[:, 0] != pairs[:, 1]], axis=1), axis=0)
    return to_undirected(torch.from_numpy(pairs.T.copy()).long(), num_nodes=n)


def continuous_schema(width: int):
    """A one-block schema of ``width`` real-valued columns named ``feature``.

    Args:
        width (int): the feature width.
    """
    return single_block_schema("feature", range(width), continuous=True)


def _check(features: int, classes: int, degree: float) -> None:
    require(features >= 1, "data.options.features", f"must be >= 1 (got {features})")
    require(classes >= 2, "data.options.classes", f"must be >= 2 (got {classes})")
    require(degree > 0, "data.options.degree", f"must be > 0 (got {degree})")


def make_random_graphs(num_graphs: int = 100, nodes: int = 50, spread: int = 10, degree: float = 4.0,
                       features: int = 128, classes: int = 2, seed: int = 0) -> GraphDataset:
    """Graph classification on GLG's synthetic graphs (module docstring).

    Args:
        num_graphs (int, optional): how many graphs, at least 2. (default: ``100``)
        nodes (int, optional): the mean node count. (default: ``50``)
        spread (int, optional): node counts are uniform over ``nodes +- spread``.
            (default: ``10``)
        degree (float, optional): the average degree. (default: ``4.0``)
        features (int, optional): the feature width (N(0, 1) features). (default: ``128``)
        classes (int, optional): the number of (uniform) labels. (default: ``2``)
        seed (int, optional): the generator's seed. (default: ``0``)
    """
    _check(features, classes, degree)
    require(num_graphs >= 2, "data.options.num_graphs", f"must be >= 2 (got {num_graphs})")
    require(0 <= spread <= nodes - 2, "data.options.spread", f"need 0 <= spread <= nodes - 2 (got {spread}, {nodes})")
    rng = np.random.default_rng(seed)
    graphs = []
    for i in range(num_graphs):
        n = int(rng.integers(nodes - spread, nodes + spread + 1))
        graphs.append(Data(x=torch.from_numpy(rng.standard_normal((n, features))).float(),
                           edge_index=random_edges(n, degree, rng), y=torch.tensor([int(rng.integers(classes))]),
                           num_nodes=n, graph_id=i))
    return GraphDataset(name="random_graphs", graphs=graphs, num_classes=classes, schema=continuous_schema(features),
                        source="synthetic", meta={"generator": {"num_graphs": num_graphs, "nodes": nodes,
                                                                "spread": spread, "degree": degree, "seed": seed}})


def bfs_ball(neighbours: list[np.ndarray], center: int, hops: int, cap: int) -> list[int]:
    """The nodes within ``hops`` of ``center`` in BFS order, the first ``cap`` of them.

    Args:
        neighbours (list[np.ndarray]): each node's neighbours.
        center (int): the start node (first in the result).
        hops (int): the radius.
        cap (int): the most nodes returned.
    """
    seen, order, frontier = {center}, [center], [center]
    for _ in range(hops):
        nxt = []
        for u in frontier:
            for v in neighbours[u]:
                if int(v) not in seen:
                    seen.add(int(v))
                    nxt.append(int(v))
        order += nxt
        frontier = nxt
    return order[:cap]


def induced_subgraph(x: torch.Tensor, edge_index: torch.Tensor, nodes: list[int]) -> torch.Tensor:
    """``edge_index`` of the subgraph induced by ``nodes``, renumbered in their order.

    Args:
        x (torch.Tensor): the whole graph's node features ``[N, F]`` (only ``N`` is used).
        edge_index (torch.Tensor): the whole graph's edges ``[2, E]``.
        nodes (list[int]): the kept nodes, distinct; node ``nodes[i]`` becomes ``i``.
    """
    index = torch.full((x.size(0),), -1, dtype=torch.long)
    index[torch.tensor(nodes)] = torch.arange(len(nodes))
    kept = (index[edge_index[0]] >= 0) & (index[edge_index[1]] >= 0)
    return index[edge_index[:, kept]]


def make_random_graph_balls(num_subgraphs: int = 40, graph_nodes: int = 2000, degree: float = 4.0,
                            features: int = 128, classes: int = 2, hops: int = 3, subgraph_nodes: int = 50,
                            labelled: str | int = "all", seed: int = 0) -> GraphDataset:
    """Node classification on client subgraphs of one GLG synthetic graph (module docstring).
    Each subgraph has ``x``, ``edge_index``, ``node_y`` (every node's label), ``train_mask`` (the
    labelled nodes), ``center`` (the centre's index, 0 before any reordering) and ``y``, the
    centre's label, which partitions the subgraphs and labels them for graph-level attackers.

    Args:
        num_subgraphs (int, optional): the subgraphs (distinct centres). (default: ``40``)
        graph_nodes (int, optional): the whole graph's node count. (default: ``2000``)
        degree (float, optional): its average degree. (default: ``4.0``)
        features (int, optional): the feature width. (default: ``128``)
        classes (int, optional): the number of node labels. (default: ``2``)
        hops (int, optional): each ball's radius. (default: ``3``)
        subgraph_nodes (int, optional): the most nodes of a ball. (default: ``50``)
        labelled (str or int, optional): the training mask: ``all``, ``center`` or ``k``.
            (default: ``"all"``)
        seed (int, optional): the generator's seed. (default: ``0``)
    """
    _check(features, classes, degree)
    _check_labelled(labelled)
    require(1 <= num_subgraphs <= graph_nodes, "data.options.num_subgraphs",
            f"must be in 1..graph_nodes (got {num_subgraphs})")
    require(hops >= 1 and subgraph_nodes >= 2, "data.options.hops",
            f"need hops >= 1, subgraph_nodes >= 2 (got {hops}, {subgraph_nodes})")
    rng = np.random.default_rng(seed)
    edge_index = random_edges(graph_nodes, degree, rng)
    x = torch.from_numpy(rng.standard_normal((graph_nodes, features))).float()
    node_y = torch.from_numpy(rng.integers(classes, size=graph_nodes)).long()
    src, dst = edge_index.numpy()
    neighbours = [dst[src == u] for u in range(graph_nodes)]
    centers = rng.choice(graph_nodes, size=num_subgraphs, replace=False)
    node_sets = [bfs_ball(neighbours, int(c), hops, subgraph_nodes) for c in centers]
    return _node_level("random_graph_balls", x, edge_index, node_y, node_sets, labelled, classes,
                       {"graph_nodes": graph_nodes, "degree": degree, "hops": hops, "subgraph_nodes": subgraph_nodes,
                        "seed": seed})


def _node_level(name: str, x, edge_index, node_y, node_sets, labelled, classes: int, meta: dict) -> GraphDataset:
    """One subgraph per node list (its first node the centre), as ``make_random_graph_balls`` says."""
    graphs = []
    rng = np.random.default_rng([meta["seed"], 1])  # its own stream: the graphs do not depend on it
    for i, nodes in enumerate(node_sets):
        graphs.append(Data(x=x[nodes], edge_index=induced_subgraph(x, edge_index, nodes), node_y=node_y[nodes],
                           train_mask=labelled_mask(len(nodes), labelled, rng),
                           center=0, y=node_y[nodes[0]].view(1), num_nodes=len(nodes), graph_id=i))
    return GraphDataset(name=name, graphs=graphs, num_classes=classes, schema=continuous_schema(x.size(1)),
                        source="synthetic", task="node", meta={"generator": {**meta, "labelled": labelled}})


def make_sbm_communities(communities: int = 20, community_size: int = 50, p_in: float = 0.08,
                         p_out: float = 0.001, features: int = 128, classes: int = 2, labelled: str | int = "all",
                         seed: int = 0) -> GraphDataset:
    """Node classification on the communities of a stochastic block model (module docstring);
    the subgraphs are as :func:`make_random_graph_balls`'s, each centred on its block's first node.

    Args:
        communities (int, optional): the blocks, one subgraph each. (default: ``20``)
        community_size (int, optional): the nodes per block. (default: ``50``)
        p_in (float, optional): the edge probability within a block. (default: ``0.08``)
        p_out (float, optional): the edge probability across blocks, at most ``p_in``.
            (default: ``0.001``)
        features (int, optional): the feature width. (default: ``128``)
        classes (int, optional): the number of node labels. (default: ``2``)
        labelled (str or int, optional): the training mask: ``all``, ``center`` or ``k``.
            (default: ``"all"``)
        seed (int, optional): the generator's seed. (default: ``0``)
    """
    _check(features, classes, 1.0)
    _check_labelled(labelled)
    require(communities >= 1 and community_size >= 2, "data.options.communities",
            f"need communities >= 1, community_size >= 2 (got {communities}, {community_size})")
    require(0 <= p_out <= p_in <= 1, "data.options.p_in", f"need 0 <= p_out <= p_in <= 1 (got {p_in}, {p_out})")
    rng = np.random.default_rng(seed)
    n = communities * community_size
    block = np.repeat(np.arange(communities), community_size)
    prob = np.where(block[:, None] == block[None, :], p_in, p_out)
    upper = np.triu(rng.random((n, n)) < prob, k=1)
    edge_index = to_undirected(torch.from_numpy(np.stack(np.nonzero(upper))).long(), num_nodes=n)
    x = torch.from_numpy(rng.standard_normal((n, features))).float()
    node_y = torch.from_numpy(rng.integers(classes, size=n)).long()
    node_sets = [list(range(c * community_size, (c + 1) * community_size)) for c in range(communities)]
    return _node_level("sbm_communities", x, edge_index, node_y, node_sets, labelled, classes,
                       {"communities": communities, "community_size": community_size, "p_in": p_in,
                        "p_out": p_out, "seed": seed})
