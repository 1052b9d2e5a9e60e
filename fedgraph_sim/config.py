"""Typed run configuration: YAML file + dotted ``key=value`` overrides, validated up front.

Every entry point validates the whole configuration before it writes anything, and every mistake
becomes one :class:`~fedgraph_sim.errors.ConfigError` line naming the key.
"""

from __future__ import annotations

import logging
import math
import os
import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from fedgraph_sim.errors import ConfigError
from fedgraph_sim.plugins import load_plugins
from fedgraph_sim.yaml_files import read_yaml

ATTACK_NAME = re.compile(r"[A-Za-z0-9_]+(@[A-Za-z0-9_.=-]+)?")
# The base every config is laid over (a file's missing keys, every sweep's and reproduction's
# base): the GraphDLG paper's victim. Packaged; experiments/configs/default.yaml links here.
DEFAULT_CONFIG = Path(__file__).resolve().parent / "default.yaml"
# The default round, what `fedgraph-sim run` runs without --config: a victim the exact attack can
# attack. Packaged; experiments/configs/default_round.yaml links here.
DEFAULT_ROUND = Path(__file__).resolve().parent / "default_round.yaml"


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_numbers(cls, value: Any, info) -> Any:
        """``true`` where a number is expected is a mistake (``federation.rounds=true`` would
        run one round): pydantic takes a bool for an int, so refuse it here."""
        annotation = cls.model_fields[info.field_name].annotation
        if _is_bool_for_number(value, annotation):
            raise ValueError("must be a number, not true or false")
        return value


