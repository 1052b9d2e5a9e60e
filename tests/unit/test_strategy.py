import pytest
import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict
from flwr.serverapp.strategy import FedAvg

from server.strategy import CuriousFedAvg

pytestmark = pytest.mark.usefixtures("flower_task")


class FakeGrid:
    def get_node_ids(self):
        return [11, 12, 13]


def replies(rng):
    sent = Message(RecordDict({"config": ConfigRecord({})}), dst_node_id=11, message_type="train")
    out = []
    for pid, n in enumerate((1, 3, 2)):
        arrays = ArrayRecord({"w": Array(rng.normal(size=(3, 2)).astype(np.float32)),
                              "b": Array(rng.normal(size=2).astype(np.float32))})
        metrics = MetricRecord({"num-examples": n, "partition-id": pid, "loss": 0.5, "train-seconds": 0.1})
        out.append(Message(RecordDict({"arrays": arrays, "metrics": metrics}), reply_to=sent))
    return out


def global_arrays():
    return ArrayRecord({"w": Array(np.ones((3, 2), np.float32)), "b": Array(np.zeros(2, np.float32))})


def test_fedavg_mode_aggregates_exactly_like_fedavg():
    seen = []
    curious = CuriousFedAvg(lr=0.1, local_steps=5, batch_size=1,
                            observer=lambda updates, failures: seen.extend(updates),
                            min_train_nodes=3, min_available_nodes=3)
    curious.configure_train(1, global_arrays(), ConfigRecord({}), FakeGrid())
    ours, metrics = curious.aggregate_train(1, replies(np.random.default_rng(0)))
    plain, plain_metrics = FedAvg(min_train_nodes=3, min_available_nodes=3).aggregate_train(
        1, replies(np.random.default_rng(0)))
    for key in plain:
        assert np.array_equal(ours[key].numpy(), plain[key].numpy())
    assert dict(metrics) == dict(plain_metrics)
    assert [u.client_key for u in seen] == [0, 1, 2]
    assert seen[0].kind == "weights" and not seen[0].exact


def test_fedsgd_mode_steps_the_global_model_with_fedavgs_mean_gradient():
    seen = []
    curious = CuriousFedAvg(lr=0.1, local_steps=1, batch_size=1,
                            observer=lambda updates, failures: seen.extend(updates),
                            min_train_nodes=3, min_available_nodes=3)
    messages = list(curious.configure_train(1, global_arrays(), ConfigRecord({}), FakeGrid()))
    config = messages[0].content["config"]
    assert (config["lr"], config["local-steps"], config["batch-size"]) == (0.1, 1, 1)
    ours, _ = curious.aggregate_train(1, replies(np.random.default_rng(0)))
    plain, _ = FedAvg(min_train_nodes=3, min_available_nodes=3).aggregate_train(
        1, replies(np.random.default_rng(0)))
    sent = global_arrays()
    for key in plain:
        expected = sent[key].numpy() - 0.1 * plain[key].numpy()
        assert np.allclose(ours[key].numpy(), expected, atol=1e-7)
    assert seen[1].gradient["w"].dtype.is_floating_point and seen[1].exact
    np.testing.assert_array_equal(seen[1].global_weights["w"], np.ones((3, 2)))


def test_secure_aggregation_observes_only_the_weighted_mean_fedavg_computes():
    seen = []
    curious = CuriousFedAvg(lr=0.1, local_steps=1, batch_size=1,
                            observer=lambda updates, failures: seen.extend(updates),
                            secure_aggregation=True, min_train_nodes=3, min_available_nodes=3)
    curious.configure_train(1, global_arrays(), ConfigRecord({}), FakeGrid())
    curious.aggregate_train(1, replies(np.random.default_rng(0)))
    plain, _ = FedAvg(min_train_nodes=3, min_available_nodes=3).aggregate_train(
        1, replies(np.random.default_rng(0)))
    assert len(seen) == 1
    update = seen[0]
    assert update.client_key == -1 and update.observed == "secure_aggregate"
    assert update.num_examples == 6 and update.batch_size == 3
    for key in plain:
        assert np.allclose(update.returned[key], plain[key].numpy(), atol=1e-6)


def test_a_failed_client_turn_is_reported_and_left_out_of_the_aggregate(flower_task):
    from clients.turn import failure_reply

    seen, failed_turns = [], []
    curious = CuriousFedAvg(lr=0.1, local_steps=1, batch_size=1, min_train_nodes=3, min_available_nodes=3,
                            observer=lambda updates, failures: (seen.extend(updates), failed_turns.extend(failures)))
    sent = list(curious.configure_train(1, global_arrays(), ConfigRecord({}), FakeGrid()))
    ok = replies(np.random.default_rng(0))
    broken = failure_reply(sent[2], 2, "RuntimeError: client 2 has an empty partition")
    ours, _ = curious.aggregate_train(1, ok[:2] + [broken])
    plain, _ = FedAvg(min_train_nodes=2, min_available_nodes=2).aggregate_train(1,
                                                                                replies(np.random.default_rng(0))[:2])
    for key in plain:
        assert np.allclose(ours[key].numpy(), global_arrays()[key].numpy() - 0.1 * plain[key].numpy(), atol=1e-7)
    assert [u.client_key for u in seen] == [0, 1]
    (failure,) = failed_turns
    assert (failure.round, failure.client_key) == (1, 2) and "empty partition" in failure.reason


