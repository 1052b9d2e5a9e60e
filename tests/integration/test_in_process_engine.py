"""A federation whose ClientApps run in this process (a sweep's or an audit's job) gives the rows
of the same federation on Ray's client actors: DP-SGD's accountant state across rounds, the
capture the attacks replay and Flower's SecAgg+ included."""

import pytest
import torch

from fedgraph_sim.capture import CaptureStore
from fedgraph_sim.config import load_config
from fedgraph_sim.rows.store import read_rows
from fedgraph_sim.runtime import Session
from fedgraph_sim.runtime.simulation import run

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_ray")]
VARYING = {"seconds", "run", "info_seconds_t0", "train_seconds"}  # wall times and the run's own name


@pytest.fixture
def one_thread():
    # as a sweep's job runs, and as Ray runs a 1-CPU actor: the same float reductions
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _rows(run_dir):
    return sorted(({k: v for k, v in r.items() if k not in VARYING and not k.startswith("info_seconds")}
                   for r in read_rows(run_dir)), key=lambda r: (r["round"], r["client"], r["graph_id"], r["attack"]))


@pytest.mark.parametrize("setting", [["defenses=[{name: dp_sgd, noise_multiplier: 0.5, clip: 1.0}]"],
                                     ["threat.secure_aggregation=secaggplus", "federation.num_clients=3"]],
                         ids=["dp_sgd", "secaggplus"])
def test_the_in_process_engine_gives_the_rows_of_rays(tmp_path, one_thread, setting):
    config = load_config(None, ["data.dataset=synthetic", "data.options={num_graphs: 60}", "federation.num_clients=2",
                                "federation.rounds=2", "train.local_steps=2", "attack.names=[random,idlg]",
                                "attack.params.idlg.iterations=3", *setting, f"output.dir={tmp_path}"])
    on_ray = run(config, session=Session(config, capture=True), run_dir=tmp_path / "ray")
    here = run(config, session=Session(config, capture=True), run_dir=tmp_path / "here", engine="in_process")
    assert len(_rows(here.run_dir)) > 0 and _rows(here.run_dir) == _rows(on_ray.run_dir)
    for round_ in (1, 2):  # the updates the server observed, bit for bit
        (a, *_), _ = CaptureStore(on_ray.run_dir).read(round_)
        (b, *_), _ = CaptureStore(here.run_dir).read(round_)
        assert all(torch.equal(torch.as_tensor(a.returned[k]), torch.as_tensor(b.returned[k])) for k in a.returned)


def test_an_unknown_engine_is_refused(tmp_path):
    config = load_config(None, ["data.dataset=synthetic", f"output.dir={tmp_path}"])
    with pytest.raises(ValueError, match="engine: unknown 'threads'; valid: ray, in_process"):
        run(config, engine="threads")