def _is_bool_for_number(value: Any, annotation: Any) -> bool:
    """A bool (or a list holding one) where ``annotation`` admits numbers but not bools."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        if isinstance(value, list):
            return any(_is_bool_for_number(value, a) for a in args if typing.get_origin(a) in (list, tuple))
        return isinstance(value, bool) and bool(set(args) & {int, float}) and not set(args) & {bool, Any}
    if origin in (list, tuple):
        return isinstance(value, list) and any(_is_bool_for_number(v, args[0] if args else Any) for v in value)
    return isinstance(value, bool) and annotation in (int, float)


class DataConfig(Section):
    dataset: str = "MUTAG"
    task: int | str | None = None  # MoleculeNet label task
    # regression: real targets, a one-output model, train.loss mse (ESOL, FreeSolv, Lipo);
    # classification splits a regression set's targets at the median
    task_type: Literal["classification", "regression"] = "classification"
    max_nodes: int | None = Field(None, ge=1)
    options: dict[str, Any] = {}  # loader options, e.g. synthetic's num_graphs
    test_fraction: float = Field(0.0, ge=0.0, lt=1.0)  # held-out split for the global model
    node_order: Literal["original", "shuffled", "canonical"] = "original"  # data/order.py
    features: str | None = None  # MoleculeNet node features: pyg (default, 177 slots) | grain (140)
    degree_feature: bool = False  # append a one-hot degree block (GRAIN on TU sets)
    # every node a uniformly random class of this many: node classification on whole graphs
    # (GRAIN's Table 5; data/node_labels.py); the dataset's task becomes node
    node_labels: int | None = Field(None, ge=2)
    subset: int | None = Field(None, ge=1)  # the federation holds this many graphs of a seeded shuffle
    subset_seed: int = Field(42, ge=0, lt=2**32)  # the shuffle's seed (GRAIN's experiments: seed 42, first 100)


class PartitionConfig(Section):
    alpha: float = Field(1.0, gt=0)
    min_partition_size: int = Field(2, ge=0)
    # false: disjoint Dirichlet shares of the pool (Hsu et al.); true: each client draws ``size``
    # graphs with replacement under its own Dir(alpha) label mix, for more clients than graphs
    with_replacement: bool = False
    size: int | None = Field(None, ge=1)  # with_replacement: graphs per client (None: pool / clients, >= 1)


class FederationConfig(Section):
    num_clients: int = Field(4, ge=1)
    rounds: int = Field(1, ge=1)
    num_cpus: float = Field(1.0, gt=0, allow_inf_nan=False)  # per client actor: 1 runs two actors on 2 cores
    # Flower's sampling: the share of the available clients that train each round, and how many
    # must be connected before a round starts (None: every client)
    fraction_train: float = Field(1.0, gt=0, le=1)
    min_available: int | None = Field(None, ge=1)
    # the simulation's Ray: None starts a local one for the run; "auto" or "ray://HOST:10001" joins a cluster
    ray_address: str | None = None

    def sampled_per_round(self) -> int:
        """How many clients the strategy samples per round once every client is connected (Flower's
        rule, ``max(int(n * fraction_train), min_train_nodes)``, with the strategy's minimum: every
        available client when ``fraction_train`` is 1, else 1)."""
        available = self.min_available or self.num_clients
        return max(int(self.num_clients * self.fraction_train), available if self.fraction_train == 1 else 1)


class TrainConfig(Section):
    batch_size: int = Field(1, ge=1)
    local_steps: int = Field(1, ge=1)  # 1 = FedSGD (gradient replies); > 1 = FedAvg (weights)
    lr: float = Field(0.01, gt=0, allow_inf_nan=False)
    # bce: BCE-with-logits on one-hot targets; mse: regression (the default with data.task_type: regression)
    loss: Literal["cross_entropy", "bce", "mse"] = "cross_entropy"
    # random: each batch drawn afresh from a seeded RNG per (seed, round, client);
    # epoch: a seeded permutation per (seed, client, epoch) walked round by round, so successive
    # rounds use different graphs until the partition is exhausted; repeat: one batch per round,
    # taken as epoch takes it, trained on at every local step (local epochs over the round's batch)
    sampling: Literal["random", "epoch", "repeat"] = "random"

    @property
    def mode(self) -> Literal["fedsgd", "fedavg"]:
        return "fedsgd" if self.local_steps == 1 else "fedavg"


#: Each ``aggregation.strategy`` and the ``aggregation`` keys it takes, as Flower's argument names.
AGGREGATION_KEYS: dict[str, dict[str, str]] = {
    "fedavg": {},
    "fedavgm": {"lr": "server_learning_rate", "momentum": "server_momentum"},
    "fedadam": {"lr": "eta", "beta_1": "beta_1", "beta_2": "beta_2", "tau": "tau"},
    "fedyogi": {"lr": "eta", "beta_1": "beta_1", "beta_2": "beta_2", "tau": "tau"},
    "fedadagrad": {"lr": "eta", "tau": "tau"},
}


class AggregationConfig(Section):
    """The server's aggregation: one of Flower's strategies (server/strategy.py). ``lr`` is the
    server learning rate (FedAvgM's ``server_learning_rate``, the FedOpt family's ``eta``),
    ``momentum`` FedAvgM's; ``beta_1``, ``beta_2``, ``tau`` the adaptive optimisers' (Reddi et
    al., "Adaptive Federated Optimization", ICLR 2021). Unset keys keep Flower's defaults."""

    strategy: Literal[tuple(AGGREGATION_KEYS)] = "fedavg"
    lr: float | None = Field(None, gt=0, allow_inf_nan=False)
    momentum: float | None = Field(None, ge=0, lt=1)
    beta_1: float | None = Field(None, ge=0, lt=1)
    beta_2: float | None = Field(None, ge=0, lt=1)
    tau: float | None = Field(None, gt=0, allow_inf_nan=False)


class ModelConfig(Section):
    """Keyword arguments of :class:`~fedgraph_sim.models.GraphClassifier` (see its docstring)."""

    conv: str = "gcn"
    layers: int = Field(2, ge=1)
    hidden: int = Field(16, ge=1)
    pool: Literal["sum", "mean", "max", "flatten"] = "mean"
    flatten_nodes: int | None = Field(None, ge=1)  # pool: flatten pads every graph to this many rows
    readout: Literal["linear", "mlp"] = "linear"
    readout_placement: Literal["after_pool", "per_node"] = "after_pool"
    readout_input: Literal["last", "concat_input"] = "last"  # concat_input: [X0 || H_L]
    readout_hidden: list[int] | None = None  # mlp hidden widths (default [hidden])
    conv_bias: bool = True
    activation: Literal["relu", "elu", "gelu", "sigmoid"] = "relu"
    last_activation: bool | None = None  # an activation after the last layer too (default: graph task yes, node no)
    heads: int = Field(1, ge=1)  # attention heads (gat)
    residual: bool = False  # skip projections (gat)
    task: Literal["graph", "node"] = "graph"  # node: per-node logits (a node-level dataset's subgraphs)


