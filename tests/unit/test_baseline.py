"""The centralised baseline: the federation's model and data trained without federation."""

import torch

from fedgraph_sim.config import load_config
from fedgraph_sim.models import GraphClassifier, build_model, evaluate
from fedgraph_sim.runtime.baseline import CentralisedBaseline
from fedgraph_sim.scenario import build_scenario


def _baseline(overrides=()):
    # a degree block makes the synthetic classes (chains or rings) learnable for this small GCN
    config = load_config(None, ["data.dataset=synthetic", "data.degree_feature=true", "data.test_fraction=0.25",
                                "federation.num_clients=4", "train.lr=0.5", "train.batch_size=4", *overrides])
    scenario = build_scenario(config)
    torch.manual_seed(config.seed)
    ds = scenario.dataset
    initial = build_model(config.model, ds.num_features, ds.num_classes).state_dict()
    return CentralisedBaseline(config, scenario, initial), [ds.graphs[i] for i in scenario.test], initial, config


def test_round_zero_is_the_initial_model_and_training_lowers_the_training_loss():
    baseline, test, initial, config = _baseline()
    model = GraphClassifier(baseline.dataset.num_features, 2)
    model.load_state_dict(initial)
    assert baseline.evaluate(0, test)["centralised_test_accuracy"] == evaluate(model, test)["test_accuracy"]
    pooled = [baseline.dataset.graphs[int(i)] for i in baseline.pool]
    start = baseline.evaluate(0, pooled)["centralised_test_loss"]
    assert baseline.evaluate(40, pooled)["centralised_test_loss"] < start
    assert baseline.round == 40


def test_it_trains_on_the_clients_data_only_and_is_reproducible():
    baseline, test, _, _ = _baseline()
    test_ids = {int(g.graph_id) for g in test}
    assert not test_ids & {int(i) for i in baseline.pool}  # the test split stays out
    again, _, _, _ = _baseline()
    assert baseline.evaluate(5, test) == again.evaluate(5, test)
