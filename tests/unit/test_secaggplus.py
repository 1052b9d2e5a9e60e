"""The curious server behind Flower's SecAgg+, through Flower's own workflow and client mod, with the
messages handed straight to the project's ClientApp (no Ray): it observes the revealed mean, which
equals the exact mean within SecAgg+'s quantisation; a client that drops out after the keys are
shared is a failed turn and the round completes; a halted round is a failed turn per client."""

import copy
import dataclasses

import numpy as np
import pytest
from flwr.app import Context, RecordDict
from flwr.common import parameters_to_ndarrays
from flwr.common.secure_aggregation.quantization import dequantize, quantize
from flwr.compat.common import recorddict_compat as compat
from flwr.server import ServerConfig
from flwr.server.compat import LegacyContext
from flwr.server.workflow import DefaultWorkflow
from flwr.serverapp import Grid

from attacks.base import AttackFailed
from clients.secaggplus_mod import QUANTISATION_STREAM
from clients.turn import train_reply, turn_seed
from fedgraph_sim.config import SecAggPlusConfig, load_config
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.metrics.gsm import gsm
from fedgraph_sim.runtime.apps import make_client_app
from server.secaggplus import CuriousSecAggPlus, SecAggPlusRounds, revealed_mean_error_bound
from server.strategy import initial_arrays, make_strategy
from tests.unit import grain_cases
from tests.unit.test_client import instruction
from tests.unit.test_grain_noise import attack as grain_attack

pytestmark = pytest.mark.usefixtures("flower_task")
BASE = ["data.dataset=synthetic", "threat.secure_aggregation=secaggplus", "attack.names=[]"]


class DirectGrid(Grid):
    """Hands each message straight to a ClientApp in this process, one node per partition;
    ``silent`` nodes never reply from ``silent_from`` on (the n-th message a node receives, 1-based)."""

    def __init__(self, app, partitions: int, silent: dict[int, int] | None = None) -> None:
        self.app, self.silent = app, silent or {}
        self.contexts = {100 + p: Context(run_id=1, node_id=100 + p, node_config={"partition-id": p},
                                          state=RecordDict(), run_config={}) for p in range(partitions)}
        self.received = {node: 0 for node in self.contexts}

    def get_node_ids(self):
        return list(self.contexts)

    def send_and_receive(self, messages, *, timeout=None):
        replies = []
        for msg in messages:
            node = msg.metadata.dst_node_id
            self.received[node] += 1
            if node - 100 in self.silent and self.received[node] >= self.silent[node - 100] + 1:  # +1: the roll call
                continue
            replies.append(self.app(copy.deepcopy(msg), self.contexts[node]))  # each node its own copy
        return replies

    run = type("Run", (), {"run_id": 1})()

    def set_run(self, run): ...
    def create_message(self, *args, **kwargs): ...
    def push_messages(self, messages): ...
    def pull_messages(self, message_ids): ...


def federation(tmp_path, overrides=(), silent=None):
    """One SecAgg+ federation through Flower's workflow; returns the config, what the server
    observed (updates, failures) and the final global arrays."""
    config = load_config(None, [*BASE, f"output.dir={tmp_path}", *overrides])
    observed = []
    curious = make_strategy(config, lambda updates, failures: observed.append((updates, failures)), str(tmp_path))
    initial = initial_arrays(config, 4, 2)
    fed = config.federation
    strategy = CuriousSecAggPlus(curious, initial, lambda r, arrays: None, fed.sampled_per_round(), fed.num_clients)
    context = LegacyContext(context=Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config={}),
                            config=ServerConfig(num_rounds=fed.rounds), strategy=strategy)
    grid = DirectGrid(make_client_app(lambda ctx: config.model_dump_json()), fed.num_clients, silent)
    curious.roll_call(grid)  # as the ServerApp does first: which partition each node trains
    DefaultWorkflow(fit_workflow=SecAggPlusRounds(**config.threat.secaggplus.model_dump()))(grid, context)
    return config, observed, context


@pytest.mark.parametrize("overrides", [[], ["train.local_steps=3", "train.batch_size=2"]], ids=["fedsgd", "fedavg"])
def test_the_server_observes_the_mean_within_the_quantisation(tmp_path, overrides):
    config, observed, _ = federation(tmp_path, ["federation.num_clients=3", *overrides])
    (updates, failures), = observed
    assert failures == []
    update, = updates
    assert update.observed == "secaggplus_aggregate" and update.members == (0, 1, 2)
    assert update.metrics["clients"] == 3 and update.metrics["dropped"] == 0
    assert update.batch_size == 3 * config.train.batch_size
    replies, counts = client_replies(config, tmp_path, (0, 1, 2), initial_arrays(config, 4, 2))
    mean = {k: sum(r[k].astype(np.float64) * n for r, n in zip(replies, counts)) / sum(counts) for k in replies[0]}
    bound = revealed_mean_error_bound(counts, config.threat.secaggplus,
                                      max(float(np.abs(v).max()) for v in mean.values()))
    error = max(float(np.abs(update.returned[k] - mean[k]).max()) for k in mean)
    assert 0 < error <= bound  # quantised: not the exact mean, and no further from it than the bound


