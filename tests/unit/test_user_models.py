"""A user's own PyG model (``fedgraph_sim.models.user``): loaded by path, checked before anything
runs with one line per mistake, its parameter names kept, and the relaxed forward the
optimisation attacks differentiate through, exact only where no layer normalises over its edges."""

from pathlib import Path

import pytest
import torch
from torch_geometric.data import Batch, Data

from fedgraph_sim.config import load_config
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.models import build_model
from fedgraph_sim.models.gradients import per_graph_gradients
from fedgraph_sim.models.user import (absolute, build_user_model, check_forward_on, code_of, load_class,
                                      relaxation_error, relaxation_problem)

HERE = Path(__file__).resolve().parent
GINS = "tests.unit.user_models.gins"
PYG_EXAMPLE = str(HERE.parents[1] / "docs" / "examples" / "mutag_gin" / "gin.py") + ":Net"


def graph(n=5, features=4, label=1) -> Data:
    edges = [(k, k + 1) for k in range(n - 1)] + [(0, n - 1)]
    edge_index = torch.tensor(edges + [(b, a) for a, b in edges]).T
    return Data(x=torch.eye(n, features), edge_index=edge_index, y=torch.tensor([label]))


@pytest.mark.parametrize("path, says", [
    ("no_colon", "is not 'package.module:Name'"),
    ("missing/file.py:Net", "no file missing/file.py"),
    ("no_such_package.mod:Net", "importing no_such_package.mod failed: ModuleNotFoundError"),
    (f"{GINS}:Absent", "has no torch.nn.Module subclass named Absent"),
])
def test_a_class_that_cannot_be_loaded_names_the_key_and_why(path, says):
    with pytest.raises(ConfigError, match="model.module") as err:
        load_class(path)
    assert says in str(err.value)


@pytest.mark.parametrize("cls, args, key, says", [
    ("NoChannels", {}, "model.module", "takes no argument 'in_channels'"),
    ("MeanGCN", {"depth": 3}, "model.args.depth", "takes no argument 'depth'"),
    ("NeedsData", {}, "model.module", "forward takes 1 positional arguments"),
])
def test_a_class_built_or_called_otherwise_names_the_key_and_why(cls, args, key, says):
    with pytest.raises(ConfigError, match=f"^{key}: ") as err:
        build_user_model(f"{GINS}:{cls}", args, 4, 2)
    assert says in str(err.value)


def test_the_config_checks_the_class_before_anything_runs():
    with pytest.raises(ConfigError, match="model.args.depth"):
        load_config(None, [f"model.module={GINS}:MeanGCN", "model.args={depth: 3}"])
    with pytest.raises(ConfigError, match="^model.conv: describes the bench's own classifier"):
        load_config(None, [f"model.module={GINS}:MeanGCN", "model.conv=gin"])
    with pytest.raises(ConfigError, match="^model.args: .* set model.module too"):
        load_config(None, ["model.args={hidden: 3}"])
    config = load_config(None, [f"model.module={GINS}:MeanGCN", "model.args={hidden: 8}"])
    assert config.model.module == f"{GINS}:MeanGCN" and config.model.args == {"hidden": 8}


def test_a_forward_that_does_not_pool_is_caught_on_the_data():
    model = build_user_model(f"{GINS}:NodeLogits", {}, 4, 2)
    with pytest.raises(ConfigError, match=r"forward returned \(10, 2\) for 2 graphs; expected .*\(2, 2\)"):
        check_forward_on(model, [graph(), graph()], 2)
    check_forward_on(build_user_model(f"{GINS}:MeanGCN", {}, 4, 2), [graph(), graph()], 2)


def test_the_user_model_keeps_its_class_and_parameter_names():
    model = build_model({"module": f"{GINS}:PlainGIN", "args": {"hidden_channels": 8, "num_layers": 2}}, 4, 3)
    from tests.unit.user_models.gins import PlainGIN
    plain = PlainGIN(4, 8, 3, 2)
    assert isinstance(model, PlainGIN)
    assert list(model.state_dict()) == list(plain.state_dict())
    assert model.final_linear_name == "mlp.lins.1"
    batch = Batch.from_data_list([graph(), graph(6, label=0)])
    logits, y = model.logits_and_targets(batch)
    assert logits.shape == (2, 3) and y.tolist() == [1, 0]


