"""The first reconstructions of each attack stored beside the truth, for the report's drawings.

``<run>/drawings/<attack>_<k>.json`` holds the true node types and edges (and the SMILES of a
molecule), the reconstruction's node types and edge scores, and its scores. Evaluator output like
the audit, never read by attacks.
"""

from __future__ import annotations

import json
from pathlib import Path

from torch_geometric.data import Data

from fedgraph_sim.data.schema import FeatureSchema
from fedgraph_sim.evaluation.rows import ResultRow
from fedgraph_sim.threat import Reconstruction


class DrawingStore:
    def __init__(self, run_dir: str | Path, per_attack: int, schema: FeatureSchema) -> None:
        self.folder = Path(run_dir) / "drawings"
        self.per_attack, self.schema = per_attack, schema
        self.kept: dict[str, int] = {}

    def keep(self, row: ResultRow, graph: Data, rec: Reconstruction) -> None:
        """Store ``rec`` beside ``graph`` unless ``row.attack`` has its ``per_attack`` already."""
        kept = self.kept.get(row.attack, 0)
        if kept >= self.per_attack:
            return
        self.kept[row.attack] = kept + 1
        schema = self.schema
        block = next(b for b in schema.blocks if b.name == schema.type_block)
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / f"{row.attack}_{kept}.json").write_text(json.dumps({
            "attack": row.attack, "defense": row.defense, "dataset": row.dataset,
            "round": row.round, "client": row.client, "graph_id": row.graph_id,
            "type_block": block.name, "type_values": [str(v) for v in block.values],
            "true_types": schema.node_types(graph.x).tolist(), "true_edge_index": graph.edge_index.tolist(),
            "smiles": getattr(graph, "smiles", None),
            "rec_types": schema.node_types(rec.x.float()).tolist(),
            "rec_adj": rec.adj.detach().double().clamp(0, 1).tolist(),
            "scores": {k: row.scores.get(f"identity_{k}") for k in ("node_type_accuracy", "adj_auc", "adj_ap")},
        }))
