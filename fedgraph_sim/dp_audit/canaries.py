"""Canaries for the one-run DP audit (Steinke, Nasr and Jagielski, "Privacy Auditing with One (1)
Training Run", NeurIPS 2023): graphs made for the purpose, each given to one client and included in
its data independently with probability 1/2.

Two kinds (``canaries.kind``):

- ``graph``: a random tree over the dataset's nodes, each node's value in every feature block drawn
  independently from that block's values in the dataset (so its rows are unusual combinations, and
  its degree block, if any, is recomputed from the tree), with a uniform label. Every canary is
  distinct from every dataset graph and from the others (Weisfeiler-Lehman hash over the decoded
  features). What a curious server can tell about such a graph is what it can tell about a real one.
- ``gradient``: the same graphs, whose per-graph gradient the client replaces by a Dirac vector
  :math:`\\lVert d\\rVert \\, e_j` on a weight ``j`` of its own (``dirac``: the index into the
  flattened parameters, the largest weight tensor's entries). This is Steinke et al.'s white-box
  canary: no real graph's gradient concentrates there, so it audits the defense's clipping, noise
  and accountant, not how distinguishable graphs are.

- ``client`` (:func:`client_directions`): canary *clients*, whose update is a fixed random direction,
  for client-level DP (Andrew et al., ICLR 2024); they hold no graphs.

What a canary is (its graph, its client, its weight, its direction) is public: the auditor made it. Whether it was
included is the secret bit, and only :func:`included` says it; the server's scoring never calls it.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from fedgraph_sim.data.dataset import GraphDataset
from fedgraph_sim.errors import ConfigError

#: Streams of ``canaries.seed``: the canaries themselves, and which are included.
_MAKE, _INCLUDE = 0, 1


@dataclass(frozen=True)
class Canaries:
    """The public part of an audit's canaries: ``graphs[i]`` goes to client ``clients[i]``; for
    gradient canaries ``graphs[i].dirac`` is its weight in the flattened parameters."""

    kind: str
    graphs: tuple[Data, ...]
    clients: tuple[int, ...]
    dirac_norm: float = 1.0

    def of_client(self, client: int) -> list[int]:
        """The indices (into ``graphs``) of the canaries that go to ``client``.

        Args:
            client (int): the client's partition id.
        """
        return [i for i, c in enumerate(self.clients) if c == client]


def graph_key(g: Data, dataset: GraphDataset) -> str:
    """A Weisfeiler-Lehman hash of ``g`` over its decoded node features (3 iterations).

    Args:
        g (Data): a graph in the dataset's encoding.
        dataset (GraphDataset): the dataset whose schema decodes ``g.x``.
    """
    nxg = nx.Graph()
    values = dataset.schema.decode(g.x).tolist()
    nxg.add_nodes_from((v, {"f": ",".join(map(str, row))}) for v, row in enumerate(values))
    nxg.add_edges_from(g.edge_index.t().tolist())
    return nx.weisfeiler_lehman_graph_hash(nxg, node_attr="f", iterations=3)


def _random_tree(n: int, rng: np.random.Generator, max_degree: int | None = None) -> torch.Tensor:
    """A uniform random recursive tree, each node attached to an earlier one with room left
    (degree below ``max_degree``, at least 2, so a path always fits)."""
    cap = max(2, max_degree) if max_degree is not None else n
    degree, parents = [0] * n, []
    for i in range(1, n):
        room = [j for j in range(i) if degree[j] < cap]
        parent = int(room[rng.integers(0, len(room))])
        degree[parent] += 1
        degree[i] += 1
        parents.append(parent)
    return to_undirected(torch.tensor([list(range(1, n)), parents], dtype=torch.long), num_nodes=n)


def _canary(dataset: GraphDataset, values: torch.Tensor, sizes: list[int], rng: np.random.Generator) -> Data:
    schema = dataset.schema
    n = int(rng.choice(sizes))
    top = max(int(v) for v in schema.block(schema.degree_block).values) if schema.degree_block else None
    edge_index = _random_tree(n, rng, top)
    categorical = torch.stack([values[rng.integers(0, len(values), n), j] for j in range(values.size(1))], dim=1)
    if schema.degree_block is not None:  # the degree block says the tree's degrees
        column = [b.name for b in schema.blocks].index(schema.degree_block)
        known = torch.tensor([int(v) for v in schema.blocks[column].values])
        degree = torch.bincount(edge_index[0], minlength=n)
        categorical[:, column] = torch.searchsorted(known, degree)
    y = torch.tensor([int(rng.integers(max(dataset.num_classes, 1)))])
    g = Data(x=schema.encode(categorical).to(dataset.graphs[0].x.dtype), edge_index=edge_index, y=y, num_nodes=n)
    if "smiles" in dataset.graphs[0]:  # a batch collates every graph's attributes: a molecule set's SMILES
        g.smiles = ""  # not a molecule
    return g


def make_canaries(dataset: GraphDataset, count: int, num_clients: int, seed: int, kind: str = "graph",
                  num_weights: int = 0, weight_offset: int = 0, dirac_norm: float = 1.0) -> Canaries:
    """``count`` canaries for ``dataset`` spread round-robin over ``num_clients`` clients, with
    ``graph_id`` -1, -2, ... For ``kind: gradient``, distinct weights among ``num_weights`` flattened
    parameters from ``weight_offset`` on (the model's largest weight tensor).

    Args:
        dataset (GraphDataset): a graph-classification set with one-hot features, whose node counts
            and per-block values the canaries draw from.
        count (int): the number of canaries.
        num_clients (int): the clients; canary ``i`` goes to client ``i % num_clients``.
        seed (int): ``canaries.seed`` (the canaries' own stream of it).
        kind (str, optional): ``graph`` or ``gradient`` (``client`` canaries hold no graphs:
            :func:`client_directions`). (default: ``"graph"``)
        num_weights (int, optional): for ``gradient``: the size of the tensor the Dirac weights are
            drawn from, at least ``count``. (default: ``0``)
        weight_offset (int, optional): for ``gradient``: that tensor's offset in the flattened
            parameters. (default: ``0``)
        dirac_norm (float, optional): for ``gradient``: the Dirac gradients' L2 norm.
            (default: ``1.0``)

    Raises:
        ConfigError: for a dataset canaries cannot be drawn over, too few weights, or 100 failed
            draws of a distinct canary.
    """
    if dataset.task != "graph" or dataset.schema.continuous:
        raise ConfigError(f"canaries: {dataset.name} is not a graph-classification set with one-hot features, "
                          "which canary graphs are drawn over")
    if kind == "gradient" and count > num_weights:
        raise ConfigError(f"canaries.count: {count} gradient canaries need as many weights of the model's largest "
                          f"weight tensor, which has {num_weights}; lower the count or widen the model")
    rng = np.random.default_rng([seed, _MAKE])
    values = torch.cat([dataset.schema.decode(g.x) for g in dataset.graphs])
    sizes = [g.num_nodes for g in dataset.graphs]
    seen = {graph_key(g, dataset) for g in dataset.graphs}
    weights = rng.choice(num_weights, size=count, replace=False) + weight_offset if kind == "gradient" else None
    graphs = []
    for i in range(count):
        for _attempt in range(100):
            g = _canary(dataset, values, sizes, rng)
            if (key := graph_key(g, dataset)) not in seen:
                break
        else:
            raise ConfigError(f"canaries.count: could not draw {count} canaries distinct from {dataset.name}'s "
                              f"graphs and each other (stopped at {i})")
        seen.add(key)
        g.graph_id = -(i + 1)
        if weights is not None:
            g.dirac = int(weights[i])
        graphs.append(g)
    return Canaries(kind, tuple(graphs), tuple(i % num_clients for i in range(count)), dirac_norm)


def included(count: int, seed: int) -> np.ndarray:
    """Which canaries the clients hold: independent fair coins (the audit's secret).

    Args:
        count (int): the number of canaries.
        seed (int): ``canaries.seed`` (the inclusion stream of it).

    Returns:
        ``[count]`` bool.
    """
    return np.random.default_rng([seed, _INCLUDE]).random(count) < 0.5


def largest_weight(named_shapes: list[tuple[str, tuple[int, ...]]]) -> tuple[int, int]:
    """``(offset, size)`` of the largest parameter tensor in the flattened parameters (named in
    ``model.named_parameters()`` order), where gradient canaries put their Dirac weights.

    Args:
        named_shapes (list[tuple[str, tuple[int, ...]]]): ``(name, shape)`` of each parameter, in
            ``named_parameters()`` order. The first of equally large tensors wins.
    """
    sizes = [int(np.prod(shape)) for _, shape in named_shapes]
    index = int(np.argmax(sizes))
    return int(sum(sizes[:index])), sizes[index]


def dirac_gradients(graphs, named_shapes: list[tuple[str, tuple[int, ...]]]) -> dict[str, torch.Tensor]:
    """The gradient canaries' own gradients, ``{name: [len(graphs), *shape]}``: each a Dirac of
    L2 norm ``dirac_norm`` on its weight ``dirac`` of the flattened parameters.

    Args:
        graphs (Sequence[Data]): gradient canaries (each with ``dirac`` and ``dirac_norm``).
        named_shapes (list[tuple[str, tuple[int, ...]]]): ``(name, shape)`` of each parameter, in
            ``named_parameters()`` order.
    """
    total = sum(int(np.prod(shape)) for _, shape in named_shapes)
    flat = torch.zeros(len(graphs), total)
    for row, g in enumerate(graphs):
        flat[row, int(g.dirac)] = float(g.dirac_norm)
    out, start = {}, 0
    for name, shape in named_shapes:
        size = int(np.prod(shape))
        out[name] = flat[:, start:start + size].reshape(len(graphs), *shape)
        start += size
    return out


def is_gradient_canary(g: Data) -> bool:
    """Whether ``g`` is a gradient canary (has a ``dirac`` weight; other graphs of a gradient
    audit carry ``dirac`` -1).

    Args:
        g (Data): a graph.
    """
    return "dirac" in g and int(g.dirac) >= 0


def client_directions(count: int, size: int, seed: int) -> np.ndarray:
    """Canary clients' updates (Andrew et al., "One-shot Empirical Privacy Estimation for Federated
    Learning", ICLR 2024): ``count`` random unit directions in the ``size`` flattened parameters,
    ``[count, size]``; in many dimensions nearly orthogonal to each other and to any one update.

    Args:
        count (int): the number of canary clients.
        size (int): the number of flattened parameters.
        seed (int): ``canaries.seed`` (the canaries' own stream of it).
    """
    rows = np.random.default_rng([seed, _MAKE]).standard_normal((count, size))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


#: Defenses whose epsilon is claimed against the server, and those whose is for the released model.
AGAINST_THE_SERVER = {"dp_sgd", "dp_gradients", "flwr_local_dp"}
RELEASED_MODEL = {"flwr_central_dp", "flwr_server_dp", "flwr_adaptive_dp"}


def defense_names(defenses: list) -> set[str]:
    """The names in a ``defenses`` stack (each a mapping with ``name``, or a bare name).

    Args:
        defenses (list): the ``defenses`` config entries; None counts as empty.
    """
    return {d.get("name") if isinstance(d, dict) else d for d in defenses or []}


def canary_kind(tree: dict) -> str | None:
    """Which canaries check the claim of the config ``tree``'s defenses (None: it makes none):
    ``client`` for a claim about the released model, ``gradient`` for one against the server.

    Args:
        tree (dict): a config as a plain tree.
    """
    names = defense_names(tree.get("defenses"))
    if names & RELEASED_MODEL:
        return "client"
    return "gradient" if names & AGAINST_THE_SERVER else None
