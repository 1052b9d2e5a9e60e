"""The first reconstructions of each attack stored beside the truth, for the report's drawings.

``<run>/drawings/<attack>_<k>.json`` holds the true node types and edges (and the SMILES of a
molecule), the reconstruction's node types and edge scores, and its scores; the attack's first
exact reconstruction (a feature-preserving isomorphism to the truth) is also kept as
``<attack>_exact.json``, whichever graph it was. Evaluator output like the audit, never read by
attacks.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_dense_adj

from fedgraph_sim.data.schema import FeatureSchema
from fedgraph_sim.rows.record import ResultRow
from fedgraph_sim.metrics.gsm import gsm_with_order
from fedgraph_sim.threat import Reconstruction


def _in_true_order(rec: Reconstruction, graph: Data, schema: FeatureSchema) -> Reconstruction:
    """An exact reconstruction renumbered by its isomorphism onto the truth: its own node order is
    arbitrary (GNNs with pooling cannot see it), and drawn at the true nodes' positions it would
    look scrambled."""
    adj = to_dense_adj(graph.edge_index, max_num_nodes=graph.num_nodes)[0]
    _, order = gsm_with_order(rec.x, rec.adj, graph.x, adj, schema)
    index = torch.as_tensor(order, dtype=torch.long)
    return Reconstruction(x=rec.x[index], adj=rec.adj[index][:, index], num_nodes=graph.num_nodes,
                          label=rec.label, info=rec.info)


class DrawingStore:
    """The drawings of one run, under ``<run_dir>/drawings``.

    Args:
        run_dir (str or Path): the run's directory.
        per_attack (int): reconstructions kept per attack (``output.drawings``); 0 keeps none,
            not even the exact one.
        schema (FeatureSchema): decodes node types.
    """

    def __init__(self, run_dir: str | Path, per_attack: int, schema: FeatureSchema) -> None:
        self.folder = Path(run_dir) / "drawings"
        self.per_attack, self.schema = per_attack, schema
        self.kept: dict[str, int] = {}

    def keep(self, row: ResultRow, graph: Data, rec: Reconstruction) -> None:
        """Store ``rec`` beside ``graph`` unless ``row.attack`` has its ``per_attack`` already, and
        as the attack's exact one if it is its first exact reconstruction.

        Args:
            row (ResultRow): the scored row (its attack, ids and scores go into the file).
            graph (Data): the true graph.
            rec (Reconstruction): the attack's reconstruction of it.
        """
        kept = self.kept.get(row.attack, 0)
        if kept < self.per_attack:
            self.kept[row.attack] = kept + 1
            self._write(f"{row.attack}_{kept}", row, graph, rec)
        exact_key = f"{row.attack}_exact"
        if self.per_attack and row.scores.get("gsm_full_iso") == 1.0 and exact_key not in self.kept:
            self.kept[exact_key] = 1
            self._write(exact_key, row, graph, _in_true_order(rec, graph, self.schema), alignment="gsm")

    def _write(self, stem: str, row: ResultRow, graph: Data, rec: Reconstruction,
               alignment: str = "identity") -> None:
        schema = self.schema
        block = next(b for b in schema.blocks if b.name == schema.type_block)
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / f"{stem}.json").write_text(json.dumps({
            "attack": row.attack, "defense": row.defense, "dataset": row.dataset,
            "round": row.round, "client": row.client, "graph_id": row.graph_id,
            "type_block": block.name, "type_values": [str(v) for v in block.names or block.values],
            "true_types": schema.node_types(graph.x).tolist(), "true_edge_index": graph.edge_index.tolist(),
            "smiles": getattr(graph, "smiles", None),
            "rec_types": schema.node_types(rec.x.float()).tolist(),
            "rec_adj": rec.adj.detach().double().clamp(0, 1).tolist(),
            "scores": {k: row.scores.get(f"{alignment}_{k}") for k in ("node_type_accuracy", "adj_auc", "adj_ap")},
            "alignment": alignment, "exact": row.scores.get("gsm_full_iso") == 1.0,
        }))
