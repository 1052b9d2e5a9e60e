import math
from pathlib import Path

import pytest

from fedgraph_sim.errors import ConfigError
from fedgraph_sim.runtime.sweeps import build_sweep
from fedgraph_sim.runtime.sweeps.spec import expand_defenses

BASE = {"data": {"dataset": "synthetic", "options": {"num_graphs": 40}}, "federation": {"num_clients": 2}}


def test_list_valued_parameters_expand_into_a_grid():
    settings = expand_defenses([{"name": "prune", "p": [0.5, 0.9]}, {"name": "dp_gradients", "sigma": [0.1, 0.2]}], 0)
    assert [s.label for s in settings] == [
        "prune(p=0.5)+dp_gradients(sigma=0.1)", "prune(p=0.5)+dp_gradients(sigma=0.2)",
        "prune(p=0.9)+dp_gradients(sigma=0.1)", "prune(p=0.9)+dp_gradients(sigma=0.2)"]
    assert {(s.family, s.param) for s in settings} == {("prune+dp_gradients", "p")}
    assert [s.strength for s in settings] == [0.5, 0.5, 0.9, 0.9]
    none, = expand_defenses("none", 1)
    assert (none.stack, none.family, none.strength) == ([], "none", 0.0)
    fixed, = expand_defenses({"name": "dp_sgd", "clip": 1.0, "noise_multiplier": 0.5}, 2)
    assert fixed.param is None and math.isnan(fixed.strength)  # two numbers, no sweep: no single strength
    one, = expand_defenses({"name": "dp_sgd", "clip": 1.0, "noise_multiplier": [0.5]}, 3)
    assert (one.param, one.strength) == ("noise_multiplier", 0.5)


def test_sweep_expands_federations_and_cells_with_stable_unique_ids():
    spec = {"name": "s", "base": BASE,
            "axes": {"seeds": [0, 1], "attacks": ["random", "idlg@short"],
                     "defenses": ["none", {"name": "dp_gradients", "sigma": [0.1, 0.5]}]}}
    spec["base"] = {**BASE, "attack": {"params": {"idlg@short": {"iterations": 3}}}}
    sweep = build_sweep(spec, Path("."))
    assert len(sweep.federations) == 2 * 3 and len(sweep.cells) == 2 * 3 * 2
    assert len({f.id for f in sweep.federations}) == 6 and len({c.id for c in sweep.cells}) == 12
    assert [f.id for f in build_sweep(spec, Path(".")).federations] == [f.id for f in sweep.federations]
    fed = sweep.federations[1]
    assert fed.config.attack.names == [] and fed.config.attack.params == {}
    assert fed.config.defenses == [{"name": "dp_gradients", "sigma": 0.1}]
    cell = next(c for c in sweep.cells if c.attack == "idlg@short")
    assert cell.config.attack.names == ["idlg@short"]
    assert cell.config.attack.params == {"idlg@short": {"iterations": 3}}


def test_victim_graphs_sets_the_rounds_from_client_zero():
    sweep = build_sweep({"base": BASE, "victim_graphs": 1000}, Path("."))
    fed = sweep.federations[0]
    from fedgraph_sim.scenario import build_scenario

    assert fed.config.federation.rounds == len(build_scenario(fed.config).clients[0])


@pytest.mark.parametrize("spec,message", [
    ({"axes": {"colours": [1]}}, "axes.colours: no such axis; valid axes: datasets, seeds, attacks, defenses"),
    ({"grid": 1}, "grid: no such sweep key"),
    ({"axes": {"attacks": []}}, "axes.attacks: must be a non-empty list"),
    ({"axes": {"attacks": ["nope"]}}, "axes.attacks: unknown attack 'nope'"),
    ({"axes": {"defenses": [{"name": "dp_sgd", "target_epsilon": [0.01]}]}},
     "defenses.0.target_epsilon: 0.01 cannot be reached"),
    ({"axes": {"defenses": [[{"name": "prune", "p": 0.1}, {"name": "nope"}]]}},
     "axes.defenses.0.1.name: unknown defense 'nope'"),
    ({"axes": {"defenses": [{"name": "prune", "p": ["a"]}]}}, "axes.defenses.0.p: swept values must be numbers"),
    ({"reference": "graphdlg_table99"}, "reference: no table 'graphdlg_table99'"),
    ({"base": [BASE]}, "base: must be a mapping of run-config keys"),
    ({"victim_graphs": "100"}, "victim_graphs: must be an integer >= 1 (got '100')"),
    ({"victim_graphs": 0}, "victim_graphs: must be an integer >= 1 (got 0)"),
    ({"metrics": ["adj_auc", "nope"]}, "metrics: unknown metric 'nope'; valid: node_type_accuracy"),
    ({"metrics": {"entries": "full"}}, "metrics: a non-empty list of metric names, the tables' columns"),
])
def test_bad_specs_name_the_key(spec, message):
    with pytest.raises(ConfigError) as info:
        build_sweep({"base": BASE, **spec}, Path(__file__).resolve().parents[2] / "experiments/configs/reproduce")
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_settings_axis_is_a_grid_of_run_config_keys():
    from fedgraph_sim.runtime.sweeps.spec import expand_settings

    assert [label for label, _ in expand_settings({"train.batch_size": [1, 4], "train.local_steps": 5}, 0)] == [
        "batch_size=1,local_steps=5", "batch_size=4,local_steps=5"]
    spec = {"name": "s", "base": BASE, "axes": {"attacks": ["random"],
                                                 "settings": [{"train.batch_size": [1, 2]}]}}
    sweep = build_sweep(spec, Path("."))
    assert [f.config.train.batch_size for f in sweep.federations] == [1, 2]
    assert [f.columns()["setting"] for f in sweep.federations] == ["batch_size=1", "batch_size=2"]
    with pytest.raises(ConfigError, match="axes.settings.0"):
        build_sweep({**spec, "axes": {"settings": ["batch_size=4"]}}, Path("."))