class AuxConfig(Section):
    scenario: str = "same"  # same | dataset:NAME | random:er
    source: str = "holdout"  # for "same": holdout | client:K (an attacker-controlled client)
    fraction: float = Field(0.2, gt=0, lt=1)  # size of the holdout split
    p: float = 0.1
    features: Literal["normal", "uniform"] = "normal"
    num_graphs: int | None = Field(None, ge=1)


class SecAggPlusConfig(Section):
    """Flower's ``SecAggPlusWorkflow`` parameters, with Flower's defaults but for the two its
    class leaves open, set as in Flower's secure-aggregation example (3 shares, 2 to reconstruct).
    An int ``num_shares`` counts shares, a float is a fraction of the round's clients; likewise
    ``reconstruction_threshold`` counts shares or is a fraction of them."""

    num_shares: int | float = 3
    reconstruction_threshold: int | float = 2
    clipping_range: float = 8.0  # every replied value is clipped to +-clipping_range, after weighting
    quantization_range: int = 4194304  # 2**22 levels over [-clipping_range, clipping_range]
    modulus_range: int = Field(4294967296, le=4294967296)  # 2**32 at most; the masks' range
    max_weight: float = 1000.0  # a client's weight (its examples) is num_examples / max_weight
    timeout: float | None = Field(None, gt=0)  # seconds per stage for the replies; None waits for all


#: Threat grants that take ``true`` or a list of attack names.
ATTACK_GRANTS = ("adjacency_known", "features_known")


class ThreatConfig(Section):
    # the attacker holds the auxiliary graphs of aux.* (the gradient-free priors beside every row
    # are always scored with them: false asks what the update alone gives away)
    aux_graphs: bool = True
    node_count: bool = True  # hint: the true node count of each attacked graph
    label: bool = False  # hint: the true label of each attacked graph
    # hint: how many of each attacked graph's labelled nodes carry each class (a node classifier;
    # GRAIN's "labels known" node classification, without saying which node carries which)
    node_labels: bool = False
    # hint: the true adjacency, for every attack (true) or the listed ones (e.g. [dlg@A]); the
    # "+A" baselines of GRAIN's Table 2
    adjacency_known: bool | list[str] = False
    # hint: the true node features, for every attack or the listed ones (GLG's Graph-a and Node-2a)
    features_known: bool | list[str] = False
    # A leaky client (GLG's Node-2 threat): on a node-classification task with FedSGD and one
    # subgraph per batch, each client also replies the gradient of every labelled node's own loss
    # (undefended: the leak bypasses the client's defenses). Never on by default; recorded in rows.
    per_node_gradients: bool = False
    # The server observes only the weighted mean of each round's updates: true sums the replies
    # in the strategy (the fast path: exactly what secure aggregation reveals), secaggplus runs
    # Flower's SecAgg+ protocol (masks, Shamir shares, dropouts, its quantisation; threat.secaggplus)
    secure_aggregation: bool | Literal["secaggplus"] = False
    secaggplus: SecAggPlusConfig = SecAggPlusConfig()

    @field_validator("secure_aggregation", mode="before")
    @classmethod
    def _secure_aggregation_choice(cls, value: Any) -> Any:
        if value not in (True, False, "secaggplus") or isinstance(value, (int, float)) and not isinstance(value, bool):
            raise ValueError("must be true (the strategy sums the replies), false or secaggplus (Flower's SecAgg+)")
        return value

    def grants(self, grant: str, attack: str) -> bool:
        """Whether ``grant`` (one of ``ATTACK_GRANTS``) covers ``attack``."""
        granted = getattr(self, grant)
        return granted is True or attack in (granted or ())


class EveryRound(Section):
    """``{every: k, start: s}``: rounds s, s + k, s + 2k, ..."""

    every: int = Field(ge=1)
    start: int = Field(1, ge=1)


