"""Ground truth behind each update, written by clients and read only by the evaluator.

Layout: ``<run>/audit/round_<r>/client_<k>.pt`` holding the exact graphs of the batch(es) the
client trained on. Attacks never import this module (a test enforces it); only
``fedgraph_sim.evaluation`` reads it: the evaluator after an attack has returned, and the threat
grants for the per-graph hints (node count, label, adjacency) the threat config grants explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch_geometric.data import Data

from fedgraph_sim.threat import AGGREGATE


#: Per-graph attributes kept when a graph has them: MoleculeNet's SMILES, a node-level subgraph's
#: node labels, labelled nodes and centre.
OPTIONAL = ("smiles", "node_y", "train_mask", "center")


@dataclass
class AuditRecord:
    """The graphs one client trained on in one round.

    Args:
        round (int): the server round.
        client_key (int): the client's key, or :data:`~fedgraph_sim.threat.AGGREGATE` for the union
            behind a securely aggregated update.
        graphs (list[Data]): the graphs in batch order.
        steps (int): the local steps the client took.
    """

    round: int
    client_key: int
    graphs: list[Data]  # in batch order; for FedAvg, the batches of all local steps in order (one
    # batch when every step trains the same one, train.sampling: repeat)
    steps: int


class AuditStore:
    """The ground-truth records of one run, under ``<run_dir>/audit``.

    Args:
        run_dir (str or Path): the run's directory.
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.root = Path(run_dir) / "audit"

    def _path(self, round: int, client_key: int) -> Path:
        return self.root / f"round_{round}" / f"client_{client_key}.pt"

    def write(self, record: AuditRecord) -> None:
        """Save ``record`` as ``round_<r>/client_<k>.pt``, replacing any earlier one atomically.

        Args:
            record (AuditRecord): the record; of each graph, ``x``, ``edge_index``, ``y``,
                ``num_nodes``, ``graph_id`` and the :data:`OPTIONAL` attributes it has are kept.
        """
        path = self._path(record.round, record.client_key)
        path.parent.mkdir(parents=True, exist_ok=True)
        graphs = [dict(x=g.x, edge_index=g.edge_index, y=g.y, num_nodes=g.num_nodes, graph_id=int(g.graph_id),
                       **{k: g[k] for k in OPTIONAL if k in g}) for g in record.graphs]
        tmp = path.with_suffix(".tmp")
        torch.save({"graphs": graphs, "steps": record.steps}, tmp)
        tmp.replace(path)  # atomic: a reader never sees half a record

    def read(self, round: int, client_key: int, members: tuple[int, ...] = ()) -> AuditRecord:
        """One client's record; for ``AGGREGATE`` (secure aggregation) the union in client order of
        the ``members``' records (all of the round's when none are named), the graphs behind the
        aggregate.

        Args:
            round (int): the server round.
            client_key (int): the client's key, or :data:`~fedgraph_sim.threat.AGGREGATE`.
            members (tuple[int, ...], optional): for ``AGGREGATE``, the keys of the clients in the
                aggregate; empty means every client recorded in the round. Ignored otherwise.
                (default: ``()``)

        Returns:
            The record; for ``AGGREGATE``, ``steps`` is the first member's, and a round with no
            member recorded gives no graphs and 0 steps (the union of nothing).
        """
        if client_key == AGGREGATE and members:
            paths = [self._path(round, k) for k in sorted(members)]
        elif client_key == AGGREGATE:
            paths = sorted((self.root / f"round_{round}").glob("client_*.pt"),
                           key=lambda p: int(p.stem.split("_")[1]))
        else:
            paths = [self._path(round, client_key)]
        blobs = [torch.load(p, weights_only=False) for p in paths]
        graphs = [Data(**g) for blob in blobs for g in blob["graphs"]]
        return AuditRecord(round, client_key, graphs, blobs[0]["steps"] if blobs else 0)
