"""``imprinted_nodes``: the per-node readout's first layer as a table of the batch's nodes, what it
refuses to craft, and the epoch table that outlasts a FedAvg epoch (its reading:
``test_imprint_reading.py``)."""

import numpy as np
import pytest
import torch

from clients.training import fedavg_weights, mean_gradient
from fedgraph_sim.crafting import crafting
from fedgraph_sim.crafting.imprint_reading import read_imprints
from fedgraph_sim.crafting.imprinted_nodes import ImprintedNodes, crafted_model, imprint_table, readout_rows
from fedgraph_sim.models import build_model
from fedgraph_sim.threat import ObservedUpdate
from tests.unit.grain_cases import molecule

GRAIN_GCN = dict(conv="gcn", hidden=30, conv_bias=False, last_activation=False, readout="mlp",
                 readout_hidden=[60, 8], readout_input="concat_input", readout_placement="per_node")
AUX = ("CCO", "c1ccccc1", "Cc1ccccc1", "CC(=O)Oc1ccccc1C(=O)O", "CCN(CC)CC", "Cc1ccc(cc1)S(=O)(=O)N",
       "CC(C)Cc1ccc(cc1)C(C)C(=O)O", "O=C(O)CCC(=O)O")  # the server's auxiliary molecules
VICTIMS = ("c1ccncc1", "OCC(O)CO", "C1CCNCC1")


def _round(loss: str = "bce"):
    graphs = [molecule(s)[0] for s in VICTIMS]
    schema = molecule(VICTIMS[0])[1]
    torch.manual_seed(0)
    model = build_model(GRAIN_GCN, graphs[0].x.size(1), 2)
    honest = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    craft = ImprintedNodes([molecule(s)[0] for s in AUX], loss=loss)
    crafted, parts = craft.craft(honest, GRAIN_GCN, 1, seed=3)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in parts[0].items()})
    grads, _ = mean_gradient(model, graphs, loss)
    update = ObservedUpdate(round=1, client_key=0, global_weights=crafted.base,
                            returned={k: v.double().numpy() for k, v in grads.items()}, kind="gradient",
                            num_examples=3, metrics={}, lr=0.01, local_steps=1, batch_size=3,
                            crafted=crafted.for_clients({0: 0}))
    truth = readout_rows(crafted_model(GRAIN_GCN, parts[0]), graphs)
    owner = np.concatenate([[k] * g.num_nodes for k, g in enumerate(graphs)])
    return update, schema, truth, owner, parts[0]


def _nearest(truth: np.ndarray, row: np.ndarray) -> tuple[int, float]:
    gap = np.abs(truth - row).max(1) / np.abs(truth).max(1)
    return int(gap.argmin()), float(gap.min())


def test_no_threshold_falls_between_one_row_computed_twice():
    # four rows, each seen in two graphs whose float64 sums differ in the last bits: a threshold
    # placed in such a gap would sit on the row, and a float32 client's node would fall either side
    rows = np.array([0.25, 1.0, 2.0, 3.0])
    stats = np.concatenate([np.repeat(rows, 5), np.repeat(rows + 1e-13, 5)])[:, None]
    weight, bias = imprint_table(stats, np.ones((1, 1)), units=8, bins=8)
    cut = -bias[1:] / weight[1:, 0]  # each unit's threshold past the first (below every value)
    assert np.abs(cut[:, None] - rows[None, :]).min() > 0.3
    assert np.allclose(cut[:3], [0.625, 1.5, 2.5])  # the three gaps, then the rest above every value
    assert (cut[3:] > 3.0).all()


def test_one_local_sgd_step_leaves_the_summing_unit_dead():
    """The limit its docstring states: the summing unit's weights are small and their gradient is
    the units' activations, so one SGD step at lr 0.01 moves them many times their norm, and the
    unit then outputs zero on every node: a FedAvg epoch's later steps reach no table unit."""
    graphs = [molecule(s)[0].clone() for s in VICTIMS]  # cached: their features become float64 below
    torch.manual_seed(0)
    model = build_model(GRAIN_GCN, graphs[0].x.size(1), 2).double()
    honest = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    _, parts = ImprintedNodes([molecule(s)[0] for s in AUX], loss="bce").craft(honest, GRAIN_GCN, 1, seed=3)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in parts[0].items()})
    for g in graphs:
        g.x = g.x.double()

    def summing_unit(net):
        rows = torch.cat([net._readout_rows(g.x, net.node_embeddings(g.x, g.edge_index)) for g in graphs])
        return net.classifier[:3](rows)[:, 0]

    with torch.no_grad():
        assert bool((summing_unit(model) > 0).all())  # the crafted unit is live on every node
    sent = parts[0]["classifier.2.weight"][0]
    weights, _ = fedavg_weights(model, [graphs[:2]], 0.01, loss="bce")
    moved = np.linalg.norm(weights["classifier.2.weight"][0].numpy() - sent) / np.linalg.norm(sent)
    assert moved > 10
    with torch.no_grad():
        assert bool((summing_unit(model) <= 0).all())
    grads, _ = mean_gradient(model, graphs[2:], "bce")
    assert float(grads["classifier.0.weight"].abs().max()) == 0.0  # the next step reaches no table unit


@pytest.mark.parametrize("change, word", [({"readout_placement": "after_pool"}, "per-node"),
                                          ({"readout": "linear"}, "per-node"), ({"pool": "max"}, "summed"),
                                          ({"readout_hidden": [4, 8]}, "at least 6")])
