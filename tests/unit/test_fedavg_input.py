"""A FedAvg update read as one gradient (attacks/common/fedavg.py)."""

import pytest
import torch

from attacks.common.fedavg import FEDAVG_INPUTS, check_fedavg, read_as_gradient
from clients.training import fedavg_weights, fedsgd_gradient
from fedgraph_sim.data import make_synthetic
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.models import GraphClassifier
from fedgraph_sim.threat import ObservedUpdate


def updates():
    torch.manual_seed(0)
    data = make_synthetic(num_graphs=4, seed=1)
    model = GraphClassifier(4, 2)
    sent = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    grad, _ = fedsgd_gradient(model, data.graphs[:1])
    new, _ = fedavg_weights(model, [data.graphs[:1], data.graphs[1:2], data.graphs[2:3]], 0.1)
    weights = ObservedUpdate(round=1, client_key=0, global_weights=sent,
                             returned={k: v.numpy() for k, v in new.items()}, kind="weights", num_examples=3,
                             metrics={}, lr=0.1, local_steps=3, batch_size=1)
    return ObservedUpdate.fedsgd(model, grad), weights


def test_a_fedavg_update_becomes_its_pseudo_gradient_only_when_asked():
    exact, weights = updates()
    assert read_as_gradient(exact, "pseudo_gradient") is exact  # a gradient is read as it is
    assert read_as_gradient(weights, "not_applicable") is weights
    read = read_as_gradient(weights, "pseudo_gradient")
    assert read.exact and not weights.exact and read.kind == "gradient"
    for name, value in weights.gradient.items():  # (W_sent - W_back) / (lr K), unchanged
        assert torch.allclose(read.gradient[name], value)
        expected = (torch.as_tensor(weights.global_weights[name]) - torch.as_tensor(weights.returned[name])) / 0.3
        assert torch.allclose(value.double(), expected.double(), atol=1e-5)


def test_an_unknown_choice_is_one_line_with_the_valid_ones():
    check_fedavg("glg", "pseudo_gradient")
    with pytest.raises(ConfigError, match="attack.params.glg.fedavg: unknown 'x'; valid: " + ", ".join(FEDAVG_INPUTS)):
        check_fedavg("glg", "x")
