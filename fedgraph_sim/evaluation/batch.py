"""Which reconstruction of a batch is which graph.

A batch's gradient is the mean over its graphs, so an attack's i-th reconstruction has no reason
to be the i-th graph (GraphDLG's one decoded graph stands for all of them; optimisation attacks'
dummies can settle on any permutation). Before scoring, reconstructions are assigned to graphs by
the Hungarian algorithm on an order-free distance: the node-count difference, the L1 distance of
the node-type histograms and the mean difference of the sorted degree sequences, each scaled to
[0, 1].
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment
from torch_geometric.data import Data

from fedgraph_sim.threat import Reconstruction


def _profile(types: np.ndarray, degrees: np.ndarray, width: int) -> tuple[int, np.ndarray, np.ndarray]:
    histogram = np.bincount(types, minlength=width)[:width] / max(len(types), 1)
    return len(types), histogram, np.sort(degrees)


def _distance(a, b) -> float:
    (na, ha, da), (nb, hb, db) = a, b
    n = max(na, nb, 1)
    padded = np.zeros((2, n))
    padded[0, n - len(da):], padded[1, n - len(db):] = da, db
    return abs(na - nb) / n + 0.5 * float(np.abs(ha - hb).sum()) + float(np.abs(padded[0] - padded[1]).mean()) / n


def batch_assignment(recs: list[Reconstruction], graphs: list[Data], schema) -> list[int | None]:
    """For each graph, the index of the reconstruction scored against it; None for the graphs left
    without one when the attack returned fewer graphs than the batch holds (a member it could not
    rebuild). A batch of one graph, or no reconstructions, gives the identity ``[0, 1, ...]``.

    Args:
        recs (list[Reconstruction]): the attack's reconstructions (edge scores thresholded at 0.5).
        graphs (list[Data]): the batch's true graphs, in batch order.
        schema (FeatureSchema): decodes the node types of both.
    """
    if len(graphs) < 2 or not recs:
        return list(range(len(graphs)))
    width = max(int(schema.node_types(g.x).max()) + 1 for g in graphs) + 1
    truth = [_profile(schema.node_types(g.x).numpy(), torch.bincount(g.edge_index[0], minlength=g.num_nodes).numpy(),
                      width) for g in graphs]
    guesses = []
    for rec in recs:
        adj = (rec.adj.detach() >= 0.5).float()
        types = schema.node_types(rec.x.detach().float()).numpy().clip(0, width - 1)
        guesses.append(_profile(types, adj.sum(1).numpy(), width))
    cost = np.array([[_distance(guess, true) for true in truth] for guess in guesses])
    rows, cols = linear_sum_assignment(cost)
    order: list[int | None] = [None] * len(graphs)
    for r, c in zip(rows, cols):
        order[c] = int(r)
    return order