def revealed_by_flowers_arithmetic(replies: list[dict], counts: list[int], params, seeds: list[int]) -> dict:
    """What SecAgg+ reveals of ``replies``, by Flower's own arithmetic without the masks (which cancel):
    each client weights its arrays by its rounded share of ``max_weight`` and rounds them
    stochastically (``seeds``: each client's NumPy seed); the server dequantises the sum, removes
    the clients' offsets and divides by the summed weights."""
    q, c = params.quantization_range, params.clipping_range
    keys, summed, total = list(replies[0]), None, 0
    for arrays, n, seed in zip(replies, counts, seeds):
        ratio = round(n / params.max_weight * q)
        np.random.seed(seed)
        quantised = quantize([arrays[k] * (ratio / q) for k in keys], c, q)
        summed = quantised if summed is None else [a + b for a, b in zip(summed, quantised)]
        total += ratio
    return {k: (v - (len(replies) - 1) * c) * (q / total) for k, v in zip(keys, dequantize(summed, c, q))}


def client_replies(config, tmp_path, partitions, sent):
    replies, counts = [], []
    for p in partitions:
        msg = instruction(None, tmp_path, lr=config.train.lr, steps=config.train.local_steps,
                          batch=config.train.batch_size, audit=False, arrays=sent)
        reply = train_reply(msg, p, config.model_dump_json())
        replies.append({k: v.numpy() for k, v in reply.content["arrays"].items()})
        counts.append(reply.content["metrics"]["num-examples"])
    return replies, counts


