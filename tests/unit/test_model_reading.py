"""A user's model read as the bench's classifier (``fedgraph_sim.models.reading``): the reading
computes the user's function with the user's arrays, and a model whose clients' gradients are not
a function of graph and weights is refused with the reason."""

import pytest
import torch

from fedgraph_sim.models.reading import read_as_classifier
from fedgraph_sim.models.user import build_user_model
from tests.unit.test_user_models import GINS, PYG_EXAMPLE, graph


def read(cls: str, args: dict | None = None, features: int = 6, classes: int = 2):
    model = build_user_model(cls if ":" in cls else f"{GINS}:{cls}", args or {}, features, classes)
    return model, read_as_classifier(model, features, classes)


@pytest.mark.parametrize("cls, args, spec", [
    ("PlainGIN", {"hidden_channels": 8, "num_layers": 3},
     dict(conv="gin", layers=3, hidden=8, pool="sum", readout="mlp", readout_hidden=[8])),
    ("MeanGCN", {}, dict(conv="gcn", layers=2, hidden=16, pool="mean", readout="linear", readout_hidden=None)),
])
def test_a_plain_model_reads_as_the_classifier_that_computes_it(cls, args, spec):
    from fedgraph_sim.models import GraphClassifier
    model, reading = read(cls, args)
    assert {k: reading.spec[k] for k in spec} == spec
    ours = GraphClassifier(6, 2, **reading.spec)
    ours.load_state_dict({k: torch.as_tensor(v) for k, v in reading.arrays(model.state_dict()).items()})
    g = graph(7, 6)
    model.eval(), ours.eval()
    batch = torch.zeros(7, dtype=torch.long)
    torch.testing.assert_close(ours(g.x, g.edge_index, batch), model(g.x, g.edge_index, batch))
    assert set(reading.names) == set(dict(ours.named_parameters()))


@pytest.mark.parametrize("cls, args, says", [
    (PYG_EXAMPLE, {"hidden_channels": 8, "num_layers": 2}, "convs.0.nn.norms.0 (BatchNorm) normalises"),
    ("DropoutGIN", {}, "training forward is random (dropout)"),
    ("Mixed", {}, "its layers (GCNConv, SAGEConv) are not one of"),
])
def test_what_cannot_be_replayed_says_why(cls, args, says):
    _, reading = read(cls, args)
    assert isinstance(reading, str) and says in reading


@pytest.mark.parametrize("cls, args", [("PlainGIN", {"hidden_channels": 8, "num_layers": 3}), ("DropoutGIN", {})])
def test_reading_leaves_torchs_global_generator_as_it_was(cls, args):
    """The reading (its dropout probe's seeds, its candidate classifiers) runs on a forked
    generator: the caller's next draws are the ones it would have made without it."""
    model = build_user_model(f"{GINS}:{cls}", args, 6, 2)
    torch.manual_seed(123)
    expected = torch.rand(4)
    torch.manual_seed(123)
    read_as_classifier(model, 6, 2)
    assert torch.equal(torch.rand(4), expected)


def test_grain_ext_rebuilds_a_molecule_from_a_users_gin():
    from attacks.base import AttackContext, Budget, build_attack
    from clients.training import mean_gradient
    from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate
    from tests.unit.grain_cases import ATOMS, plain_molecule
    g, schema = plain_molecule("CC(=O)Oc1ccccc1C(=O)O")  # aspirin, atom types only
    spec = {"module": f"{GINS}:PlainGIN", "args": {"hidden_channels": 64, "num_layers": 3}}
    torch.manual_seed(0)
    model = build_user_model(spec["module"], spec["args"], len(ATOMS), 2)
    grads, _ = mean_gradient(model, [g], "cross_entropy")
    update = ObservedUpdate(round=1, client_key=0, global_weights={k: v.numpy().copy() for k, v in
                                                                   model.state_dict().items()},
                            returned={k: v.numpy() for k, v in grads.items()}, kind="gradient", num_examples=1,
                            metrics={}, lr=0.01, local_steps=1, batch_size=1)
    knowledge = AttackerKnowledge(model=spec, num_features=len(ATOMS), num_classes=2, schema=schema,
                                  node_counts=(g.num_nodes,))
    assert "needs GCN or GAT layers (model.conv is gin" in build_attack("grain", {}).not_applicable(update, knowledge)
    attack = build_attack("grain@ext", {})
    assert attack.not_applicable(update, knowledge) is None
    (rec,) = attack.reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(60)))
    assert rec.info["exact"] == 1 and rec.num_nodes == g.num_nodes


def test_attacks_that_read_the_classifiers_layers_say_so_for_a_users_model():
    from attacks.base import build_attack
    from fedgraph_sim.threat import AttackerKnowledge
    from tests.unit.grain_cases import ATOMS, plain_molecule
    _, schema = plain_molecule("CCO")
    knowledge = AttackerKnowledge(model={"module": f"{GINS}:MeanGCN", "args": {}}, num_features=len(ATOMS),
                                  num_classes=2, schema=schema, node_counts=(3,))
    assert "a user's model" in build_attack("graphdlg", {}).user_model_problem(knowledge)
    assert "normalises over its edge set" in build_attack("dlg", {}).user_model_problem(knowledge)
    assert build_attack("random", {}).user_model_problem(knowledge) is None
