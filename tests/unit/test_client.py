import numpy as np
import pytest
import torch
from flwr.app import ArrayRecord, ConfigRecord, Message, RecordDict

from clients.turn import train_reply
from clients.training import batch_rng, fedsgd_gradient, sample_batches
from fedgraph_sim.audit import AuditStore
from fedgraph_sim.config import load_config
from fedgraph_sim.models import GraphClassifier
from fedgraph_sim.threat import ObservedUpdate

pytestmark = pytest.mark.usefixtures("flower_task")


def instruction(model, run_dir, round_=1, lr=0.01, steps=1, batch=1, audit=True, arrays=None):
    """A train instruction sending ``model``'s weights (or ``arrays``, an ArrayRecord)."""
    config = ConfigRecord({"server-round": round_, "lr": lr, "local-steps": steps, "batch-size": batch,
                           "run-dir": str(run_dir), "audit": audit})
    arrays = arrays if arrays is not None else ArrayRecord(model.state_dict())
    content = RecordDict({"arrays": arrays, "config": config})
    return Message(content=content, dst_node_id=1, message_type="train")


def reply_for(tmp_path, overrides=(), **kw):
    config = load_config(None, ["data.dataset=synthetic", "federation.num_clients=2", *overrides])
    torch.manual_seed(0)
    model = GraphClassifier(4, 2)
    msg = instruction(model, tmp_path, **kw)
    reply = train_reply(msg, 1, config.model_dump_json())
    return config, model, msg, reply


def test_fedsgd_server_gradient_equals_client_gradient(tmp_path):
    _, model, msg, reply = reply_for(tmp_path, batch=2)
    sent = {k: v.numpy() for k, v in msg.content["arrays"].items()}
    update = ObservedUpdate(round=1, client_key=1, global_weights=sent,
                            returned={k: v.numpy() for k, v in reply.content["arrays"].items()},
                            kind="gradient", num_examples=2, metrics={}, lr=0.01, local_steps=1,
                            batch_size=2)
    record = AuditStore(tmp_path).read(1, 1)
    assert len(record.graphs) == 2
    truth, _ = fedsgd_gradient(model.double(), [g.clone().apply(lambda t: t.double() if t.is_floating_point() else t)
                                                for g in record.graphs])
    assert set(update.gradient) == set(truth)
    for name, grad in truth.items():
        assert update.gradient[name].dtype == torch.float64
        assert torch.allclose(update.gradient[name], grad, atol=1e-6), name
    assert reply.content["metrics"]["num-examples"] == 2
    assert reply.content["metrics"]["partition-id"] == 1


def test_fedavg_returns_weights_and_the_derived_gradient_is_approximate(tmp_path):
    _, model, msg, reply = reply_for(tmp_path, steps=3)
    sent = {k: v.numpy() for k, v in msg.content["arrays"].items()}
    back = {k: v.numpy() for k, v in reply.content["arrays"].items()}
    assert any(not np.allclose(sent[k], back[k]) for k in sent)
    update = ObservedUpdate(round=1, client_key=1, global_weights=sent, returned=back,
                            kind="weights", num_examples=1, metrics={}, lr=0.01, local_steps=3,
                            batch_size=1)
    assert not update.exact
    assert len(AuditStore(tmp_path).read(1, 1).graphs) == 3


@pytest.mark.parametrize("overrides, audit, written", [
    ((), True, True), ((), False, False),  # the server says whether the round's ground truth is read
    (("attack.clients=[1]",), True, True), (("attack.clients=[0]",), True, False)])
def test_audit_records_only_where_the_ground_truth_is_read(tmp_path, overrides, audit, written):
    _, _, _, reply = reply_for(tmp_path, overrides, audit=audit)
    assert "arrays" in reply.content
    assert (tmp_path / "audit" / "round_1" / "client_1.pt").is_file() == written


def test_batches_are_seeded_per_round_and_client():
    idx = np.arange(100)
    a = sample_batches(idx, 4, 2, batch_rng(0, 1, 3))
    b = sample_batches(idx, 4, 2, batch_rng(0, 1, 3))
    c = sample_batches(idx, 4, 2, batch_rng(0, 2, 3))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_an_empty_partition_is_a_failure_reply_not_an_exception(tmp_path, monkeypatch):
    import clients.turn as app
    from server.strategy import failed

    config = load_config(None, ["data.dataset=synthetic", "federation.num_clients=2"])
    scenario = app.cached_scenario(config.model_dump_json())
    monkeypatch.setattr(scenario, "clients", [scenario.clients[0], np.array([], dtype=np.int64)])
    torch.manual_seed(0)
    reply = train_reply(instruction(GraphClassifier(4, 2), tmp_path), 1, config.model_dump_json())
    assert failed(reply) and "arrays" not in reply.content
    assert reply.content["metrics"]["partition-id"] == 1
    assert reply.content["config"]["error"] == "RuntimeError: client 1 has an empty partition"
    assert not (tmp_path / "audit").exists()  # nothing half-written


