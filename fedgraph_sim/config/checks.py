"""The checks that span sections (a round to attack within the rounds run, a defense's server half
with SecAgg+, ...), run after the schema's: each failure one :class:`~fedgraph_sim.errors.ConfigError`
line naming the key."""

from __future__ import annotations

import logging
import os

from fedgraph_sim.config.sections import (AGGREGATION_KEYS, ATTACK_GRANTS, ATTACK_NAME, AggregationConfig,
                                          EveryRound, RunConfig, SecAggPlusConfig)
from fedgraph_sim.errors import ConfigError


def check_cross_fields(config: RunConfig) -> None:
    """Check what the schema cannot: names against the registries (attacks, defenses, conv types),
    keys that only make sense together (a user's model or ClientApp, node tasks, regression, the
    attacked rounds and clients, worker and CPU counts against this machine, secure aggregation,
    a malicious server's crafting, threat grants, aggregation keys, ``aux.source``).

    Args:
        config (RunConfig): a config the schema has validated (and whose plugins are loaded).

    Raises:
        ConfigError: at the first problem, naming its key.
    """
    from fedgraph_sim import registry

    # First the names the registries declare, which imports nothing (torch comes with models).
    for name in config.attack.names:
        if ATTACK_NAME.fullmatch(name):
            registry.attacks.check(name.split("@")[0], key="attack.names")
    for i, entry in enumerate(config.defenses):
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            registry.defenses.check(entry["name"], key=f"defenses.{i}.name")
    from fedgraph_sim import models  # registers the conv types

    k, m = config.federation.num_clients, config.federation.min_available
    if m is not None and m > k:
        raise ConfigError(f"federation.min_available: {m} exceeds federation.num_clients ({k})")

    if config.model.module is not None:
        from fedgraph_sim.models.user import check_user_class
        fields = type(config.model).model_fields  # a default (the packaged config's) describes nothing
        own = sorted(k for k in config.model.model_fields_set - {"module", "args"}
                     if getattr(config.model, k) != fields[k].get_default(call_default_factory=True))
        if own:
            raise ConfigError(f"model.{own[0]}: describes the bench's own classifier; a user's model (model.module) "
                              "takes its options in model.args")
        check_user_class(config.model.module, config.model.args)
        if config.canaries.count:
            raise ConfigError("canaries.count: the DP audit's canaries (their weights and span scores) are built for "
                              "the bench's classifier (model.conv, ...); not for a user's model (model.module) yet")
    if config.federation.client_app is not None:
        if config.defenses:
            raise ConfigError("federation.client_app: a user's ClientApp applies its defenses itself; the config's "
                              "defenses wrap the bench's clients (drop one of the two)")
        if config.threat.secure_aggregation == "secaggplus" or config.canaries.count:
            raise ConfigError("federation.client_app: SecAgg+ and the DP audit's canaries need the bench's clients")
    if config.model.module is None and config.model.args:
        raise ConfigError("model.args: keyword arguments of a user's model class; set model.module too")
    registry.models.get(config.model.conv, key="model.conv")
    if config.model.pool == "flatten" or config.model.flatten_nodes is not None:
        # the flatten readout's combinations, checked where the model declares them (a 1-feature,
        # 2-class stand-in: the data's widths are not known yet)
        models.build_model(config.model, 1, 2)
    if config.threat.per_node_gradients and (config.model.task != "node" or config.train.local_steps != 1
                                             or config.train.batch_size != 1):
        raise ConfigError("threat.per_node_gradients: a leaky client replies per-node gradients of one subgraph: "
                          "needs model.task: node, train.local_steps: 1 and train.batch_size: 1 "
                          f"(got {config.model.task}, {config.train.local_steps}, {config.train.batch_size})")
    if config.threat.node_labels and config.model.task != "node":
        raise ConfigError("threat.node_labels: hints the label counts of a node classifier's nodes; "
                          f"needs model.task: node (got {config.model.task})")
    if config.data.node_labels is not None and config.model.task != "node":
        raise ConfigError("data.node_labels: random node labels make the task node classification; "
                          f"needs model.task: node (got {config.model.task})")
    if (config.data.task_type == "regression") != (config.train.loss == "mse"):
        raise ConfigError(f"train.loss: {config.train.loss} does not fit data.task_type: {config.data.task_type}; "
                          "regression trains with mse, classification with cross_entropy or bce")
    if config.data.task_type == "regression" and config.model.task == "node":
        raise ConfigError("data.task_type: regression is for graph-level targets; model.task: node classifies")
    fed = config.federation
    if isinstance(config.attack.rounds, list):
        for r in config.attack.rounds:
            if not 1 <= r <= fed.rounds:
                raise ConfigError(f"attack.rounds: round {r} is out of range 1..{fed.rounds}")
    elif isinstance(config.attack.rounds, EveryRound) and config.attack.rounds.start > fed.rounds:
        raise ConfigError(f"attack.rounds.start: round {config.attack.rounds.start} is after the last round "
                          f"({fed.rounds})")
    if config.attack.clients != "all":
        for c in config.attack.clients:
            if not 0 <= c < fed.num_clients:
                raise ConfigError(f"attack.clients: client {c} is out of range 0..{fed.num_clients - 1}")
    names = config.attack.names
    for name in names:
        if not ATTACK_NAME.fullmatch(name):
            raise ConfigError(f"attack.names: '{name}' is not an attack name or name@label (letters, digits, "
                              "'_', and in the label also '.', '-', '=')")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"attack.names: {', '.join(repeated)} named twice; use name@label for variants")
    for key in ("limit", "time_budgets"):
        for name in getattr(config.attack, key):
            if name not in names:
                raise ConfigError(f"attack.{key}.{name}: '{name}' is not in attack.names ({', '.join(names)})")
    cores = os.cpu_count() or 1
    if config.attack.executor == "pool" and config.attack.workers != "auto" and config.attack.workers > cores:
        raise ConfigError(f"attack.workers: {config.attack.workers} attack worker processes, but this machine has "
                          f"{cores} cores; use at most {cores}, auto, or 0 (in the server's process)")
    if fed.num_cpus > cores and fed.ray_address is None:  # a cluster's nodes are not this machine's cores
        raise ConfigError(f"federation.num_cpus: {fed.num_cpus:g} CPUs per client actor, but this machine "
                          f"has {cores}; no actor could start")
    if config.threat.secure_aggregation and config.attack.clients != "all":
        raise ConfigError("attack.clients: with threat.secure_aggregation the server sees only each round's "
                          "aggregate, not client updates; leave attack.clients at all")
    if config.threat.secure_aggregation == "secaggplus":
        _check_secaggplus(config)
    elif config.threat.secaggplus != SecAggPlusConfig():  # changed, to no effect: a mistake
        raise ConfigError("threat.secaggplus: changed, but threat.secure_aggregation is "
                          f"{config.threat.secure_aggregation!r}; the parameters apply only to secaggplus")
    _check_malicious(config)
    for grant in ATTACK_GRANTS:
        granted = getattr(config.threat, grant)
        for name in granted if isinstance(granted, list) else ():
            if name not in config.attack.names:
                raise ConfigError(f"threat.{grant}: '{name}' is not in attack.names")
    used = AGGREGATION_KEYS[config.aggregation.strategy]
    for key in (k for k in AggregationConfig.model_fields if k != "strategy"):
        if getattr(config.aggregation, key) is not None and key not in used:
            raise ConfigError(f"aggregation.{key}: {config.aggregation.strategy} takes no {key}; it takes "
                              f"{', '.join(used) or 'none'} (fedavgm for a server learning rate with FedAvg)")
    if config.aux.source != "holdout":
        prefix, _, index = config.aux.source.partition(":")
        if prefix != "client" or not index.isdigit() or int(index) >= fed.num_clients:
            raise ConfigError(f"aux.source: '{config.aux.source}' must be holdout or client:K "
                              f"with K in 0..{fed.num_clients - 1}")


