import pytest

from fedgraph_sim.config import DEFAULT_CONFIG, load_config
from fedgraph_sim.errors import ConfigError


def test_default_config_matches_the_issue():
    c = load_config()
    assert (c.data.dataset, c.federation.num_clients, c.partition.alpha) == ("MUTAG", 4, 1.0)
    assert (c.model.conv, c.model.layers, c.model.hidden) == ("gcn", 2, 16)
    assert (c.train.batch_size, c.train.mode, c.federation.rounds) == (1, "fedsgd", 1)
    assert c.attack.names == ["random", "dlg", "idlg", "inverting_gradients"]
    assert c.attack.clients == "all"


def test_dotted_overrides_are_parsed_as_yaml():
    c = load_config(DEFAULT_CONFIG, ["federation.rounds=3", "attack.names=[random,dlg]",
                                     "attack.clients=[0, 2]", "data.dataset=synthetic",
                                     "attack.params.dlg.iterations=5"])
    assert c.federation.rounds == 3 and c.attack.names == ["random", "dlg"]
    assert c.attack.clients == [0, 2] and c.attack.params["dlg"]["iterations"] == 5
    assert load_config(None, ["train.local_steps=3"]).train.mode == "fedavg"


@pytest.mark.parametrize("override, message", [
    ("federation.rounds=two", r"^federation.rounds: .*\(got 'two'\)$"),
    ("federation.nope=1", r"^federation.nope: no such config key; valid keys here: num_clients"),
    ("nope.x=1", r"^nope: no such config key"),
    ("attack.rounds=[2]", r"^attack.rounds: round 2 is out of range 1..1$"),
    ("attack.clients=[4]", r"^attack.clients: client 4 is out of range 0..3$"),
    ("partition.alpha=0", r"^partition.alpha: "),
    ("model.hidden=0", r"^model.hidden: "),
    ("model.conv=gine", r"^model.conv: unknown model 'gine'; valid models: gcn, gat, sage, gin"),
    ("aux.source=client:9", r"^aux.source: "),
    ("federation.rounds", r"overrides are dotted key=value pairs"),
    ("seed=-1", r"^seed: .*\(got -1\)$"),
    (f"seed={2**64}", r"^seed: "),
    ("data.subset_seed=-3", r"^data.subset_seed: "),
    ("train.lr=.inf", r"^train.lr: "),
    ("attack.time_budget=.inf", r"^attack.time_budget: "),
    ("attack.time_budgets={dlg: .nan}", r"^attack.time_budgets.dlg: "),
    ("attack.limit={random: -1}", r"^attack.limit.random: "),
    ("attack.limit={nosuch: 1}", r"^attack.limit.nosuch: 'nosuch' is not in attack.names \(random, dlg"),
    ("attack.names=[dlg, random, dlg]", r"^attack.names: dlg named twice"),
    ("attack.names=[random@x/y]", r"^attack.names: 'random@x/y' is not an attack name or name@label"),
    ("attack.clients=[0];threat.secure_aggregation=true", r"^attack.clients: with threat.secure_aggregation"),
    ("federation.num_cpus=1000", r"^federation.num_cpus: .*this machine has"),
    ("model.task=edge", r"^model.task: "),
    ("threat.per_node_gradients=true", r"^threat.per_node_gradients: .*needs model.task: node"),
    ("model.task=node;threat.per_node_gradients=true;train.batch_size=2", r"^threat.per_node_gradients: "),
])
def test_bad_input_names_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, override.split(";"))


def test_client_cpus_are_checked_against_this_machine_only_without_a_cluster():
    config = load_config(None, ["federation.num_cpus=1000", "federation.ray_address=auto"])
    assert config.federation.num_cpus == 1000  # the cluster's scheduler decides whether an actor fits


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="--config: no such file"):
        load_config(tmp_path / "none.yaml")


def test_one_parser_reads_every_override():
    from fedgraph_sim.config import parse_overrides

    assert parse_overrides(["federation.rounds=2", "attack.names=[random, dlg]", "data.max_nodes="]) == {
        "federation.rounds": 2, "attack.names": ["random", "dlg"], "data.max_nodes": None}
    with pytest.raises(ConfigError, match=r"^attack.names: the value is not valid YAML"):
        parse_overrides(["attack.names=[random"])
    with pytest.raises(ConfigError, match="overrides are dotted key=value pairs"):
        parse_overrides(["federation.rounds"])


def test_attack_rounds_select_all_a_list_or_every_kth():
    every = load_config(None, ["federation.rounds=20", "attack.rounds={every: 5}"]).attack
    assert [r for r in range(1, 21) if every.selects_round(r)] == [1, 6, 11, 16]
    later = load_config(None, ["federation.rounds=20", "attack.rounds={every: 10, start: 10}"]).attack
    assert [r for r in range(1, 21) if later.selects_round(r)] == [10, 20]
    listed = load_config(None, ["federation.rounds=3", "attack.rounds=[1, 3]"]).attack
    assert [r for r in range(1, 4) if listed.selects_round(r)] == [1, 3]
    assert all(load_config(None, []).attack.selects_round(r) for r in (1, 99))
    with pytest.raises(ConfigError, match="attack.rounds.start: round 30 is after the last round"):
        load_config(None, ["federation.rounds=20", "attack.rounds={every: 5, start: 30}"])
    with pytest.raises(ConfigError, match="attack.rounds"):
        load_config(None, ["attack.rounds={every: 0}"])


def test_the_config_hash_names_the_resolved_configuration():
    from fedgraph_sim.config import config_hash

    a = load_config(None, ["federation.rounds=2"])
    assert config_hash(a) == config_hash(load_config(None, ["federation.rounds=2"]))
    assert config_hash(a) != config_hash(load_config(None, ["federation.rounds=3"]))
    assert len(config_hash(a)) == 64
