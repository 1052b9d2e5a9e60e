"""The honest-but-curious server inside a user's own Flower app.

On the server, :func:`curious` wraps the Flower strategy the user's ``ServerApp`` already builds:
it aggregates exactly as before, while every reply is turned into what the server observes and
attacked, and the run directory ``fedgraph-sim run`` writes (rows, summary, drawings, utility)
is written beside it::

    strategy = curious(FedAvg(fraction_evaluate=0.0), config="federation.yaml")
    strategy.start(grid=grid, initial_arrays=ArrayRecord(model.state_dict()), num_rounds=3)

On the clients, :class:`Federation` is what a Flower example's ``load_data`` is: each client's
partition of the config's data (its Dirichlet split), the graphs of each local step of a round
(:meth:`Federation.batches`), and, in the same call, the record of those graphs that the
server's evaluator scores reconstructions against. The config's ``train`` section says what the
clients do: ``local_steps: 1`` replies the gradient (FedSGD: the server steps), more reply the
trained weights. Defenses are the clients' own business here, so a config with ``defenses`` is
refused, as is Flower's SecAgg+ (its own workflow, ``fedgraph-sim run``).
"""

from __future__ import annotations

import json
import logging
from functools import cached_property, lru_cache
from pathlib import Path

from flwr.app import ArrayRecord, Message
from flwr.serverapp import Grid
from flwr.serverapp.strategy import FedAvg, Strategy

from fedgraph_sim.config import RunConfig, load_config, parse_overrides, set_dotted, validate_config
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.run_dirs import new_run_dir
from fedgraph_sim.runtime.session import Session
from server.strategy import Curious

log = logging.getLogger("fedgraph_sim")


def _config(config: str | Path | RunConfig, attacks: list[str] | None, overrides: list[str]) -> RunConfig:
    if attacks is not None:
        overrides = [*overrides, f"attack.names={json.dumps(list(attacks))}"]
    if isinstance(config, RunConfig):
        tree = validate_config(set_dotted(config.model_dump(mode="json"), parse_overrides(overrides)))
    else:
        tree = load_config(config, overrides)
    if tree.defenses:
        raise ConfigError("defenses: in your own app the clients apply their defenses themselves; "
                          "fedgraph-sim run wraps the bench's clients in them")
    if tree.threat.secure_aggregation == "secaggplus":
        raise ConfigError("threat.secure_aggregation: secaggplus runs Flower's SecAgg+ workflow, not a strategy; "
                          "use fedgraph-sim run, or true (the server observes the weighted mean)")
    return tree


class _UserCurious:
    """``start`` of a watched user strategy: the session's evaluation unless the user gives one,
    the run directory sealed and summarised at the end, however the rounds end."""

    session: Session

    def start(self, grid: Grid, initial_arrays: ArrayRecord, num_rounds: int = 3, timeout: float = 3600,
              train_config=None, evaluate_config=None, evaluate_fn=None):
        rounds = self.session.config.federation.rounds
        if num_rounds != rounds:
            raise ConfigError(f"federation.rounds: the config says {rounds}, strategy.start runs {num_rounds}; "
                              "the attacked rounds are chosen from the config's")
        try:
            return super().start(grid=grid, initial_arrays=initial_arrays, num_rounds=num_rounds, timeout=timeout,
                                 train_config=train_config, evaluate_config=evaluate_config,
                                 evaluate_fn=evaluate_fn or self.session.evaluate)
        finally:
            summary = self.session.finish()
            log.warning("fedgraph_sim: %d summary rows in %s", len(summary), self.session.run_dir)


def curious(strategy: Strategy, *, config: str | Path | RunConfig, attacks: list[str] | None = None,
            overrides: list[str] = (), run_dir: str | Path | None = None) -> Strategy:
    """``strategy`` (any Flower strategy, built as the app builds it) with the honest-but-curious
    server's eye: it aggregates as before; every reply is observed and attacked.

    Args:
        strategy: the app's Flower strategy; its own settings (sampling, weighting, server
            optimiser) are kept.
        config: a run config (path or :class:`RunConfig`): the data and its partition, what the
            clients train (``train``), the threat and the attacks.
        attacks: the attacks to run, instead of the config's ``attack.names``.
        overrides: dotted ``key=value`` overrides of a config file.
        run_dir: the run directory (default: a new one under ``output.dir``).

    Returns:
        The same strategy, watched: a subclass of its class sharing its settings.
    """
    if isinstance(strategy, Curious):
        raise TypeError("curious(): the strategy is already watched")
    cfg = _config(config, attacks, list(overrides))
    session = Session(cfg)
    session.open(Path(run_dir) if run_dir is not None else new_run_dir(cfg.output.dir, cfg.name))
    base = type(strategy)
    # In FedSGD, plain FedAvg averages the gradients and takes one step; another strategy
    # aggregates the weights each client's step gives (server.strategy.Curious).
    watched_class = type(f"Curious{base.__name__}", (_UserCurious, Curious, base),
                         {"averages_gradients": base is FedAvg, "__module__": __name__})
    watched = object.__new__(watched_class)
    watched.__dict__.update(strategy.__dict__)
    train = cfg.train
    watched.watch(config_json=cfg.model_dump_json(), lr=train.lr, local_steps=train.local_steps,
                  batch_size=train.batch_size,
                  same_batch=train.sampling == "repeat", run_dir=str(session.run_dir), observer=session.observer,
                  secure_aggregation=bool(cfg.threat.secure_aggregation), audits=session.audits)
    watched.session = session
    session.strategy = watched
    return watched


class Federation:
    """The clients' side of a run config in a user's ``ClientApp``: the data each partition holds
    and the graphs of each local step, as ``fedgraph-sim run``'s clients take them. Nothing is
    loaded until used.

    Args:
        config: the run config (path or :class:`RunConfig`) the server's :func:`curious` reads.
        overrides: dotted ``key=value`` overrides of a config file.
    """

    def __init__(self, config: str | Path | RunConfig, overrides: list[str] = ()) -> None:
        self._config, self._overrides = config, list(overrides)

    @cached_property
    def config(self) -> RunConfig:
        if isinstance(self._config, RunConfig):
            return self._config
        return load_config(self._config, self._overrides)

    @cached_property
    def scenario(self):
        from fedgraph_sim.scenario import cached_scenario
        return cached_scenario(self.config.model_dump_json())

    @property
    def num_features(self) -> int:
        return self.scenario.dataset.num_features

    @property
    def num_classes(self) -> int:
        return self.scenario.dataset.num_classes

    def for_message(self, msg: Message) -> "Federation":
        """The federation of the run ``msg`` comes from: a fedgraph_sim server sends its run's
        config (``fedgraph-config``: an audit's seed and data, say), which then rules; else this one."""
        sent = msg.content["config"].get("fedgraph-config")
        return self if sent is None else _sent_federation(str(sent))

    def batches(self, msg: Message, partition_id: int) -> list[list]:
        """The PyG graphs of each local step of the round ``msg`` asks this client to train (its
        train config says the round, steps and batch size); writes the record of them that the
        server's evaluator scores against, when the server audits the round."""
        from clients.turn import turn_batches

        federation = self.for_message(msg)
        return turn_batches(federation.config, federation.scenario, partition_id, msg.content["config"])


@lru_cache(maxsize=4)
def _sent_federation(config_json: str) -> Federation:
    return Federation(RunConfig.model_validate_json(config_json))