def test_a_non_finite_update_is_a_failure_and_left_out_of_the_aggregate():
    seen, failed_turns = [], []
    curious = CuriousFedAvg(lr=0.1, local_steps=1, batch_size=1, min_train_nodes=2, min_available_nodes=2,
                            observer=lambda updates, failures: (seen.extend(updates), failed_turns.extend(failures)))
    curious.configure_train(1, global_arrays(), ConfigRecord({}), FakeGrid())
    ok = replies(np.random.default_rng(0))
    poisoned = ok[1].content["arrays"]["w"].numpy().copy()
    poisoned[0, 0] = np.nan
    ok[1].content["arrays"]["w"] = Array(poisoned)
    ours, _ = curious.aggregate_train(1, ok)
    kept = replies(np.random.default_rng(0))
    plain, _ = FedAvg(min_train_nodes=2, min_available_nodes=2).aggregate_train(1, [kept[0], kept[2]])
    for key in plain:
        assert np.allclose(ours[key].numpy(), global_arrays()[key].numpy() - 0.1 * plain[key].numpy(), atol=1e-7)
    assert [u.client_key for u in seen] == [0, 2]
    (failure,) = failed_turns
    assert failure.client_key == 1 and failure.reason.startswith("non-finite update: 'w' holds NaN or inf")


def test_a_server_optimiser_aggregates_the_weights_each_clients_fedsgd_step_gives():
    """FedSGD under FedAdam: each gradient reply becomes W - lr * g, which Flower's own FedAdam
    aggregates; the observer still sees the gradients."""
    from flwr.serverapp.strategy import FedAdam

    from server.strategy import CuriousFedAdam, _stepped

    seen = []
    curious = CuriousFedAdam(lr=0.1, local_steps=1, batch_size=1, eta=0.05, eta_l=0.1,
                             observer=lambda updates, failures: seen.extend(updates),
                             min_train_nodes=3, min_available_nodes=3)
    curious.configure_train(1, global_arrays(), ConfigRecord({}), FakeGrid())
    ours, _ = curious.aggregate_train(1, replies(np.random.default_rng(0)))
    plain = FedAdam(eta=0.05, eta_l=0.1, min_train_nodes=3, min_available_nodes=3)
    plain.configure_train(1, global_arrays(), ConfigRecord({}), FakeGrid())
    sent = {k: v.numpy() for k, v in global_arrays().items()}
    stepped = replies(np.random.default_rng(0))
    for reply in stepped:
        reply.content["arrays"] = _stepped(sent, reply.content["arrays"], 0.1)
    theirs, _ = plain.aggregate_train(1, stepped)
    for key in theirs:
        assert np.allclose(ours[key].numpy(), theirs[key].numpy())
    assert seen[0].kind == "gradient" and seen[0].exact  # the attack still observes gradients


def test_make_strategy_builds_the_configured_flower_strategy():
    from fedgraph_sim.config import load_config
    from server.strategy import CuriousFedAvgM, make_strategy

    config = load_config(None, ["aggregation.strategy=fedavgm", "aggregation.lr=0.5", "aggregation.momentum=0.9"])
    strategy = make_strategy(config, None)
    assert isinstance(strategy, CuriousFedAvgM)
    assert (strategy.server_learning_rate, strategy.server_momentum) == (0.5, 0.9)
    assert not strategy.same_batch
    assert make_strategy(load_config(None, ["train.sampling=repeat"]), None).same_batch  # the server's own setting


def test_keys_a_strategy_does_not_take_are_refused():
    from fedgraph_sim.config import load_config
    from fedgraph_sim.errors import ConfigError

    with pytest.raises(ConfigError, match="aggregation.momentum: fedadam takes no momentum; it takes lr, beta_1"):
        load_config(None, ["aggregation.strategy=fedadam", "aggregation.momentum=0.9"])
    with pytest.raises(ConfigError, match="aggregation.lr: fedavg takes no lr"):
        load_config(None, ["aggregation.lr=0.5"])


def test_the_train_config_says_whether_the_round_is_audited_and_nothing_stays_per_round():
    curious = CuriousFedAvg(lr=0.1, local_steps=5, batch_size=1, observer=lambda updates, failures: None,
                            audits=lambda server_round: server_round == 2, min_train_nodes=3, min_available_nodes=3)
    for round_ in (1, 2):
        messages = list(curious.configure_train(round_, global_arrays(), ConfigRecord({}), FakeGrid()))
        assert messages[0].content["config"]["audit"] == (round_ == 2)
        curious.aggregate_train(round_, replies(np.random.default_rng(0)))
    assert curious._sent == {}  # the sent weights of an aggregated round are not kept