def test_a_file_path_is_made_absolute_for_the_workers(tmp_path, monkeypatch):
    monkeypatch.chdir(HERE.parents[1])
    assert absolute("docs/examples/mutag_gin/gin.py:Net") == PYG_EXAMPLE
    assert absolute(f"{GINS}:PlainGIN") == f"{GINS}:PlainGIN"
    assert code_of(f"{GINS}:PlainGIN") == "tests" and code_of("docs/examples/mutag_gin/gin.py:Net") == PYG_EXAMPLE[:-4]
    assert load_class(PYG_EXAMPLE) is load_class("docs/examples/mutag_gin/gin.py:Net")  # one module per file


def test_the_relaxed_forward_is_gin_itself_at_a_binary_adjacency():
    gin = build_user_model(f"{GINS}:PlainGIN", {"hidden_channels": 8, "num_layers": 2}, 6, 2)
    assert relaxation_error(gin, 6) < 1e-6
    g = graph(6, 6)
    adj = torch.zeros(6, 6)
    adj[g.edge_index[1], g.edge_index[0]] = 1
    adj.requires_grad_(True)
    gin.forward_dense(g.x, adj).sum().backward()
    assert adj.grad.abs().sum() > 0  # the attacks' gradient reaches every candidate edge
    assert relaxation_problem({"module": f"{GINS}:PlainGIN", "args": {"hidden_channels": 8, "num_layers": 2}},
                              6, 2) is None


def test_the_relaxed_forward_of_a_gcn_is_not_the_model_and_says_so():
    gcn = build_user_model(f"{GINS}:MeanGCN", {}, 6, 2)
    assert relaxation_error(gcn, 6) > 1e-2  # degrees counted on the complete graph
    reason = relaxation_problem({"module": f"{GINS}:MeanGCN", "args": {}}, 6, 2)
    assert "GCNConv" in reason and "normalises over its edge set" in reason


def test_per_graph_gradients_of_a_user_model_are_each_graphs_own():
    model = build_user_model(f"{GINS}:PlainGIN", {"hidden_channels": 8, "num_layers": 2}, 4, 2)
    graphs = [graph(5), graph(7, label=0)]
    rows, losses = per_graph_gradients(model, graphs)
    for k, g in enumerate(graphs):
        logits, y = model.logits_and_targets(Batch.from_data_list([g]))
        loss = torch.nn.functional.cross_entropy(logits, y)
        grads = torch.autograd.grad(loss, list(model.parameters()))
        assert losses[k] == pytest.approx(loss.item())
        for (name, _), expected in zip(model.named_parameters(), grads):
            torch.testing.assert_close(rows[name][k], expected)


def test_a_fedavg_reply_with_a_scalar_buffer_reads_as_a_pseudo_gradient():
    import numpy as np

    from fedgraph_sim.threat import ObservedUpdate
    sent = {"w": np.ones(2, np.float32), "norm.num_batches_tracked": np.array(3, np.int64)}
    back = {"w": np.zeros(2, np.float32), "norm.num_batches_tracked": np.array(5, np.int64)}
    update = ObservedUpdate(round=1, client_key=0, global_weights=sent, returned=back, kind="weights",
                            num_examples=2, metrics={}, lr=0.5, local_steps=2, batch_size=1)
    assert update.gradient["w"].tolist() == [1.0, 1.0] and update.gradient["norm.num_batches_tracked"].item() == -2.0


def test_dp_activations_noise_a_user_models_message_passing_outputs():
    from clients.defenses.dp_activations import DPActivations
    model = build_user_model(f"{GINS}:PlainGIN", {"hidden_channels": 8, "num_layers": 2}, 4, 2)
    batch = Batch.from_data_list([graph()])
    clean = model(batch.x, batch.edge_index, batch.batch)
    with DPActivations(sigma=1.0).training(model, torch.Generator().manual_seed(0)):
        noisy = model(batch.x, batch.edge_index, batch.batch)
    assert not torch.allclose(clean, noisy)
    torch.testing.assert_close(model(batch.x, batch.edge_index, batch.batch), clean)  # the hooks are gone


def test_canaries_are_refused_for_a_user_model_with_the_reason():
    with pytest.raises(ConfigError, match="^canaries.count: .*not for a user's model"):
        load_config(None, [f"model.module={GINS}:MeanGCN", "canaries={count: 10}"])