def test_a_labelled_setting_names_its_fixed_keys_and_shows_the_swept_ones():
    from fedgraph_sim.runtime.sweeps.spec import expand_settings

    item = {"label": "wide", "model.hidden": 300, "train.lr": [0.1, 0.3]}
    assert expand_settings(item, 0) == [("wide,lr=0.1", {"model.hidden": 300, "train.lr": 0.1}),
                                        ("wide,lr=0.3", {"model.hidden": 300, "train.lr": 0.3})]
    assert expand_settings({"label": "wide", "model.hidden": 300}, 0) == [("wide", {"model.hidden": 300})]
    for bad, message in [({"label": "a b", "model.hidden": 300}, "axes.settings.2.label"),
                         ({"label": "wide"}, "a label needs run-config keys")]:
        with pytest.raises(ConfigError, match=message):
            expand_settings(bad, 2)


def test_fedgig_fig2_varies_one_amc_setting_at_a_time_around_the_defaults():
    from attacks.base import build_attack
    from fedgraph_sim.runtime.sweeps.spec import load_sweep

    sweep = load_sweep(Path(__file__).resolve().parents[2] / "experiments/configs/reproduce/fedgig_fig2.yaml")
    assert len(sweep.federations) == 4  # one capture per dataset, replayed to every variant
    default = build_attack("fedgig").params
    seen = {"n_max": set(), "alpha": set(), "beta": set()}
    for cell in sweep.cells:
        if cell.attack == "aux_mean_adjacency":
            continue
        params = build_attack("fedgig", cell.config.attack.params.get(cell.attack)).params
        changed = [k for k in seen if getattr(params, k) != getattr(default, k)]
        assert len(changed) <= 1 and cell.config.threat.features_known == [cell.attack]
        for key in changed:
            seen[key].add(getattr(params, key))
    assert seen == {"n_max": {2, 3, 5, 6, 7}, "alpha": {0.05, 0.1, 0.13, 0.2, 0.3}, "beta": {0.3, 0.4, 0.6, 0.7}}


def test_metrics_are_the_tables_columns_and_change_no_job():
    spec = {"name": "s", "base": BASE, "axes": {"attacks": ["random"]}}
    plain = build_sweep(spec, Path("."))
    listed = build_sweep({**spec, "metrics": ["adj_auc", "node_type_accuracy"]}, Path("."))
    assert plain.metrics is None and listed.metrics == ("adj_auc", "node_type_accuracy")
    assert [c.id for c in listed.cells] == [c.id for c in plain.cells]


def test_a_setting_may_name_its_own_dataset_unless_the_sweep_has_a_datasets_axis():
    settings = [{"label": "plain", "train.lr": 0.1},
                {"label": "small", "data": {"dataset": "synthetic", "max_nodes": 8}}]
    spec = {"name": "s", "base": BASE, "axes": {"attacks": ["random"], "settings": settings}}
    sweep = build_sweep(spec, Path("."))
    assert [(f.config.data.dataset, f.config.data.max_nodes) for f in sweep.federations] == [
        (BASE["data"]["dataset"], BASE["data"].get("max_nodes")), ("synthetic", 8)]
    with pytest.raises(ConfigError, match="axes.settings: 'small' names its own dataset"):
        build_sweep({**spec, "axes": {**spec["axes"], "datasets": ["synthetic"]}}, Path("."))