def test_what_it_cannot_craft_says_why(change, word):
    assert ImprintedNodes().problem(GRAIN_GCN, 1) is None
    assert word in ImprintedNodes().problem(dict(GRAIN_GCN, **change), 1)


def test_crafting_needs_auxiliary_graphs():
    model = build_model(GRAIN_GCN, 10, 2)
    with pytest.raises(ValueError, match="auxiliary graphs"):
        ImprintedNodes().craft({k: v.numpy() for k, v in model.state_dict().items()}, GRAIN_GCN, 1, seed=0)


def test_a_config_that_withholds_the_auxiliary_graphs_or_pools_first_says_why():
    from fedgraph_sim.config import load_config
    from fedgraph_sim.errors import ConfigError

    crafted = ["threat.server=malicious", "threat.crafting=imprinted_nodes", "model.preset=grain_gcn"]
    assert load_config(None, crafted).threat.crafting == "imprinted_nodes"
    with pytest.raises(ConfigError, match="threat.crafting: imprinted_nodes .*threat.aux_graphs: false"):
        load_config(None, [*crafted, "threat.aux_graphs=false"])
    with pytest.raises(ConfigError, match="threat.crafting: imprinted_nodes needs a per-node MLP readout"):
        load_config(None, ["threat.server=malicious", "threat.crafting=imprinted_nodes"])


def _float32_epoch(epoch: bool):
    """A float32 client's FedAvg epoch (two SGD steps at lr 0.01 on two batches) of an
    ``imprinted_nodes`` round, read as one update: the peeled rows and the true rows."""
    update, schema, truth = float32_epoch_update(epoch)
    return read_imprints(update, schema, tol=1e-2), truth


def float32_epoch_update(epoch: bool, victims: tuple[str, ...] = VICTIMS):
    """That epoch's reply (weights), the victims' schema and their true readout rows; the first
    two ``victims`` are the first step's batch, the rest the second's."""
    graphs = [molecule(s)[0] for s in victims]
    schema = molecule(victims[0])[1]
    torch.manual_seed(0)
    model = build_model(GRAIN_GCN, graphs[0].x.size(1), 2)
    honest = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    table = crafting("imprinted_nodes_epoch" if epoch else "imprinted_nodes", [molecule(s)[0] for s in AUX], "bce")
    crafted, parts = table.craft(honest, GRAIN_GCN, 1, seed=3)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in parts[0].items()})
    weights, _ = fedavg_weights(model, [graphs[:2], graphs[2:]], 0.01, loss="bce")
    update = ObservedUpdate(round=1, client_key=0, global_weights=crafted.base,
                            returned={k: v.numpy() for k, v in weights.items()}, kind="weights",
                            num_examples=len(graphs),
                            metrics={}, lr=0.01, local_steps=2, batch_size=2, crafted=crafted.for_clients({0: 0}))
    return update, schema, readout_rows(crafted_model(GRAIN_GCN, parts[0]), graphs)


def test_an_epoch_table_outlasts_a_float32_epoch_that_erases_the_default_one():
    """Scaled so that two local steps barely move it, read on columns a float32 reply keeps (zero
    table weights) with the statistic's own columns recomputed from them, the epoch table gives
    the batch's rows; the default table's summing unit dies in the first step, and most of its
    cells stay mixed."""
    def exact(imprints, truth):
        return {_nearest(truth, row.numpy())[0] for row in imprints.rows if _nearest(truth, row.numpy())[1] < 1e-3}

    default, truth = _float32_epoch(epoch=False)
    imprints, truth_epoch = _float32_epoch(epoch=True)
    distinct = len(np.unique(np.round(truth_epoch, 5), axis=0))  # 12
    # 20 cells a group for 12 rows: a few share a cell in every group, so the peeling misses them
    assert len(exact(imprints, truth_epoch)) >= 2 * distinct // 3 and imprints.undecoded <= 2
    assert len(exact(default, truth)) <= 3 and default.undecoded >= 10


def test_the_epoch_table_needs_two_gcn_layers():
    assert ImprintedNodes(epoch=True).problem(GRAIN_GCN, 1) is None
    assert "epoch table" in ImprintedNodes(epoch=True).problem(dict(GRAIN_GCN, layers=1), 1)
    assert ImprintedNodes().problem(dict(GRAIN_GCN, layers=1), 1) is None


def test_the_epoch_table_is_a_crafting_of_its_own():
    """``threat.crafting: imprinted_nodes_epoch`` in a config: the epoch table, refused with the reason
    where it cannot be built."""
    from fedgraph_sim.config import load_config
    from fedgraph_sim.errors import ConfigError

    table = crafting("imprinted_nodes_epoch", loss="bce")
    assert isinstance(table, ImprintedNodes) and table.epoch and table.loss == "bce"
    assert not crafting("imprinted_nodes").epoch
    crafted = ["threat.server=malicious", "threat.crafting=imprinted_nodes_epoch", "model.preset=grain_gcn"]
    assert load_config(None, crafted).threat.crafting == "imprinted_nodes_epoch"
    with pytest.raises(ConfigError, match="threat.crafting: imprinted_nodes_epoch its epoch table needs GCN layers"):
        load_config(None, [*crafted, "model.layers=1"])
