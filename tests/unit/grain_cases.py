"""Shared cases for the GRAIN tests: small molecules with GRAIN's features, a victim model, and the
update a curious server would observe for one of them (computed as the client computes it)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch
from torch_geometric.utils import from_smiles, to_dense_adj

from clients.training import mean_gradient
from fedgraph_sim.data.grain_features import grain_molecules
from fedgraph_sim.models import GraphClassifier
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate

SMILES = ("CCO", "c1ccccc1", "c1ccncc1", "Cc1ccccc1", "CC(=O)Oc1ccccc1C(=O)O", "CCN(CC)CC", "OCC(O)CO",
          "Cc1ccc(cc1)S(=O)(=O)N", "C1CCNCC1", "CC(C)Cc1ccc(cc1)C(C)C(=O)O", "O=C(O)CCC(=O)O")
GCN = dict(conv="gcn", hidden=300, conv_bias=False, last_activation=False, readout="mlp",
           readout_hidden=[300, 64], readout_input="concat_input", readout_placement="per_node")
GAT = dict(conv="gat", hidden=300, heads=2, residual=True, activation="elu", last_activation=False,
           readout="mlp", readout_hidden=[300, 300], readout_placement="per_node")
# the models users train: 3 layers, ReLU after each, biases, a pool and an MLP head ([ext] pooled_readout)
POOLED = dict(layers=3, hidden=64, pool="sum", readout="mlp")
MODELS = {"gcn": GCN, "gat": GAT, "gin_sum": dict(POOLED, conv="gin"),
          "sage_mean": dict(POOLED, conv="sage", pool="mean"),
          "gcn_mean": dict(POOLED, conv="gcn", pool="mean", hidden=300)}


@lru_cache(maxsize=1)
def molecules():
    graphs = []
    for i, s in enumerate(SMILES):
        g = from_smiles(s)
        g.graph_id, g.y = i, torch.tensor([i % 2])
        graphs.append(g)
    kept, schema, _ = grain_molecules(graphs)
    return kept, schema


def molecule(smiles: str):
    graphs, schema = molecules()
    return next(g for g in graphs if g.smiles == smiles), schema


@lru_cache(maxsize=4)
def victim(kind: str = "gcn", seed: int = 0) -> GraphClassifier:
    torch.manual_seed(seed)
    return GraphClassifier(140, 2, **MODELS[kind])


def observed(smiles: str, kind: str = "gcn") -> tuple[ObservedUpdate, AttackerKnowledge]:
    """What the server sees when a client trains one FedSGD step (BCE loss) on ``smiles``."""
    g, schema = molecule(smiles)
    model = victim(kind)
    grads, _ = mean_gradient(model, [g], "bce")
    weights = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    update = ObservedUpdate(round=1, client_key=0, global_weights=weights,
                            returned={k: v.numpy() for k, v in grads.items()}, kind="gradient",
                            num_examples=1, metrics={}, lr=0.01, local_steps=1, batch_size=1)
    knowledge = AttackerKnowledge(model=MODELS[kind], num_features=140,
                                  num_classes=2, schema=schema, loss="bce")
    return update, knowledge


def dense_adj(g) -> torch.Tensor:
    return to_dense_adj(g.edge_index, max_num_nodes=g.num_nodes)[0]


def neighbours(g) -> list[list[int]]:
    adj = dense_adj(g)
    return [np.flatnonzero(adj[v].numpy()).tolist() for v in range(g.num_nodes)]


ATOMS = ("C", "N", "O", "S")


def plain_molecule(smiles: str):
    """``smiles`` as PyG's TU datasets give molecules: a one-hot atom type per node, no degree."""
    from fedgraph_sim.data.schema import single_block_schema

    g = from_smiles(smiles)
    numbers = {6: 0, 7: 1, 8: 2, 16: 3}
    g.x = torch.nn.functional.one_hot(torch.tensor([numbers[int(z)] for z in g.x[:, 0]]), len(ATOMS)).float()
    g.y = torch.tensor([1])
    return g, single_block_schema("atom", ATOMS)


def observed_plain(smiles: str, model: dict, seed: int = 0) -> tuple[ObservedUpdate, AttackerKnowledge]:
    """What the server sees when a client trains one FedSGD step (cross-entropy) of the model
    ``model`` on the plain ``smiles``."""
    g, schema = plain_molecule(smiles)
    torch.manual_seed(seed)
    net = GraphClassifier(len(ATOMS), 2, **model)
    grads, _ = mean_gradient(net, [g], "cross_entropy")
    weights = {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}
    update = ObservedUpdate(round=1, client_key=0, global_weights=weights,
                            returned={k: v.numpy() for k, v in grads.items()}, kind="gradient",
                            num_examples=1, metrics={}, lr=0.01, local_steps=1, batch_size=1)
    return update, AttackerKnowledge(model=model, num_features=len(ATOMS), num_classes=2, schema=schema)