def test_a_raising_defense_is_a_failure_reply(tmp_path, monkeypatch):
    from clients.defenses.prune import Prune
    from server.strategy import failed

    def boom(self, update, rng):
        raise ValueError("defense exploded")

    monkeypatch.setattr(Prune, "apply", boom)
    _, _, _, reply = reply_for(tmp_path, ["defenses=[{name: prune, p: 0.5}]"])
    assert failed(reply) and reply.content["config"]["error"] == "ValueError: defense exploded"


def test_epoch_sampling_covers_the_partition_before_repeating():
    from clients.training import epoch_batches

    idx = np.arange(10, 20)
    seen = [int(epoch_batches(idx, 1, 1, r, seed=0, client_key=0)[0][0]) for r in range(1, 11)]
    assert sorted(seen) == list(range(10, 20))
    again = [int(epoch_batches(idx, 1, 1, r, seed=0, client_key=0)[0][0]) for r in range(1, 11)]
    assert seen == again
    batches = epoch_batches(idx, 4, 2, 1, seed=0, client_key=0)
    assert len(batches) == 2 and all(len(b) == 4 for b in batches)


def test_repeat_sampling_trains_one_batch_per_round_at_every_step():
    from clients.training import round_batches

    idx = np.arange(10, 20)
    rounds = [round_batches("repeat", idx, 2, 3, r, seed=0, client_key=0) for r in range(1, 6)]
    assert all(len(b) == 3 and all((s == b[0]).all() for s in b) for b in rounds)
    assert sorted(int(v) for b in rounds for v in b[0]) == list(range(10, 20))  # the partition, walked
    assert all((round_batches("epoch", idx, 2, 1, r, 0, 0)[0] == b[0]).all() for r, b in enumerate(rounds, 1))


def test_dp_sgd_epsilon_accumulates_in_the_node_state_across_rounds(tmp_path):
    config = load_config(None, ["data.dataset=synthetic", "federation.num_clients=2", "federation.rounds=2",
                                "defenses=[{name: dp_sgd, noise_multiplier: 1.0, clip: 1.0}]"])
    torch.manual_seed(0)
    model, state = GraphClassifier(4, 2), RecordDict()
    eps = []
    for round_ in (1, 2):
        reply = train_reply(instruction(model, tmp_path, round_=round_, batch=2), 1, config.model_dump_json(),
                            state)
        metrics = reply.content["metrics"]
        eps.append(metrics["defense-epsilon"])
        assert metrics["defense-noise-multiplier"] == 1.0 and metrics["defense-delta"] == 1e-5
    assert 0 < eps[0] < eps[1]


def test_fedavg_defenses_act_on_the_weight_delta(tmp_path):
    _, _, msg, reply = reply_for(tmp_path, ["defenses=[{name: prune, p: 0.9}]"], steps=3)
    sent = {k: v.numpy() for k, v in msg.content["arrays"].items()}
    back = {k: v.numpy() for k, v in reply.content["arrays"].items()}
    for k in sent:
        delta = back[k] - sent[k]
        assert int((delta == 0).sum()) >= int(0.9 * delta.size), k
        assert int((back[k] == 0).sum()) < delta.size  # the weights themselves are not pruned


def test_per_node_gradients_are_each_nodes_own_loss_gradient():
    from clients.training import mean_gradient, per_node_gradients
    from fedgraph_sim.data import load_dataset

    graph = load_dataset("random_graph_balls", num_subgraphs=2, subgraph_nodes=12, features=16)[0]
    torch.manual_seed(0)
    model = GraphClassifier(16, 2, conv="sage", activation="sigmoid", hidden=20, task="node")
    leaked = per_node_gradients(model, graph)
    mean, _ = mean_gradient(model, [graph])
    for name, grads in leaked.items():
        assert grads.shape == (graph.num_nodes, *mean[name].shape)
        assert torch.allclose(grads.mean(0), mean[name], atol=1e-6), name
    v = 3  # one node's row is the gradient of that node's loss alone
    only_v = graph.clone()
    only_v.train_mask = torch.arange(graph.num_nodes) == v
    alone, _ = mean_gradient(model, [only_v])
    assert all(torch.allclose(leaked[n][v], alone[n], atol=1e-6) for n in alone)


def test_a_leaky_client_replies_per_node_gradients_beside_its_update(tmp_path):
    from fedgraph_sim.threat import PER_NODE_PREFIX

    config = load_config(None, ["data.dataset=random_graph_balls", "data.options={num_subgraphs: 8, features: 8}",
                                "federation.num_clients=2", "model.task=node", "threat.per_node_gradients=true"])
    torch.manual_seed(0)
    model = GraphClassifier(8, 2, task="node")
    reply = train_reply(instruction(model, tmp_path), 1, config.model_dump_json())
    keys = list(reply.content["arrays"].keys())
    leaked = [k for k in keys if k.startswith(PER_NODE_PREFIX)]
    assert sorted(k.removeprefix(PER_NODE_PREFIX) for k in leaked) == sorted(dict(model.named_parameters()))
    nodes = AuditStore(tmp_path).read(1, 1).graphs[0].num_nodes
    assert all(reply.content["arrays"][k].numpy().shape[0] == nodes for k in leaked)
