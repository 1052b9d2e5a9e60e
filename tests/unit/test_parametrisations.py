"""The dummies' parametrisations (attacks/common/parametrisations.py) and the dummy batch built on
them (attacks/common/dummy.py)."""

import pytest
import torch

from attacks.common.dummy import DummyGraphs
from attacks.common.parametrisations import (BoxedFeatures, FullAdjacency, Known, ProjectedAdjacency,
                                             SchemaSoftmaxFeatures, SigmoidAdjacency, SoftLabels, free, known,
                                             projected_adjacency, sigmoid_adjacency)
from fedgraph_sim.data.schema import FeatureBlock, FeatureSchema

SCHEMA = FeatureSchema((FeatureBlock("element", ("C", "N", "O")), FeatureBlock("charge", (-1, 0, 1, 2))),
                       "element")


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def symmetric_zero_diagonal(a):
    return torch.equal(a, a.t()) and a.diagonal().abs().sum() == 0


def test_known_values_have_no_variables():
    x = torch.randn(4, 3)
    part = Known(x)
    assert part.variables == [] and part.value() is x


def test_boxed_features_stay_in_their_box_from_the_start_and_after_projection():
    part = BoxedFeatures((5, 3), "randn", gen())
    assert part.value().min() >= 0 and part.value().max() <= 1
    with torch.no_grad():
        part.z.add_(5.0)
    part.project()
    assert torch.equal(part.value(), torch.ones(5, 3))


def test_schema_softmax_puts_one_distribution_on_each_block():
    part = SchemaSoftmaxFeatures((6, SCHEMA.width), "randn", gen(), SCHEMA)
    value = part.value()
    for s in SCHEMA.slices().values():
        assert torch.allclose(value[:, s].sum(-1), torch.ones(6))
    with torch.no_grad():  # a decided logit per block gives the one-hot encoding of that value
        part.z.zero_()
        part.z[:, 1] = part.z[:, 5] = 50.0
    assert torch.allclose(part.value(), SCHEMA.encode(torch.tensor([[1, 2]] * 6)), atol=1e-6)


def test_a_tensor_init_starts_from_that_point():
    start = torch.arange(6.0).view(2, 3)
    part = SchemaSoftmaxFeatures((2, 3), start, gen(), FeatureSchema((FeatureBlock("t", (0, 1, 2)),), "t"))
    assert torch.equal(part.z.detach(), start) and part.z.requires_grad


def test_sigmoid_adjacency_is_symmetric_in_the_open_unit_interval():
    a = SigmoidAdjacency(6, gen()).value()
    assert symmetric_zero_diagonal(a)
    off = a[~torch.eye(6, dtype=torch.bool)]
    assert (off > 0).all() and (off < 1).all()


@pytest.mark.parametrize("init", ["bernoulli", 0.3])
def test_projected_adjacency_projects_onto_the_unit_interval_and_samples_binary_graphs(init):
    part = ProjectedAdjacency(5, gen(), init)
    start = part.upper.detach()
    assert set(start.unique().tolist()) <= {0.0, 1.0} if init == "bernoulli" else torch.allclose(start, start * 0 + 0.3)
    with torch.no_grad():
        part.upper.mul_(4).sub_(1)
    part.project()
    a = part.value()
    assert symmetric_zero_diagonal(a) and a.min() >= 0 and a.max() <= 1
    sample = part.sample(gen(1))
    assert symmetric_zero_diagonal(sample) and set(sample.unique().tolist()) <= {0.0, 1.0}


def test_the_full_adjacency_is_a_plain_projected_matrix_scored_by_its_symmetrisation():
    part = FullAdjacency(4, gen())
    assert part.value().shape == (4, 4) and len(part.variables) == 1
    with torch.no_grad():
        part.matrix.copy_(torch.tensor([[5.0, 1.0, 0.0, -1.0]] * 4))
    part.project()
    assert part.value().min() >= 0 and part.value().max() <= 1 and not torch.equal(part.value(), part.value().t())
    scores = part.edge_scores().detach()  # every row [1, 1, 0, 0]: A02 = 0, A20 = 1
    assert symmetric_zero_diagonal(scores) and float(scores[0, 2]) == 0.5 and float(scores[0, 1]) == 1.0
    sample = part.sample(gen(1))
    assert symmetric_zero_diagonal(sample) and set(sample.unique().tolist()) <= {0.0, 1.0}


def test_soft_labels_are_distributions_and_guess_their_argmax():
    labels = SoftLabels(3, 4, gen())
    assert torch.allclose(labels.value().sum(-1), torch.ones(3))
    assert labels.guesses() == labels.logits.argmax(-1).tolist()


def test_dummy_graphs_draw_all_features_before_any_adjacency():
    """The second graph's features do not depend on how the first graph's adjacency is drawn."""
    with_logits = DummyGraphs([4, 5], gen(), features=free(3), adjacency=sigmoid_adjacency())
    granted = DummyGraphs([4, 5], gen(), features=free(3), adjacency=known([torch.zeros(4, 4), torch.zeros(5, 5)]))
    projected = DummyGraphs([4, 5], gen(), features=free(3), adjacency=projected_adjacency())
    assert torch.equal(with_logits.x(1), granted.x(1)) and torch.equal(with_logits.x(1), projected.x(1))
    assert len(granted.variables()) == 2 and len(with_logits.variables()) == 4


def test_dummy_graphs_pad_to_the_largest_graph_and_carry_their_labels():
    dummy = DummyGraphs([3, 5], gen(), features=free(2), labels=torch.tensor([1, 0]))
    x, adj, mask = dummy.dense()
    assert x.shape == (2, 5, 2) and adj.shape == (2, 5, 5)
    assert mask.tolist() == [[True] * 3 + [False] * 2, [True] * 5]
    assert x[0, 3:].abs().sum() == 0 and adj[0, 3:].abs().sum() == 0
    recs = dummy.reconstructions(info={"k": 1})
    assert [r.label for r in recs] == [1, 0] and [r.num_nodes for r in recs] == [3, 5]
    assert recs[0].info == {"k": 1} and not recs[0].x.requires_grad
    soft = DummyGraphs([3], gen(), features=free(2), labels="soft", num_classes=2)
    assert soft.label_targets().shape == (1, 2) and soft.variables()[-1] is soft.labels.logits