def _check_malicious(config: RunConfig) -> None:
    from fedgraph_sim.crafting import CRAFTINGS

    threat = config.threat
    if threat.crafting not in CRAFTINGS:
        raise ConfigError(f"threat.crafting: unknown crafting '{threat.crafting}'; valid: {', '.join(CRAFTINGS)}")
    if threat.server != "malicious":
        return
    if threat.secure_aggregation == "secaggplus":
        raise ConfigError("threat.server: malicious sends each client its own weights; Flower's SecAgg+ workflow "
                          "sends one model to all (use threat.secure_aggregation: true, the exact aggregate)")
    problem = CRAFTINGS[threat.crafting]().problem(config.model.model_dump(), config.federation.num_clients)
    if problem is not None:
        raise ConfigError(f"threat.crafting: {threat.crafting} {problem}")
    if CRAFTINGS[threat.crafting].needs_aux and not threat.aux_graphs:
        raise ConfigError(f"threat.crafting: {threat.crafting} places its weights on the server's auxiliary graphs, "
                          "which threat.aux_graphs: false withholds")


def _check_secaggplus(config: RunConfig) -> None:
    """What Flower's SecAgg+ would refuse or silently get wrong, refused before the run."""
    from flwr.server.workflow import SecAggPlusWorkflow

    params, sampled = config.threat.secaggplus, config.federation.sampled_per_round()
    if config.aggregation.strategy != "fedavg":
        raise ConfigError(f"aggregation.strategy: {config.aggregation.strategy} with threat.secure_aggregation: "
                          "secaggplus; SecAgg+ reveals the weighted mean of the replies, which the bench takes as "
                          "FedAvg's aggregate (use fedavg)")
    if config.threat.per_node_gradients:
        raise ConfigError("threat.per_node_gradients: a leaky client's extra channel would bypass SecAgg+'s masks; "
                          "not with threat.secure_aggregation: secaggplus")
    if sampled < 2:
        raise ConfigError(f"federation.num_clients: SecAgg+ needs at least 2 clients per round (Flower halts a "
                          f"round with fewer), and this federation samples {sampled}")
    flwr_log = logging.getLogger("flwr")
    level, flwr_log.level = flwr_log.level, logging.ERROR  # its overflow warning: refused below, in our words
    try:
        SecAggPlusWorkflow(**params.model_dump())
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"threat.secaggplus: {exc}".splitlines()[0]) from None
    finally:
        flwr_log.level = level
    threshold = params.reconstruction_threshold
    if isinstance(threshold, int) and threshold > sampled:
        raise ConfigError(f"threat.secaggplus.reconstruction_threshold: {threshold} shares, but only {sampled} clients "
                          f"take part in a round, so no round could unmask; at most {sampled}, or a fraction (a float)")
    if sampled * params.quantization_range > params.modulus_range:
        raise ConfigError(f"threat.secaggplus.quantization_range: {sampled} clients x {params.quantization_range} "
                          f"levels exceed modulus_range ({params.modulus_range}), so the masked sum would wrap "
                          "around; lower quantization_range or raise modulus_range (at most 2**32)")
