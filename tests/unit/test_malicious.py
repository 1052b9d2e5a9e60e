"""The malicious server's two hooks (``server/malicious.py``): each client of an attacked round
receives its own slot's part, the replies are read knowing it, and a crafted round is never
averaged into the model."""

import numpy as np
import pytest
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict

from fedgraph_sim.crafting import Crafting
from fedgraph_sim.threat import CraftedRound
from server.malicious import Malicious
from server.strategy import CuriousFedAvg

pytestmark = pytest.mark.usefixtures("flower_task")

NODES = (11, 12, 13)
PARTITIONS = {11: 2, 12: 0, 13: 1}  # node ids drawn in another order than the partitions


class SlotShift(Crafting):
    """Slot ``s`` receives the honest weights plus ``10 * (s + 1)``: which part reached whom is
    readable from the arrays alone."""

    name, paper = "slot_shift", "none (a test double)"

    def __init__(self):
        super().__init__()
        self.seeds = []

    def craft(self, weights, model, clients, seed):
        self.seeds.append(seed)
        parts = [{k: v + 10.0 * (slot + 1) for k, v in weights.items()} for slot in range(clients)]
        return CraftedRound(self.name, base=parts[0], slots={}, plan={"clients": clients}), parts


class FakeGrid:
    def get_node_ids(self):
        return list(NODES)


class MaliciousFedAvg(Malicious, CuriousFedAvg):  # the composition make_strategy builds
    pass


def honest_arrays():
    return ArrayRecord({"w": Array(np.ones((3, 2), np.float32)), "b": Array(np.zeros(2, np.float32))})


def strategy(seen, audited=(1,)):
    s = MaliciousFedAvg(lr=0.1, local_steps=1, batch_size=1, observer=lambda updates, failures: seen.extend(updates),
                        audits=lambda server_round: server_round in audited, min_train_nodes=3, min_available_nodes=3)
    s.arm(SlotShift(), {"conv": "gcn"}, seed=7)
    for node, partition in PARTITIONS.items():  # what the roll call learns before round 1
        s.note_partition(node, partition)
    return s


def replies(messages):
    """Each node replies a gradient of ones times its partition, naming its partition."""
    out = []
    for m in messages:
        node = m.metadata.dst_node_id
        arrays = ArrayRecord({k: Array(np.full(v.numpy().shape, PARTITIONS[node], np.float32))
                              for k, v in m.content["arrays"].items()})
        metrics = MetricRecord({"num-examples": 1, "partition-id": PARTITIONS[node], "loss": 0.5})
        out.append(Message(RecordDict({"arrays": arrays, "metrics": metrics}), reply_to=m))
    return out


def test_each_client_of_an_attacked_round_receives_its_slots_part_in_partition_order():
    s = strategy([])
    messages = list(s.configure_train(1, honest_arrays(), ConfigRecord({}), FakeGrid()))
    got = {m.metadata.dst_node_id: m.content["arrays"]["w"].numpy() for m in messages}
    for node, partition in PARTITIONS.items():  # slot = the partition's rank, whatever the node ids
        np.testing.assert_array_equal(got[node], np.ones((3, 2)) + 10.0 * (partition + 1))
    assert all(m.content["config"]["lr"] == 0.1 for m in messages)  # the round's config still goes along
    assert s.crafting.seeds == [7 * 100_003 + 1]


def test_the_replies_are_read_knowing_each_clients_part_and_the_round_is_not_aggregated():
    seen = []
    s = strategy(seen)
    messages = list(s.configure_train(1, honest_arrays(), ConfigRecord({}), FakeGrid()))
    arrays, metrics = s.aggregate_train(1, replies(messages))
    for key in ("w", "b"):  # the honest model the server had, not a step on the crafted replies
        np.testing.assert_array_equal(arrays[key].numpy(), honest_arrays()[key].numpy())
    assert dict(metrics) == {"crafted-round": 1}
    assert [u.client_key for u in seen] == [0, 1, 2]
    for update in seen:
        slot = update.client_key  # partitions 0, 1, 2 took slots 0, 1, 2
        np.testing.assert_array_equal(update.global_weights["w"], np.ones((3, 2)) + 10.0 * (slot + 1))
        assert update.crafted.crafting == "slot_shift" and update.crafted.slots == {update.client_key: slot}
        np.testing.assert_array_equal(update.returned["w"], np.full((3, 2), update.client_key))


def test_a_round_the_server_does_not_attack_is_sent_and_aggregated_honestly():
    seen = []
    s = strategy(seen, audited=())
    messages = list(s.configure_train(2, honest_arrays(), ConfigRecord({}), FakeGrid()))
    for m in messages:
        np.testing.assert_array_equal(m.content["arrays"]["w"].numpy(), np.ones((3, 2)))
    arrays, metrics = s.aggregate_train(2, replies(messages))
    # FedSGD: the global model steps by lr times the mean gradient (partitions 0, 1, 2 -> 1)
    np.testing.assert_allclose(arrays["w"].numpy(), np.ones((3, 2)) - 0.1 * 1.0, atol=1e-7)
    assert "crafted-round" not in dict(metrics)
    assert s.crafting.seeds == [] and all(u.crafted is None for u in seen)
