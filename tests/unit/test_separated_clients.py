"""``separated_clients``: a secure aggregate of crafted replies pulls apart into each client's own
gradient of the narrow model, exactly."""

import numpy as np
import pytest
import torch

from clients.training import mean_gradient
from fedgraph_sim.crafting import crafting
from fedgraph_sim.models import build_model
from fedgraph_sim.threat import AGGREGATE, AttackerKnowledge, ObservedUpdate
from tests.unit.grain_cases import molecule

GRAIN_GCN = dict(conv="gcn", hidden=30, conv_bias=False, last_activation=False, readout="mlp",
                 readout_hidden=[30, 8], readout_input="concat_input", readout_placement="per_node")
POOLED = dict(conv="gcn", layers=3, hidden=24, readout="mlp", readout_hidden=[12, 6], pool="sum")
LINEAR = dict(conv="gcn", layers=2, hidden=12, pool="mean")  # GraphDLG's: a mean pool and a linear readout
SMILES = ("CCO", "c1ccncc1", "OCC(O)CO")


def _aggregate(model_spec: dict, kind: str = "gradient"):
    graphs = [molecule(s)[0] for s in SMILES]
    schema = molecule(SMILES[0])[1]
    features = graphs[0].x.size(1)
    torch.manual_seed(0)
    model = build_model(model_spec, features, 2)
    honest = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    craft = crafting("separated_clients")
    assert craft.problem(model_spec, len(graphs)) is None
    crafted, parts = craft.craft(honest, model_spec, len(graphs), seed=7)
    replies = []
    for part, g in zip(parts, graphs):
        model.load_state_dict({k: torch.from_numpy(v) for k, v in part.items()})
        grads, _ = mean_gradient(model, [g], "bce")
        replies.append({k: v.double().numpy() for k, v in grads.items()})
    mean = {k: sum(r[k] for r in replies) / len(replies) for k in replies[0]}
    update = ObservedUpdate(round=1, client_key=AGGREGATE, global_weights=crafted.base, returned=mean,
                            kind="gradient", num_examples=3, metrics={}, lr=0.01, local_steps=1, batch_size=3,
                            members=(0, 1, 2), crafted=crafted.for_clients({0: 0, 1: 1, 2: 2}))
    knowledge = AttackerKnowledge(model=model_spec, num_features=features, num_classes=2, schema=schema, loss="bce")
    return graphs, update, knowledge


@pytest.mark.parametrize("spec", [GRAIN_GCN, POOLED, LINEAR], ids=["per_node", "pooled", "linear"])
def test_each_member_is_its_own_gradient_of_the_narrow_model(spec):
    graphs, update, knowledge = _aggregate(spec)
    members = crafting("separated_clients").members(update, knowledge)
    assert [m.client_key for m, _ in members] == [0, 1, 2]
    for (member, narrow), g in zip(members, graphs):
        assert narrow.model["hidden"] == spec["hidden"] // 3
        model = narrow.build_model(member.global_weights)
        own, _ = mean_gradient(model, [g], "bce")
        assert set(member.returned) < set(own)  # the shared tensors are left out
        for name, value in member.returned.items():  # equal up to float32 sums over the zero channels
            expected = own[name].double().numpy()
            np.testing.assert_allclose(value, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())


def test_a_member_of_another_slot_is_not_its_gradient():
    graphs, update, knowledge = _aggregate(GRAIN_GCN)
    (first, narrow), _, _ = crafting("separated_clients").members(update, knowledge)
    own, _ = mean_gradient(narrow.build_model(first.global_weights), [graphs[1]], "bce")
    assert not np.allclose(first.returned["convs.0.lin.weight"], own["convs.0.lin.weight"].double().numpy())


def test_every_client_receives_zeros_outside_its_group():
    weights = {k: v.numpy() for k, v in build_model(GRAIN_GCN, 140, 2).state_dict().items()}
    crafted, parts = crafting("separated_clients").craft(weights, GRAIN_GCN, 3, seed=0)
    for slot, part in enumerate(parts):
        first = part["convs.0.lin.weight"]
        mine = np.zeros(30, bool)
        mine[10 * slot:10 * (slot + 1)] = True
        assert np.abs(first[mine]).sum() > 0 and not first[~mine].any()
        assert not part["convs.1.lin.weight"][~mine].any() and not part["convs.1.lin.weight"][:, ~mine].any()
        np.testing.assert_array_equal(part["classifier.4.weight"], parts[0]["classifier.4.weight"])  # shared
    np.testing.assert_array_equal(sum(p["convs.0.lin.weight"] for p in parts), crafted.base["convs.0.lin.weight"])


@pytest.mark.parametrize("spec, reason", [
    (dict(GRAIN_GCN, conv="gat"), "needs GCN layers"),
    (dict(GRAIN_GCN, task="node"), "graph classifier"),
    (dict(GRAIN_GCN, hidden=2), "narrowest layer has 2"),
    ({"module": "x.py:Net"}, "a user's model"),
])
def test_what_it_cannot_separate_is_said(spec, reason):
    assert reason in crafting("separated_clients").problem(spec, 3)
