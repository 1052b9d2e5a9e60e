"""Flower's SecAgg+ in a real federation (run_simulation on Ray, 3 clients): one client fails its
turn after the keys are shared and drops out; the round completes, the drop is a row, and the
aggregate the server observes is the strategy's simulated sum of the survivors within SecAgg+'s
quantisation."""

import numpy as np
import pytest

from fedgraph_sim.capture import CaptureStore
from fedgraph_sim.config import load_config
from fedgraph_sim.rows.store import read_rows
from fedgraph_sim.runtime import Session
from fedgraph_sim.runtime.simulation import run
from server.secaggplus import revealed_mean_error_bound

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_ray")]
# client 0's partition is empty: its turn fails in SecAgg+'s masked-vector stage, after the shares
THREE_ONE_EMPTY = ["data.dataset=synthetic", "seed=1", "partition.alpha=0.01", "partition.min_partition_size=0",
                   "federation.num_clients=3", "federation.rounds=2", "train.batch_size=2", "attack.names=[random]"]


def federation(tmp_path, name, secure_aggregation):
    config = load_config(None, [*THREE_ONE_EMPTY, f"threat.secure_aggregation={secure_aggregation}",
                                f"output.dir={tmp_path}"])
    result = run(config, session=Session(config, capture=True), run_dir=tmp_path / name)
    return config, result, CaptureStore(result.run_dir)


def test_a_secaggplus_round_survives_a_dropout_and_reveals_the_sum_within_its_quantisation(tmp_path):
    config, result, store = federation(tmp_path, "secaggplus", "secaggplus")
    _, _, simulated = federation(tmp_path, "sum", "true")
    rows = read_rows(result.run_dir)
    dropped = [r for r in rows if r["status"] == "client_failed"]
    assert sorted(r["round"] for r in dropped) == [1, 2] and all(r["client"] == 0 for r in dropped)
    assert all("empty partition" in r["message"] and "dropped out of SecAgg+" in r["message"] for r in dropped)
    attacked = [r for r in rows if r["status"] == "ok"]
    assert len(attacked) == 2 * 2 * 2  # rounds x survivors x graphs per batch
    assert all(r["observed"] == "secaggplus_aggregate" and r["aggregated_clients"] == 2 and r["dropped_clients"] == 1
               for r in attacked)
    assert len(result.failed_turns) == 2  # the run reports the two failed turns

    (observed,), _ = store.read(1)
    (summed,), _ = simulated.read(1)  # round 1: both runs sent the same initial weights
    assert observed.members == summed.members == (1, 2) and observed.num_examples == summed.num_examples == 4
    bound = revealed_mean_error_bound([2, 2], config.threat.secaggplus,
                                      max(float(np.abs(v).max()) for v in summed.returned.values()))
    error = max(float(np.abs(observed.returned[k] - summed.returned[k]).max()) for k in summed.returned)
    assert 0 < error <= bound