class AttackConfig(Section):
    names: list[str] = ["random", "dlg", "idlg", "inverting_gradients"]
    rounds: list[int] | Literal["all"] | EveryRound = "all"  # all | [1, 50] | {every: 5}
    clients: list[int] | Literal["all"] = "all"
    max_graphs: int | None = Field(None, ge=1)  # per update
    clients_per_round: int | None = Field(None, ge=1)  # at most this many selected updates per round, a seeded draw
    limit: dict[str, Annotated[int, Field(ge=1)]] = {}  # at most this many attacked updates per attack over the run
    time_budget: float = Field(120.0, gt=0, allow_inf_nan=False)  # seconds per attack call
    time_budgets: dict[str, Annotated[float, Field(gt=0, allow_inf_nan=False)]] = {}  # per-attack overrides, e.g.
                                                                                      # {dlg@softmax: 400}
    # Attack worker processes (server/attack_workers.py): auto = this machine's cores; 0 = in the
    # server's process (no isolation, no hard limit: for debugging an attack)
    workers: Literal["auto"] | Annotated[int, Field(ge=0)] = "auto"
    # Where the workers run: pool = processes of the server's machine; ray = one Ray actor per
    # worker on the federation's Ray (a cluster's nodes: server/ray_attack_workers.py), the same
    # sandbox and hard limit on the actor's node
    executor: Literal["pool", "ray"] = "pool"
    grace: float = Field(10.0, ge=0, allow_inf_nan=False)  # seconds past its budget before a call is killed
    # Where the workers run (server/sandbox.py): namespaces = a root filesystem and PID, mount and
    # network namespaces of their own, without the data, caches and runs; process = plain processes;
    # auto = namespaces where the kernel allows them, else process with a warning
    boundary: Literal["auto", "namespaces", "process"] = "auto"

    def budget_of(self, name: str) -> float:
        return self.time_budgets.get(name, self.time_budget)

    @field_validator("rounds", mode="before")
    @classmethod
    def _round_selection(cls, value: Any) -> Any:
        if value == "all" or isinstance(value, list):
            return value
        if isinstance(value, dict):
            every = value.get("every")
            if not isinstance(every, int) or isinstance(every, bool) or every < 1:
                raise ValueError("every must be a whole number of rounds >= 1")
            return EveryRound.model_validate(value)
        raise ValueError("all, a list of rounds, or {every: k, start: s}")

    def selects_round(self, round: int) -> bool:
        if self.rounds == "all":
            return True
        if isinstance(self.rounds, EveryRound):
            return round >= self.rounds.start and (round - self.rounds.start) % self.rounds.every == 0
        return round in self.rounds

    def selects_client(self, client_key: int) -> bool:
        return self.clients == "all" or client_key in self.clients
    # Per-attack parameters, e.g. {dlg: {iterations: 300}}. "name@label" runs a variant of an
    # attack under its own row name, e.g. graphdlg@refine with {refine_features: true}.
    params: dict[str, dict[str, Any]] = {}


class MetricsConfig(Section):
    entries: Literal["upper_offdiag", "full"] = "upper_offdiag"


class OutputConfig(Section):
    dir: str = "runs"
    drawings: int = Field(2, ge=0)  # reconstructions kept per attack for the report's drawings


