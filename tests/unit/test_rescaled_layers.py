"""``rescaled_layers``: the same function, the read layers' gradients grown by the inverse of their
scale, so a float32 client's update stands further above its rounding."""

import copy

import numpy as np
import pytest
import torch

from attacks.grain.local_training import LocalTraining
from clients.defenses.crafted_check import zero_fractions
from clients.training import fedavg_weights, mean_gradient
from fedgraph_sim.crafting import crafting
from fedgraph_sim.crafting.rescaled_layers import rescale
from fedgraph_sim.models import build_model
from fedgraph_sim.threat import ObservedUpdate
from tests.unit.grain_cases import molecule
from tests.unit.test_separated_clients import GRAIN_GCN, LINEAR, POOLED, SMILES

S = 0.3


def _models(spec: dict):
    torch.manual_seed(0)
    honest = build_model(spec, molecule(SMILES[0])[0].x.size(1), 2).double()
    weights = {k: v.numpy().copy() for k, v in honest.state_dict().items()}
    crafted = copy.deepcopy(honest)
    crafted.load_state_dict({k: torch.from_numpy(v) for k, v in rescale(weights, spec, S).items()})
    return honest, crafted


@pytest.mark.parametrize("spec", [GRAIN_GCN, POOLED], ids=["per_node", "pooled"])
def test_the_crafted_model_computes_the_honest_function(spec):
    honest, crafted = _models(spec)
    for smiles in SMILES:
        g = molecule(smiles)[0]
        torch.testing.assert_close(crafted(g.x.double(), g.edge_index), honest(g.x.double(), g.edge_index),
                                   rtol=1e-12, atol=1e-12)
    assert zero_fractions(crafted) == zero_fractions(honest)  # nothing for crafted_check to count


def test_each_read_tensor_s_gradient_grows_by_the_inverse_of_its_scale():
    honest, crafted = _models(GRAIN_GCN)
    graphs = [molecule(s)[0].clone() for s in SMILES]  # the cached molecules stay float32
    for g in graphs:
        g.x = g.x.double()
    before, _ = mean_gradient(honest, graphs, "bce")
    after, _ = mean_gradient(crafted, graphs, "bce")
    features = graphs[0].x.size(1)
    for name in ("convs.0.lin.weight", "convs.1.lin.weight"):
        torch.testing.assert_close(after[name], before[name] / S)
    readout, readout_before = after["classifier.0.weight"], before["classifier.0.weight"]
    torch.testing.assert_close(readout[:, features:], readout_before[:, features:] / S)  # over the states
    torch.testing.assert_close(readout[:, :features], readout_before[:, :features] / S ** 3)  # over x0


def test_a_float32_epoch_stands_further_above_its_rounding():
    """The rounding a float32 client adds, over the update it returns, in the read tensors: the
    crafting divides it by about ``1 / S**2`` (about 11 at 0.3)."""
    graphs = [molecule(s)[0] for s in SMILES]
    ratios = {}
    for label, model in zip(("honest", "crafted"), _models(GRAIN_GCN)):
        model = model.float()
        sent = {k: v.numpy().copy() for k, v in model.state_dict().items()}
        back, _ = fedavg_weights(copy.deepcopy(model), [graphs[:2], graphs[2:]], 0.01, loss="bce")
        update = ObservedUpdate(round=1, client_key=0, global_weights=sent,
                                returned={k: v.numpy() for k, v in back.items()}, kind="weights",
                                num_examples=3, metrics={}, lr=0.01, local_steps=2, batch_size=2)
        noise = LocalTraining.of(update).noise
        ratios[label] = {n: noise[n] / float(np.abs(update.gradient[n]).mean())
                         for n in ("convs.0.lin.weight", "convs.1.lin.weight")}
    for name, honest in ratios["honest"].items():
        assert 4 < honest / ratios["crafted"][name] < 30, (name, honest, ratios["crafted"][name])


def test_every_client_gets_the_same_weights_and_an_attack_reads_the_reply_as_honest():
    honest, _ = _models(GRAIN_GCN)
    weights = {k: v.numpy().astype(np.float32) for k, v in honest.state_dict().items()}
    craft = crafting("rescaled_layers")
    round_, parts = craft.craft(weights, GRAIN_GCN, 3, seed=1)
    assert len(parts) == 3 and all(np.array_equal(p[k], round_.base[k]) for p in parts for k in weights)
    assert all(parts[0][k].dtype == np.float32 for k in weights)
    update = ObservedUpdate(round=1, client_key=0, global_weights=round_.base, returned=round_.base,
                            kind="weights", num_examples=1, metrics={}, lr=0.01, local_steps=2, batch_size=1,
                            crafted=round_.for_clients({0: 0}))
    ((member, _),) = craft.members(update, None)
    assert member.crafted is None and member.global_weights is round_.base


@pytest.mark.parametrize("spec, reason", [
    (dict(GRAIN_GCN, activation="elu"), "needs ReLU"),
    (dict(GRAIN_GCN, conv="gat", heads=2), "needs GCN layers"),
    (LINEAR, "needs an MLP readout"),
    (dict(POOLED, module="my.Model"), "a user's model"),
])
def test_what_it_cannot_rescale_is_said(spec, reason):
    assert reason in crafting("rescaled_layers").problem(spec, 4)
    assert crafting("rescaled_layers").problem(POOLED, 4) is None