def test_the_protocol_reveals_flowers_arithmetic_on_the_replies_exactly(tmp_path):
    """Masks, shares and the modular sum cancel exactly: the revealed mean is the quantised weighted
    mean of the clients' own replies, rounded with each turn's seeded draws."""
    config, observed, _ = federation(tmp_path, ["federation.num_clients=2", "seed=3"])
    (update,), _ = observed[0]
    replies, counts = client_replies(config, tmp_path, (0, 1), initial_arrays(config, 4, 2))
    seeds = [turn_seed(3, 1, p, QUANTISATION_STREAM) for p in (0, 1)]
    expected = revealed_by_flowers_arithmetic(replies, counts, config.threat.secaggplus, seeds)
    for key, value in expected.items():
        np.testing.assert_allclose(update.returned[key], value, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("smiles, quantization_range", [("CCO", 2 ** 22), ("c1ccncc1", 2 ** 22),
                                                        ("CC(=O)Oc1ccccc1C(=O)O", 2 ** 26)])
def test_grain_on_a_one_client_aggregate_rebuilds_what_it_rebuilds_from_the_update(smiles, quantization_range):
    """Flower's SecAgg+ needs two clients, so a one-client aggregate is its arithmetic on one update
    (max_weight 1: the one molecule's weight is 1). The quantisation is a perturbation: paper GRAIN,
    whose span checks have absolute tolerances, refuses it; noise-aware GRAIN rebuilds the molecule
    it rebuilds from the exact update. (With Flower's max_weight 1000, one example gets the weight
    1/1000 and the levels are 1000 times coarser: both fail, see test below.)"""
    params = SecAggPlusConfig(max_weight=1, quantization_range=quantization_range)
    update, knowledge = grain_cases.observed(smiles)
    revealed = revealed_by_flowers_arithmetic([update.returned], [1], params, [0])
    aggregate = dataclasses.replace(update, returned=revealed)
    with pytest.raises(AttackFailed):
        grain_attack(aggregate, knowledge)
    from_update, from_aggregate = (grain_attack(u, knowledge, noise_aware=True) for u in (update, aggregate))
    g, schema = grain_cases.molecule(smiles)
    assert gsm(from_update.x, from_update.adj, g.x, grain_cases.dense_adj(g), schema)["full_iso"] == 1.0
    assert gsm(from_aggregate.x, from_aggregate.adj, from_update.x, from_update.adj, schema)["full_iso"] == 1.0


def test_flowers_default_weighting_drowns_a_one_example_update():
    params = SecAggPlusConfig()  # max_weight 1000: one example's weight is 1/1000
    update, knowledge = grain_cases.observed("CCO")
    revealed = revealed_by_flowers_arithmetic([update.returned], [1], params, [0])
    aggregate = dataclasses.replace(update, returned=revealed)
    error = max(float(np.abs(aggregate.returned[k] - update.returned[k]).max()) for k in update.returned)
    assert 1e-3 < error < revealed_mean_error_bound([1], params, 0.0)  # a level is 16/4194 = 3.8e-3 wide
    rec = grain_attack(aggregate, knowledge, noise_aware=True)
    g, schema = grain_cases.molecule("CCO")
    assert gsm(rec.x, rec.adj, g.x, grain_cases.dense_adj(g), schema)["full_iso"] == 0.0


def test_a_client_silent_after_the_keys_are_shared_drops_out_and_the_round_completes(tmp_path):
    config, observed, context = federation(tmp_path, ["federation.num_clients=3"], silent={1: 3})  # 3rd: its vector
    (update,), (failure,) = observed[0]
    assert update.members == (0, 2) and update.metrics["clients"] == 2 and update.metrics["dropped"] == 1
    assert failure.client_key == 1 and failure.reason.startswith("no reply; it dropped out of SecAgg+")
    replies, counts = client_replies(config, tmp_path, (0, 2), initial_arrays(config, 4, 2))
    seeds = [turn_seed(config.seed, 1, p, QUANTISATION_STREAM) for p in (0, 2)]
    expected = revealed_by_flowers_arithmetic(replies, counts, config.threat.secaggplus, seeds)
    for key, value in expected.items():  # the dropped client's masks removed with its neighbours' shares
        np.testing.assert_allclose(update.returned[key], value, rtol=1e-12, atol=1e-15)


def test_a_failed_turn_drops_out_with_its_reason(tmp_path):
    empty = ["seed=1", "partition.alpha=0.01", "partition.min_partition_size=0", "federation.num_clients=3",
             "federation.rounds=2"]  # client 0's partition is empty
    _, observed, _ = federation(tmp_path, empty)
    assert len(observed) == 2  # both rounds complete
    for (update,), (failure,) in observed:
        assert update.members == (1, 2) and update.metrics["dropped"] == 1
        assert failure.client_key == 0 and "empty partition" in failure.reason and "SecAgg+" in failure.reason


def test_a_halted_round_is_a_failed_turn_per_sampled_client_and_the_model_stays(tmp_path):
    config, observed, context = federation(tmp_path, ["federation.num_clients=3"], silent={0: 3, 1: 3})
    (updates, failures), = observed
    assert updates == [] and sorted(f.client_key for f in failures) == [0, 1, 2]
    assert all("halted the round in its collect masked vectors stage" in f.reason for f in failures)
    final = parameters_to_ndarrays(compat.arrayrecord_to_parameters(context.state.array_records["parameters"], True))
    for now, first in zip(final, initial_arrays(config, 4, 2).values()):
        np.testing.assert_array_equal(now, first.numpy())


@pytest.mark.parametrize("override, key", [
    ("threat.secaggplus.num_shares=2", "threat.secaggplus:"),
    ("threat.secaggplus.num_shares=9 threat.secaggplus.reconstruction_threshold=6",
     "threat.secaggplus.reconstruction_threshold:"),
    ("threat.secaggplus.reconstruction_threshold=1.5", "threat.secaggplus:"),
    ("threat.secaggplus.quantization_range=2147483648", "threat.secaggplus.quantization_range:"),
    ("threat.secaggplus.modulus_range=1000", "threat.secaggplus:"),
    ("threat.secaggplus.clipping_range=true", "threat.secaggplus.clipping_range:"),
    ("threat.secaggplus.timeout=0", "threat.secaggplus.timeout:"),
    ("federation.num_clients=1", "federation.num_clients:"),
    ("aggregation.strategy=fedadam", "aggregation.strategy:"),
    ("threat.secure_aggregation=secagg", "threat.secure_aggregation:"),
])
def test_bad_secaggplus_settings_are_one_line_naming_the_key(override, key):
    overrides = [o for o in BASE if not (override.startswith("threat.secure_aggregation") and "secure" in o)]
    with pytest.raises(ConfigError) as err:
        load_config(None, [*overrides, *override.split()])
    assert str(err.value).startswith(key) and "\n" not in str(err.value)


def test_a_defense_with_a_server_half_is_refused_behind_secaggplus():
    """Flower's central-DP wrappers wrap a Message-API strategy; SecAgg+ runs a legacy one."""
    from fedgraph_sim.runtime import Session

    config = load_config(None, [*BASE, "train.local_steps=2",
                                "defenses=[{name: flwr_central_dp, clipping_norm: 0.5, noise_multiplier: 1.0}]"])
    with pytest.raises(ConfigError, match=r"^defenses\.0\.name: flwr_central_dp has a server half"):
        Session(config)