class RunConfig(Section):
    name: str = "default"
    seed: int = Field(0, ge=0, lt=2**32)  # numpy's seed range
    data: DataConfig = DataConfig()
    partition: PartitionConfig = PartitionConfig()
    federation: FederationConfig = FederationConfig()
    aggregation: AggregationConfig = AggregationConfig()
    train: TrainConfig = TrainConfig()
    model: ModelConfig = ModelConfig()
    aux: AuxConfig = AuxConfig()
    threat: ThreatConfig = ThreatConfig()
    attack: AttackConfig = AttackConfig()
    # Ordered stack, e.g. [{name: prune, p: 0.9}]; validated by clients.defenses.build_defenses.
    defenses: list[Any] = []
    metrics: MetricsConfig = MetricsConfig()
    output: OutputConfig = OutputConfig()
    # Modules imported before anything is built, in every process (fedgraph_sim.plugins).
    plugins: list[str] = []

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if not value or any(c in value for c in "/\\ "):
            raise ValueError("must be non-empty, without spaces or slashes")
        return value


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``["federation.rounds=2", ...]`` -> ``{"federation.rounds": 2, ...}``, values parsed as YAML
    (an empty value is null); the one parser of command-line overrides."""
    out = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"{item}: overrides are dotted key=value pairs, e.g. federation.rounds=2")
        key, raw = (part.strip() for part in item.split("=", 1))
        try:
            out[key] = yaml.safe_load(raw) if raw != "" else None
        except yaml.YAMLError as exc:
            raise ConfigError(f"{key}: the value is not valid YAML ({str(exc).splitlines()[0]})") from None
    return out


def default_tree() -> dict:
    """The packaged default config as a plain tree (the base every config file is laid over)."""
    return yaml.safe_load(DEFAULT_CONFIG.read_text())


def merge_tree(tree: dict, patch: dict) -> dict:
    """``tree`` with ``patch`` laid over it, section by section (a new dict; lists replaced)."""
    out = dict(tree)
    for key, value in patch.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = merge_tree(out[key], value) if both else value
    return out


def set_dotted(tree: dict, dotted: dict[str, Any]) -> dict:
    """Set each ``section.key`` of ``dotted`` in ``tree`` (in place; returns it). A mapping value
    is laid over the mapping already there (``model={conv: gat}`` keeps the other model keys);
    anything else replaces it."""
    for key, value in dotted.items():
        _set_dotted(tree, key, value)
    return tree


def _set_dotted(tree: dict, dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = tree
    for key in keys[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{dotted}: '{key}' is not a section")
        node = child
    old = node.get(keys[-1])
    node[keys[-1]] = merge_tree(old, value) if isinstance(value, dict) and isinstance(old, dict) else value


def _check_keys(tree: dict, model: type[BaseModel], prefix: str = "") -> None:
    """Unknown keys, named with their full dotted path (pydantic's message is multi-line)."""
    for key, value in tree.items():
        field = model.model_fields.get(key)
        if field is None:
            valid = ", ".join(model.model_fields)
            raise ConfigError(f"{prefix}{key}: no such config key; valid keys here: {valid}")
        sub = field.annotation
        if isinstance(value, dict) and isinstance(sub, type) and issubclass(sub, BaseModel):
            _check_keys(value, sub, f"{prefix}{key}.")


def load_config(path: str | Path | None = None, overrides: list[str] = ()) -> RunConfig:
    """Read YAML (default: the packaged ``default.yaml``), apply ``key=value`` overrides (values
    parsed as YAML), validate. Raises ConfigError naming the offending key."""
    path = Path(path) if path else DEFAULT_CONFIG
    tree = read_yaml(path) or {}
    if not isinstance(tree, dict):
        raise ConfigError(f"--config: {path} must hold a mapping of sections")
    return validate_config(set_dotted(tree, parse_overrides(overrides)))


def validate_config(tree: dict) -> RunConfig:
    _check_keys(tree, RunConfig)
    data, train = tree.get("data"), tree.get("train")
    if isinstance(data, dict) and data.get("task_type") == "regression" and not (isinstance(train, dict)
                                                                               and "loss" in train):
        tree = merge_tree(tree, {"train": {"loss": "mse"}})  # a regression task trains with MSE unless told
    try:
        config = RunConfig.model_validate(tree)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        got = err.get("input")
        message = err["msg"].removeprefix("Value error, ")
        raise ConfigError(f"{key}: {message} (got {got!r})") from None
    load_plugins(config.plugins)
    _check_cross_fields(config)
    return config


def _check_cross_fields(config: RunConfig) -> None:
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


def to_yaml(config: RunConfig, extra: dict | None = None) -> str:
    tree = config.model_dump(mode="json")
    if extra:
        tree.update(extra)
    return yaml.safe_dump(tree, sort_keys=False)


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class DefenseSetting:
    """A defense stack with what tables and figures group it by: its ``family`` (the names
    joined by ``+``; ``none`` without defenses) and its ``strength``, the value of ``param``: the
    swept parameter in a sweep grid, else the stack's only numeric parameter (NaN when it has
    none or several; 0 without defenses)."""

    stack: list
    family: str
    param: str | None
    strength: float

    @property
    def label(self) -> str:
        return defense_label(self.stack)

    @classmethod
    def of(cls, stack: list[dict[str, Any]], swept: str | None = None) -> "DefenseSetting":
        if not stack:
            return cls([], "none", None, 0.0)
        family = "+".join(str(entry.get("name", "?")) for entry in stack)
        numbers = [(k, v) for entry in stack for k, v in entry.items() if k != "name" and _numeric(v)]
        if swept is not None:
            numbers = [(k, v) for k, v in numbers if k == swept][:1]
        if len(numbers) != 1:
            return cls(stack, family, None, math.nan)
        param, strength = numbers[0]
        return cls(stack, family, param, float(strength))


def defense_label(entries: list[dict[str, Any]]) -> str:
    """A compact name for a defense stack, e.g. ``prune(p=0.9)+dp_gradients(sigma=0.1)``."""
    if not entries:
        return "none"
    parts = []
    for entry in entries:
        params = ",".join(f"{k}={v}" for k, v in entry.items() if k != "name")
        parts.append(f"{entry['name']}({params})" if params else entry["name"])
    return "+".join(parts)
