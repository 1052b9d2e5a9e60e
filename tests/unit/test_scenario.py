"""The case under audit: one dataset load per data section, splits that never overlap."""

import numpy as np
import torch

from fedgraph_sim import scenario
from fedgraph_sim.config import load_config

DATA = ["data.dataset=synthetic", "data.options={num_graphs: 40}", "data.test_fraction=0.2"]


def test_configs_with_the_same_data_section_load_it_once(monkeypatch):
    calls = []
    real = scenario.load_dataset
    monkeypatch.setattr(scenario, "load_dataset", lambda *a, **k: calls.append(a) or real(*a, **k))
    scenario._loaded.cache_clear()
    first = scenario.build_scenario(load_config(None, DATA))
    second = scenario.build_scenario(load_config(None, [*DATA, "federation.num_clients=3", "seed=5"]))
    assert len(calls) == 1 and len(second.clients) == 3
    assert first.dataset.graphs[0] is second.dataset.graphs[0]  # shared, as neither changed it
    scenario.build_scenario(load_config(None, [*DATA[:1], "data.options={num_graphs: 30}"]))
    assert len(calls) == 2  # another data section, another load


def test_a_shuffled_node_order_leaves_the_loaded_graphs_as_they_were():
    scenario._loaded.cache_clear()
    original = scenario.build_scenario(load_config(None, DATA)).dataset.graphs
    kept = [g.x.clone() for g in original]
    shuffled = scenario.build_scenario(load_config(None, [*DATA, "data.node_order=shuffled"])).dataset.graphs
    assert all(torch.equal(g.x, x) for g, x in zip(original, kept))
    assert any(not torch.equal(g.x, x) for g, x in zip(shuffled, kept))


def test_clients_test_and_auxiliary_graphs_never_overlap():
    case = scenario.build_scenario(load_config(None, [*DATA, "federation.num_clients=3"]))
    held = [*case.clients, case.test, case.aux]
    together = np.concatenate(held)
    assert len(together) == len(set(together.tolist())) and all(len(part) for part in case.clients)
