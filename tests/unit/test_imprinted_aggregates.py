"""``imprinted_aggregates``: a pooled GCN's first layer as a table of every node's aggregated
input, what it refuses to craft, and the peeling that reads it (its stars:
``test_aggregate_reading.py``; GRAIN's rebuild: ``test_grain_imprinted_stars.py``)."""

import numpy as np
import pytest
import torch

from clients.training import mean_gradient
from fedgraph_sim.crafting import crafting
from fedgraph_sim.crafting.aggregate_reading import read_star
from fedgraph_sim.crafting.imprint_reading import read_imprints
from fedgraph_sim.crafting.imprinted_aggregates import aggregated_rows
from fedgraph_sim.models import build_model
from fedgraph_sim.threat import ObservedUpdate
from tests.unit.grain_cases import molecule
from tests.unit.test_imprinted_nodes import AUX

#: PyG's habit: three GCN layers with biases and ReLU after each, mean pooling, an MLP head.
POOLED_GCN = dict(conv="gcn", layers=3, hidden=150, pool="mean", readout="mlp")
VICTIMS = ("c1ccncc1", "OCC(O)CO", "C1CCNCC1")


def pooled_round(victims=VICTIMS, labels=None):
    """A crafted round of the pooled GCN: the server's crafting, and the float32 client's mean BCE
    gradient on ``victims`` (labels 0 unless given)."""
    graphs = [molecule(s)[0].clone() for s in victims]
    for g, y in zip(graphs, labels or [0] * len(graphs)):
        g.y = torch.tensor([y])
    schema = molecule(victims[0])[1]
    torch.manual_seed(0)
    model = build_model(POOLED_GCN, graphs[0].x.size(1), 2)
    honest = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    crafted, parts = crafting("imprinted_aggregates", [molecule(s)[0] for s in AUX], "bce").craft(
        honest, POOLED_GCN, 1, seed=3)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in parts[0].items()})
    grads, _ = mean_gradient(model, graphs, "bce")
    update = ObservedUpdate(round=1, client_key=0, global_weights=crafted.base,
                            returned={k: v.double().numpy() for k, v in grads.items()}, kind="gradient",
                            num_examples=len(graphs), metrics={}, lr=0.01, local_steps=1,
                            batch_size=len(graphs), crafted=crafted.for_clients({0: 0}))
    return update, schema, graphs, parts[0]


@pytest.mark.parametrize("change, reason", [
    (dict(readout_placement="per_node"), "pooled readout"),
    (dict(pool="max"), "sum or mean pooling"),
    (dict(conv="gin"), "GCN layers with biases"),
    (dict(conv_bias=False), "GCN layers with biases"),
    (dict(layers=1), "at least two GCN layers"),
    (dict(hidden=4), "at least 6 units"),
])
def test_it_refuses_what_it_cannot_craft_and_says_why(change, reason):
    assert crafting("imprinted_aggregates").problem(dict(POOLED_GCN), 1) is None
    assert reason in crafting("imprinted_aggregates").problem(dict(POOLED_GCN, **change), 1)


def test_every_layer_after_the_table_keeps_one_live_unit():
    """The crafted model: the table fills the first layer; each later layer and the head's hidden
    layer has one live unit (the others are zero and dead), so every table unit of a node receives
    the same loss derivative."""
    _, _, graphs, sent = pooled_round()
    assert np.count_nonzero(sent["convs.0.lin.weight"].any(axis=1)) == 150
    for name in ("convs.1.lin.weight", "convs.2.lin.weight", "classifier.0.weight"):
        assert np.count_nonzero(sent[name].any(axis=1)) == 1, name
    assert np.count_nonzero(sent["classifier.2.weight"]) == 1  # the first logit alone


def test_peeling_gives_every_distinct_aggregated_row_exactly_with_the_labels_sign():
    update, schema, graphs, _ = pooled_round(labels=[0, 1, 0])
    imprints = read_imprints(update, None, tol=1e-2, valid=lambda z: read_star(z.numpy(), schema) is not None)
    truth = torch.cat([aggregated_rows(g.x, g.edge_index) for g in graphs])
    owner = torch.cat([torch.full((g.num_nodes,), k) for k, g in enumerate(graphs)])
    distinct = torch.unique(torch.round(truth, decimals=6), dim=0)
    assert len(imprints.rows) == len(distinct) and imprints.undecoded == 0
    for row, weight in zip(imprints.rows, imprints.weights):
        gap = (truth - row).abs().amax(1) / truth.abs().max()
        assert float(gap.min()) < 1e-5
        # under bce a row's weight has sigma(logit) - [y = 0] of its graph's first logit: label 0 negative
        assert (float(weight) < 0) == bool(graphs[int(owner[gap.argmin()])].y == 0)


def test_aggregated_rows_are_the_first_gcn_layers_input():
    g = molecule("CCO")[0]
    conv = build_model(POOLED_GCN, g.x.size(1), 2).convs[0].double()
    with torch.no_grad():
        conv.lin.weight.copy_(torch.eye(150, g.x.size(1), dtype=torch.float64))
        conv.bias.zero_()
        out = conv(g.x.double(), g.edge_index)[:, :g.x.size(1)]
    assert torch.allclose(aggregated_rows(g.x, g.edge_index)[:, :60], out[:, :60])