def test_a_session_audits_only_rounds_an_attack_or_a_capture_reads():
    from fedgraph_sim.config import load_config
    from fedgraph_sim.runtime.session import Session

    attacked = Session(load_config(None, ["data.dataset=synthetic", "attack.names=[random]", "federation.rounds=2",
                                    "attack.rounds=[2]"]))
    assert [attacked.audits(r) for r in (1, 2)] == [False, True]
    silent = Session(load_config(None, ["data.dataset=synthetic", "attack.names=[]"]))
    assert not silent.audits(1)
    captured = Session(load_config(None, ["data.dataset=synthetic", "attack.names=[]"]), capture=True)
    assert captured.audits(1)


def test_a_run_in_which_every_client_failed_a_round_is_not_a_result(tmp_path):
    from fedgraph_sim.config import load_config
    from fedgraph_sim.errors import RunFailed
    from fedgraph_sim.runtime.session import Session
    from fedgraph_sim.threat import ClientFailure

    session = Session(load_config(None, ["data.dataset=synthetic", "attack.names=[]", "federation.rounds=2"]),
                      run_dir=tmp_path)
    try:
        session.observer([], [ClientFailure(1, 0, "RuntimeError: vmap\nmore"), ClientFailure(1, 1, "RuntimeError")])
        with pytest.raises(RunFailed,
                           match=r"round 1: every client turn failed, the first with RuntimeError: vmap;") as info:
            session.check_trained()
        assert "\n" not in str(info.value)
    finally:
        session.close()
    fine = Session(load_config(None, ["data.dataset=synthetic", "attack.names=[]"]), run_dir=tmp_path / "fine")
    try:
        fine.observer([], [])  # a round with no turn at all is not a failed one
        fine.check_trained()
    finally:
        fine.close()


def test_the_aggregate_does_not_depend_on_the_order_replies_arrive_in():
    """Float sums depend on their order: 1e8 + 1 - 1e8 is 0 in float32, 1e8 - 1e8 + 1 is 1."""
    sent = Message(RecordDict({"config": ConfigRecord({})}), dst_node_id=11, message_type="train")

    def reply(pid, value):
        arrays = ArrayRecord({"w": Array(np.full(2, value, np.float32))})
        metrics = MetricRecord({"num-examples": 1, "partition-id": pid, "train-seconds": 0.0})
        return Message(RecordDict({"arrays": arrays, "metrics": metrics}), reply_to=sent)

    values = {0: 1e8, 1: 1.0, 2: -1e8}

    def aggregate(strategy, order):
        if isinstance(strategy, CuriousFedAvg):
            strategy.configure_train(1, ArrayRecord({"w": Array(np.zeros(2, np.float32))}), ConfigRecord({}),
                                     FakeGrid())
        arrays, _ = strategy.aggregate_train(1, [reply(pid, values[pid]) for pid in order])
        return arrays["w"].numpy()

    plain = [aggregate(FedAvg(min_train_nodes=3, min_available_nodes=3), order) for order in ((0, 1, 2), (0, 2, 1))]
    assert not np.array_equal(*plain)  # Flower's own FedAvg: the arrival order shows in the result
    ours = [aggregate(CuriousFedAvg(lr=0.1, local_steps=5, batch_size=1, min_train_nodes=3, min_available_nodes=3),
                      order) for order in ((0, 1, 2), (0, 2, 1), (2, 1, 0))]
    assert np.array_equal(ours[0], ours[1]) and np.array_equal(ours[0], ours[2])


@pytest.mark.parametrize("overrides, sampled", [((), 4), (("federation.fraction_train=0.5",), 2),
                                                (("federation.fraction_train=0.1",), 1)])
def test_the_clients_sampled_per_round_follow_flowers_rule(overrides, sampled):
    from fedgraph_sim.config import load_config
    from server.strategy import make_strategy

    config = load_config(None, ["federation.num_clients=4", *overrides])
    strategy = make_strategy(config, None)
    assert config.federation.sampled_per_round() == sampled
    assert sampled == max(int(4 * strategy.fraction_train), strategy.min_train_nodes)


def test_a_fedsgd_step_keeps_the_arrays_that_have_no_gradient():
    """A user's model may hold buffers (batch norm's running statistics): a FedSGD reply carries
    gradients of its parameters only, and the stepped model keeps the buffers as sent."""
    from server.strategy import _stepped
    sent = {"lin.weight": np.ones((2, 2), np.float32), "norm.running_mean": np.full(2, 0.5, np.float32),
            "norm.num_batches_tracked": np.array(3, np.int64)}
    stepped = _stepped(sent, ArrayRecord({"lin.weight": Array(np.full((2, 2), 2.0, np.float32))}), 0.1)
    assert list(stepped) == list(sent)
    np.testing.assert_allclose(stepped["lin.weight"].numpy(), 0.8)
    tracked = stepped["norm.num_batches_tracked"].numpy()
    assert tracked == 3 and tracked.dtype == np.int64
    np.testing.assert_array_equal(stepped["norm.running_mean"].numpy(), sent["norm.running_mean"])
