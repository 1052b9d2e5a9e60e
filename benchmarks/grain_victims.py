"""The victims the GRAIN benchmarks share: the first molecules of the seed-42 shuffle of Tox21
(GRAIN's Table 2 case: 8 RDKit atom properties, task SR-p53) under GRAIN's GCN at its initial
weights; ``synthetic`` with a degree block without FEDGRAPH_DATA_ROOT."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fedgraph_sim.config import load_config
from fedgraph_sim.data import available_datasets
from fedgraph_sim.models import GraphClassifier, build_model
from fedgraph_sim.scenario import attacker_knowledge, build_scenario


@dataclass
class Victims:
    dataset: str
    schema: object
    knowledge: object
    model: GraphClassifier
    graphs: list


def grain_victims(graphs: int) -> Victims:
    dataset = "Tox21" if "Tox21" in available_datasets() else "synthetic"
    data = (["data.features=grain", "data.task=SR-p53"] if dataset == "Tox21" else
            ["data.degree_feature=true", "data.options={num_graphs: 200}"])
    config = load_config(None, [
        f"data.dataset={dataset}", *data, f"data.subset={graphs}", "data.subset_seed=42",
        "federation.num_clients=1", "partition.min_partition_size=1", "train.loss=bce",
        "model={conv: gcn, hidden: 300, conv_bias: false, last_activation: false, readout: mlp, "
        "readout_hidden: [300, 64], readout_input: concat_input, readout_placement: per_node}"])
    scenario = build_scenario(config)
    ds = scenario.dataset
    torch.manual_seed(config.seed)
    model = build_model(config.model, ds.num_features, ds.num_classes)
    return Victims(dataset, ds.schema, attacker_knowledge(config, scenario), model,
                   [ds.graphs[int(i)] for i in scenario.clients[0]])
