"""Node-order scenarios (``data.node_order``).

GNNs with pooling are permutation invariant, so the order in which a file lists a graph's nodes
is information an attacker should not get for free. TU files list bonded atoms at nearby indices;
a structure prior that only knows "neighbours have close indices" then scores high identity-order
AUC without looking at any gradient (the control behind GraphDLG's, Wei et al. 2026, structure
numbers).

- ``original``: the order of the source files.
- ``shuffled``: a seeded random permutation per graph (seed and ``graph_id``), applied to victim
  and auxiliary graphs alike; identical across runs with the same seed.
- ``canonical``: RDKit's canonical atom ranks (``Chem.CanonicalRankAtoms``), a well-defined order
  that depends only on the molecule; MoleculeNet graphs only (they carry SMILES).
"""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data

from fedgraph_sim.errors import ConfigError

NODE_ORDERS = ("original", "shuffled", "canonical")
NODE_ATTRIBUTES = ("node_y", "train_mask")


def permute(g: Data, perm: torch.Tensor) -> Data:
    """The same graph with node ``perm[i]`` of ``g`` becoming node ``i``: ``x``, ``edge_index``,
    the node-level ``node_y`` and ``train_mask`` and the ``center`` index follow.

    Args:
        g (Data): the graph.
        perm (torch.Tensor): a permutation of ``range(g.num_nodes)``, ``[n]`` (long).
    """
    inverse = torch.empty_like(perm)
    inverse[perm] = torch.arange(perm.numel())
    out = g.clone()
    out.x = g.x[perm]
    out.edge_index = inverse[g.edge_index]
    for key in NODE_ATTRIBUTES:  # a node-level subgraph's labels and centre move with its nodes
        if key in g:
            out[key] = g[key][perm]
    if "center" in g:
        out.center = int(inverse[int(g.center)])
    return out


def shuffle_permutation(num_nodes: int, seed: int, graph_id: int) -> torch.Tensor:
    """The ``shuffled`` order's permutation of one graph, ``[num_nodes]``, fixed by the seed and the
    graph's id.

    Args:
        num_nodes (int): the graph's node count.
        seed (int): the run's seed.
        graph_id (int): the graph's ``graph_id``.
    """
    return torch.from_numpy(np.random.default_rng([seed, 7919, graph_id]).permutation(num_nodes))


def canonical_permutation(g: Data) -> torch.Tensor:
    """The ``canonical`` order's permutation: nodes by RDKit's canonical atom rank.

    Args:
        g (Data): a molecule graph with ``smiles`` whose atoms are its nodes, in order (else
            :class:`ValueError`).
    """
    from rdkit import Chem

    mol = Chem.MolFromSmiles(g.smiles)
    if mol is None or mol.GetNumAtoms() != g.num_nodes:
        raise ValueError(f"graph {g.graph_id}: SMILES does not match its {g.num_nodes} nodes")
    ranks = list(Chem.CanonicalRankAtoms(mol, breakTies=True))
    return torch.tensor(np.argsort(ranks))


def reorder(graphs: list[Data], order: str, seed: int) -> list[Data]:
    """``graphs`` with their nodes in ``order`` (new graphs; ``original`` returns the list itself).

    Args:
        graphs (list[Data]): the graphs, each with ``graph_id``.
        order (str): one of :data:`NODE_ORDERS`; ``canonical`` needs SMILES on every graph.
        seed (int): the run's seed (for ``shuffled``).

    Raises:
        ConfigError: for an unknown order, or ``canonical`` without SMILES.
    """
    if order == "original":
        return graphs
    if order == "shuffled":
        return [permute(g, shuffle_permutation(g.num_nodes, seed, int(g.graph_id))) for g in graphs]
    if order == "canonical":
        if not all(hasattr(g, "smiles") for g in graphs):
            raise ConfigError("data.node_order: 'canonical' needs SMILES (MoleculeNet datasets); "
                              "use original or shuffled")
        return [permute(g, canonical_permutation(g)) for g in graphs]
    raise ConfigError(f"data.node_order: unknown order '{order}'; valid: {', '.join(NODE_ORDERS)}")
