import pytest
import torch

from clients.training import loss_on
from fedgraph_sim.config import load_config
from fedgraph_sim.data import load_dataset
from fedgraph_sim.data.node_labels import with_random_node_labels
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.models import GraphClassifier
from fedgraph_sim.scenario import build_scenario


def test_every_node_gets_a_seeded_label_that_does_not_depend_on_the_other_graphs():
    data = load_dataset("synthetic", num_graphs=30)
    labelled = with_random_node_labels(data, 3, seed=5)
    assert labelled.task == "node" and labelled.num_classes == 3 and labelled.meta["node_labels"] == 3
    g = labelled.graphs[7]
    assert g.node_y.shape == (g.num_nodes,) and bool(g.train_mask.all()) and "center" not in g
    assert set(torch.cat([h.node_y for h in labelled.graphs]).tolist()) == {0, 1, 2}
    alone = with_random_node_labels(data.subset([7]), 3, seed=5).graphs[0]
    assert torch.equal(alone.node_y, g.node_y)
    assert not torch.equal(with_random_node_labels(data, 3, seed=6).graphs[7].node_y, g.node_y)
    assert torch.equal(labelled.graphs[7].y, data.graphs[7].y)  # the graph's label stays, for the strata


def test_node_labels_flow_from_the_config_move_with_shuffled_nodes_and_train_a_node_model():
    base = ["data.dataset=synthetic", "data.node_labels=2", "model.task=node", "model.readout=mlp",
            "model.readout_placement=per_node", "model.readout_input=concat_input"]
    plain, shuffled = (build_scenario(load_config(None, base + extra)).dataset
                       for extra in ([], ["data.node_order=shuffled"]))
    g, h = plain.graphs[0], shuffled.graphs[0]
    assert sorted(g.node_y.tolist()) == sorted(h.node_y.tolist()) and plain.task == "node"
    model = GraphClassifier(plain.num_features, 2, readout="mlp", readout_placement="per_node",
                            readout_input="concat_input", task="node")
    assert loss_on(model, plain.graphs[:3]).requires_grad


def test_bad_node_label_settings_say_which_key_and_why():
    with pytest.raises(ConfigError, match="data.node_labels: .*needs model.task: node"):
        load_config(None, ["data.dataset=synthetic", "data.node_labels=2"])
    with pytest.raises(ConfigError, match="threat.node_labels: .*needs model.task: node"):
        load_config(None, ["data.dataset=synthetic", "threat.node_labels=true"])
    with pytest.raises(ConfigError, match="random node labels go on graph classification sets"):
        with_random_node_labels(load_dataset("random_graph_balls"), 2, seed=0)
