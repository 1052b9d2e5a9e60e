"""``fedgraph_sim.curious`` over a user's Flower strategy (``fedgraph_sim.runtime.user_app``): the
strategy keeps its settings and class, gains the server's eye, and refuses what a user's clients
would have to do themselves."""

import pytest
from flwr.serverapp.strategy import FedAdam, FedAvg

from fedgraph_sim.runtime import curious
from fedgraph_sim.config import load_config
from fedgraph_sim.errors import ConfigError
from server.strategy import Curious

SYNTHETIC = ["data.dataset=synthetic", "data.options={num_graphs: 20}", "attack.names=[random]"]


def test_the_watched_strategy_is_the_users_with_the_servers_eye(tmp_path):
    config = load_config(None, [*SYNTHETIC, f"output.dir={tmp_path}", "train.lr=0.05"])
    strategy = curious(FedAvg(fraction_train=0.5, min_available_nodes=3), config=config,
                                    attacks=["random", "majority_type"], run_dir=tmp_path / "run")
    try:
        assert isinstance(strategy, FedAvg) and isinstance(strategy, Curious)
        assert (strategy.fraction_train, strategy.min_available_nodes, strategy.lr) == (0.5, 3, 0.05)
        assert strategy.averages_gradients  # plain FedAvg in FedSGD: the mean gradient, one step
        assert list(strategy.session.attacks) == ["random", "majority_type"]
        assert (tmp_path / "run" / "config.yaml").is_file()
        with pytest.raises(TypeError, match="already watched"):
            curious(strategy, config=config)
    finally:
        strategy.session.close()
    adam = curious(FedAdam(), config=config, run_dir=tmp_path / "adam")
    adam.session.close()
    assert not adam.averages_gradients  # a server optimiser aggregates the clients' stepped weights


@pytest.mark.parametrize("overrides, key", [
    (["defenses=[{name: prune, p: 0.9}]"], "defenses: in your own app the clients apply"),
    (["threat.secure_aggregation=secaggplus"], "threat.secure_aggregation: secaggplus runs"),
])
def test_what_the_users_clients_must_do_themselves_is_refused(tmp_path, overrides, key):
    config = load_config(None, [*SYNTHETIC, f"output.dir={tmp_path}", *overrides])
    with pytest.raises(ConfigError, match=key):
        curious(FedAvg(), config=config)
