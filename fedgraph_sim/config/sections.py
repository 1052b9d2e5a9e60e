"""The configuration's schema: one pydantic model per YAML section, and :class:`RunConfig`, the
whole run. Every section forbids unknown keys and refuses ``true`` where a number is expected.
"""

from __future__ import annotations

import re
import types
import typing
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

ATTACK_NAME = re.compile(r"[A-Za-z0-9_]+(@[A-Za-z0-9_.=-]+)?")


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
    # a user's own Flower ClientApp ("package.module:app" or "file.py:app") in place of the bench's
    # clients: it takes its data from fedgraph_sim.runtime.Federation
    client_app: str | None = None

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
        """``fedsgd`` for one local step (gradient replies), else ``fedavg`` (weights)."""
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
    """Keyword arguments of :class:`~fedgraph_sim.models.GraphClassifier` (see its docstring), or a
    user's own PyG model: ``module`` (``package.module:Class`` or ``file.py:Class``) built with
    ``in_channels``, ``out_channels`` and ``args`` (:mod:`fedgraph_sim.models.user`)."""

    preset: str | None = None  # a paper's victim (fedgraph_sim.models.presets); keys beside it override
    module: str | None = None  # a user's model class; then only args may be set beside it
    args: dict[str, Any] = Field(default_factory=dict)  # keyword arguments of the user's class

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
    train_eps: bool = False  # gin: eps trained (else fixed at 0)


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
    # honest: the server sends the model training produced. malicious: in every attacked round it
    # sends each client weights of threat.crafting's making (fedgraph_sim.crafting), reads the
    # replies knowing them, and keeps its honest model (a crafted round is not aggregated)
    server: Literal["honest", "malicious"] = "honest"
    crafting: str = "separated_clients"

    @field_validator("secure_aggregation", mode="before")
    @classmethod
    def _secure_aggregation_choice(cls, value: Any) -> Any:
        if value not in (True, False, "secaggplus") or isinstance(value, (int, float)) and not isinstance(value, bool):
            raise ValueError("must be true (the strategy sums the replies), false or secaggplus (Flower's SecAgg+)")
        return value

    def grants(self, grant: str, attack: str) -> bool:
        """Whether ``grant`` covers ``attack``: granted to every attack (``true``) or to a list
        naming it.

        Args:
            grant (str): one of :data:`ATTACK_GRANTS`.
            attack (str): the attack's name as in ``attack.names`` (``name@label`` included).
        """
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
    # Attack worker processes (server/attack_pool.py): auto = this machine's cores; 0 = in the
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
        """The time budget, in seconds per call, of one attack: its ``time_budgets`` entry, else
        ``time_budget``.

        Args:
            name (str): the attack's name as in ``names`` (``name@label`` included).
        """
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
        """Whether ``rounds`` includes a round.

        Args:
            round (int): the server round, from 1.
        """
        if self.rounds == "all":
            return True
        if isinstance(self.rounds, EveryRound):
            return round >= self.rounds.start and (round - self.rounds.start) % self.rounds.every == 0
        return round in self.rounds

    def selects_client(self, client_key: int) -> bool:
        """Whether ``clients`` includes a client.

        Args:
            client_key (int): the client's partition id.
        """
        return self.clients == "all" or client_key in self.clients
    # Per-attack parameters, e.g. {dlg: {iterations: 300}}. "name@label" runs a variant of an
    # attack under its own row name, e.g. graphdlg@refine with {refine_features: true}.
    params: dict[str, dict[str, Any]] = {}


class MetricsConfig(Section):
    entries: Literal["upper_offdiag", "full"] = "upper_offdiag"


class CanaryConfig(Section):
    """An empirical check of the DP claim (``fedgraph_sim.dp_audit``): ``count`` canaries, each
    included with probability 1/2 (0: off). ``kind: graph`` puts graphs of the dataset's schema in
    the clients' data, scored by how well their replayed gradient matches the updates;
    ``gradient`` gives each such graph a Dirac gradient of L2 norm ``norm`` on its own weight (the
    white-box canary of Steinke, Nasr and Jagielski, NeurIPS 2023), which audits the defense's
    clipping, noise and accountant; ``client`` adds canary clients whose update is a fixed random
    direction of norm ``norm`` (Andrew et al., ICLR 2024), scored on the released global models:
    the client-level DP of Flower's central DP."""

    count: int = Field(0, ge=0)
    kind: Literal["graph", "gradient", "client"] = "graph"
    seed: int = Field(0, ge=0, lt=2**32)  # which canaries, and which are included (its own stream)
    norm: float = Field(1.0, gt=0)  # a gradient canary's or a canary client's: at or above the clip
    # graph canaries' score: replay (the replayed gradient's cosine with an update), span (GRAIN's span
    # checks: every row of the canary at every GCN layer in the update's row spaces) or loss (its drop)
    score: Literal["replay", "span", "loss"] = "replay"
    confidence: float = Field(0.95, gt=0, lt=1)
    delta: float | None = Field(None, gt=0, lt=1)  # default: the defense's delta, else 1e-5


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
    canaries: CanaryConfig = CanaryConfig()
    output: OutputConfig = OutputConfig()
    # Modules imported before anything is built, in every process (fedgraph_sim.plugins).
    plugins: list[str] = []

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if not value or any(c in value for c in "/\\ "):
            raise ValueError("must be non-empty, without spaces or slashes")
        return value
