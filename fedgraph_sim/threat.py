"""The types that cross the threat boundary (docs/architecture.md, "Threat model").

An attack receives exactly an :class:`ObservedUpdate` and an :class:`AttackerKnowledge` and
returns :class:`Reconstruction` objects; the attack runner records what came back as an
:class:`AttackOutcome`, which the evaluator alone scores against the ground truth.
"""

from __future__ import annotations

import numbers
import zlib
from dataclasses import dataclass, field, replace
from typing import Literal, get_args

import numpy as np
import torch
from torch_geometric.data import Data

from fedgraph_sim.data.schema import FeatureSchema
from fedgraph_sim.models import GraphClassifier, build_model


#: ``client_key`` of the one update a server behind secure aggregation observes per round.
AGGREGATE = -1
#: Reply arrays under this prefix are a leaky client's per-node gradients, not its update.
PER_NODE_PREFIX = "per_node/"
#: Behind Flower's SecAgg+ (legacy fit messages, whose arrays have no names): the names of the
#: arrays, in order, as JSON, in the fit config (server to client) and the reply's metrics.
ARRAY_KEYS = "array-keys"


@dataclass(frozen=True)
class CraftedRound:
    """What a malicious server (``threat.server: malicious``) sent in a crafted round, which it
    knows when it reads the replies.

    ``crafting`` names the crafting (``fedgraph_sim.crafting``); ``base`` holds every slot's part
    at once (each client received the part of its ``slot`` and zeros elsewhere, or what the
    crafting's docstring says); ``slots`` maps the clients whose replies an update holds
    (``client_key``, or the members of a secure aggregate) to their slots; ``plan`` holds the
    crafting's own numbers (its group widths), as JSON-able values.
    """

    crafting: str
    base: dict[str, np.ndarray] = field(repr=False)
    slots: dict[int, int]
    plan: dict

    def for_clients(self, keys: dict[int, int]) -> "CraftedRound":
        """The same round, for the update of the clients ``keys``.

        Args:
            keys (dict[int, int]): ``client_key -> slot`` of the clients whose replies the update
                holds.
        """
        return replace(self, slots=dict(keys))


@dataclass(frozen=True)
class ObservedUpdate:
    """One client reply as the server sees it.

    ``global_weights`` are the arrays the server sent; ``returned`` what came back: gradients
    in FedSGD (``kind="gradient"``), new weights in FedAvg (``kind="weights"``). ``gradient`` is
    derived once, in float64: the returned gradient itself, or ``(W_sent - W_back) / (lr *
    local_steps)`` for weights, which is exact only for one plain SGD step (``exact`` says which).
    ``lr``, ``local_steps`` and ``batch_size`` are the training settings the server configured;
    ``same_batch`` says every local step trains the same batch (``train.sampling: repeat``).
    Under secure aggregation ``client_key`` is :data:`AGGREGATE`, ``returned`` is the
    example-weighted mean of the replies (what the server can compute from the revealed sum) and
    ``members`` are the partitions whose replies it holds (a server behind SecAgg+ knows which
    clients survived the round: it removes their masks); ``metrics`` count them (``clients``) and,
    behind Flower's SecAgg+ (``secaggplus``), the sampled clients that dropped out (``dropped``).
    ``per_node`` holds a leaky client's per-node gradients (``threat.per_node_gradients``): each
    labelled node's loss gradient by parameter name, ``[nodes, *shape]``; None otherwise.
    ``crafted`` is set when a malicious server crafted the round's weights (:class:`CraftedRound`):
    ``global_weights`` are then what this client received (an aggregate's: the crafting's base).
    """

    round: int
    client_key: int
    global_weights: dict[str, np.ndarray]
    returned: dict[str, np.ndarray]
    kind: Literal["gradient", "weights"]
    num_examples: int
    metrics: dict[str, float]
    lr: float
    local_steps: int
    batch_size: int
    per_node: dict[str, np.ndarray] | None = field(default=None, repr=False)
    same_batch: bool = False
    members: tuple[int, ...] = ()
    crafted: CraftedRound | None = field(default=None, repr=False)
    gradient: dict[str, torch.Tensor] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.kind == "gradient":
            grad = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in self.returned.items()}
        else:
            scale = self.lr * self.local_steps
            grad = {k: torch.from_numpy(np.asarray((np.asarray(self.global_weights[k], np.float64)  # 0-d too
                                                    - np.asarray(self.returned[k], np.float64)) / scale))
                    for k in self.returned}
        object.__setattr__(self, "gradient", grad)

    @classmethod
    def fedsgd(cls, model: torch.nn.Module, gradient: dict[str, torch.Tensor], batch_size: int = 1, *,
               round: int = 1, client_key: int = 0, lr: float = 0.01) -> "ObservedUpdate":
        """A FedSGD reply of ``gradient`` (one step on ``batch_size`` graphs) to ``model``'s weights,
        as the server would receive it: for tests and benchmarks that attack outside a federation.

        Args:
            model (torch.nn.Module): the model whose ``state_dict`` the server sent.
            gradient (dict[str, torch.Tensor]): the reply, by parameter name.
            batch_size (int, optional): the graphs the gradient was computed on. (default: ``1``)
            round (int, optional): the server round. (default: ``1``)
            client_key (int, optional): the replying client. (default: ``0``)
            lr (float, optional): the learning rate the server configured. (default: ``0.01``)
        """
        return cls(round=round, client_key=client_key,
                   global_weights={k: v.detach().clone().numpy() for k, v in model.state_dict().items()},
                   returned={k: v.detach().clone().numpy() for k, v in gradient.items()}, kind="gradient",
                   num_examples=batch_size, metrics={}, lr=lr, local_steps=1, batch_size=batch_size)

    def per_node_gradient(self) -> dict[str, torch.Tensor] | None:
        """``per_node`` as float64 tensors, or None."""
        if self.per_node is None:
            return None
        return {k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in self.per_node.items()}

    @property
    def observed(self) -> str:
        """What the server saw: ``client`` (one reply), ``secure_aggregate`` or
        ``secaggplus_aggregate``."""
        if self.client_key != AGGREGATE:
            return "client"
        return "secaggplus_aggregate" if self.metrics.get("secaggplus") else "secure_aggregate"

    @property
    def num_graphs(self) -> int:
        """How many graphs the update was computed on: a batch per local step, or one batch."""
        return self.batch_size * (1 if self.same_batch else self.local_steps)

    @property
    def exact(self) -> bool:
        """True when ``gradient`` is the exact gradient of one batch (FedSGD, or one SGD step)."""
        return self.kind == "gradient" or self.local_steps == 1


def attack_seed(seed: int, round: int, client_key: int, attack: str) -> int:
    """The seed of one attack call on one update: fixed by the run's seed, the update and the
    attack (its fit group), never by time or order. The evaluator draws the priors with it too, so
    a prior's row and the prior beside every other row are one draw.

    Args:
        seed (int): the run's seed.
        round (int): the update's server round.
        client_key (int): the update's client (:data:`AGGREGATE` for a secure aggregate).
        attack (str): the attack's name (its fit group).

    Returns:
        A seed in ``[0, 2**62)``.
    """
    return (seed * 1_000_003 + round * 10_007 + client_key * 101 + zlib.crc32(attack.encode())) % 2**62


#: The per-graph hints a threat config may grant (``AttackerKnowledge`` fields).
HINTS = ("node_counts", "labels", "adjacencies", "features", "node_label_counts")


class _Hint:
    """A per-graph hint field of :class:`AttackerKnowledge`: reading it, when granted (not None),
    records its name in the object's reads. The value lives in the object's ``__dict__`` under the
    field's name (so copies and pickles carry it); the dataclass takes the field's default, None,
    from ``__get__`` on the class."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj, owner: type | None = None):
        if obj is None:
            return None
        value = obj.__dict__[self.name]
        if value is not None:
            obj.__dict__["_hints_read"].add(self.name)
        return value

    def __set__(self, obj, value) -> None:  # the dataclass's __init__ only: the class is frozen
        obj.__dict__[self.name] = value


@dataclass(frozen=True)
class AttackerKnowledge:
    """What the threat model grants beyond the update.

    ``model`` holds the architecture keyword arguments of :class:`GraphClassifier` (the server
    built the model) and ``loss`` the training loss it configured (``train.loss``). ``schema``
    describes the node features: one-hot blocks, their values, the degree block and the
    standardisation statistics. ``aux_graphs`` are the auxiliary graphs of the configured scenario.
    ``node_counts``, ``labels``, ``adjacencies`` (dense 0/1 ``[n, n]``) and ``features``
    (``[n, F]``, in the model's encoding) are per-graph hints, as is ``node_label_counts`` (a node
    classifier's labelled nodes per class: the labels known, not which node carries which)
    for the update at hand, present only when the threat config grants them (and then recorded
    in every result row). The object remembers which granted hints were read
    (:meth:`hints_read`), so a row can say what the attack looked at, not only what it was given.
    """

    model: dict
    num_features: int
    num_classes: int
    schema: FeatureSchema
    loss: str = "cross_entropy"
    task_type: str = "classification"  # regression: one real output per graph, labels are reals
    aux_graphs: tuple[Data, ...] = ()
    aux_scenario: str = "none"
    node_counts: tuple[int, ...] | None = _Hint()
    labels: tuple[int | float, ...] | None = _Hint()
    adjacencies: tuple[torch.Tensor, ...] | None = _Hint()
    features: tuple[torch.Tensor, ...] | None = _Hint()
    node_label_counts: tuple[tuple[int, ...], ...] | None = _Hint()

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hints_read", set())

    def hints_read(self) -> frozenset[str]:
        """The granted hints (names in :data:`HINTS`) read since :meth:`forget_reads`."""
        return frozenset(self._hints_read)

    def forget_reads(self) -> None:
        """Start :meth:`hints_read` afresh (e.g. before the attack call, after a check that read hints)."""
        self._hints_read.clear()

    def with_hints(self, node_counts=None, labels=None, adjacencies=None, features=None,
                   node_label_counts=None) -> "AttackerKnowledge":
        """A copy granting the given per-graph hints for one update (each turned into a tuple); a
        hint left None is not granted. The copy's reads start empty.

        Args:
            node_counts (Iterable[int], optional): each graph's node count.
            labels (Iterable[int or float], optional): each graph's label (a real under regression).
            adjacencies (Iterable[torch.Tensor], optional): each graph's dense 0/1 adjacency
                ``[n, n]``.
            features (Iterable[torch.Tensor], optional): each graph's node features ``[n, F]``.
            node_label_counts (Iterable[Iterable[int]], optional): each graph's labelled nodes per
                class.
        """
        return replace(self, node_counts=None if node_counts is None else tuple(node_counts),
                       labels=None if labels is None else tuple(labels),
                       adjacencies=None if adjacencies is None else tuple(adjacencies),
                       features=None if features is None else tuple(features),
                       node_label_counts=None if node_label_counts is None
                       else tuple(tuple(c) for c in node_label_counts))

    def build_model(self, weights: dict[str, np.ndarray] | None = None,
                    dtype: torch.dtype = torch.float32) -> GraphClassifier:
        """The attacked architecture, loaded with ``weights`` (e.g. the round's global arrays), in
        eval mode.

        Args:
            weights (dict[str, np.ndarray], optional): a full state dict by name; None leaves the
                fresh initialisation. (default: :obj:`None`)
            dtype (torch.dtype, optional): the model's parameter type. (default: ``torch.float32``)
        """
        model = build_model(self.model, self.num_features, self.num_classes)
        if weights is not None:
            state = {k: torch.as_tensor(np.asarray(v)) for k, v in weights.items()}
            model.load_state_dict(state)
        return model.to(dtype).eval()


@dataclass
class Reconstruction:
    """One recovered graph: features ``x [n, F]``, adjacency scores ``adj [n, n]`` in [0, 1]
    (symmetric, zero diagonal), the node count it assumed and its label guess; ``info`` holds the
    attack's own diagnostics (numbers and strings land in the row as ``info_<key>``)."""

    x: torch.Tensor
    adj: torch.Tensor
    num_nodes: int
    label: int | float | None = None  # a class, or a real target under regression
    info: dict = field(default_factory=dict)


def output_problem(recs: object, knowledge: AttackerKnowledge, batch_size: int) -> str | None:
    """What is wrong with an attack's return value (``invalid_output``), or None: it must be a
    list of at most ``batch_size`` :class:`Reconstruction`, each with features ``[n, F]`` of the
    model's width, edge scores ``[n, n]`` in [0, 1] and a label that is None, a class of the task
    (an integer in ``[0, num_classes)``) or, under regression, a number. NaN and inf are left to
    the ``nan`` status.

    Args:
        recs (object): what the attack returned.
        knowledge (AttackerKnowledge): what it was given (the model's width, classes, task type).
        batch_size (int): the graphs of the attacked update.

    Returns:
        One line saying the first problem found, or None.
    """
    if not isinstance(recs, list):
        return f"returned {type(recs).__name__}, not a list of Reconstruction"
    if len(recs) > batch_size:
        return f"returned {len(recs)} graphs for a batch of {batch_size}"
    for i, rec in enumerate(recs):
        if not isinstance(rec, Reconstruction):
            return f"graph {i} is a {type(rec).__name__}, not a Reconstruction"
        x, adj = rec.x, rec.adj
        if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.size(1) != knowledge.num_features:
            shape = list(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            return f"graph {i}: features {shape}, the model takes [n, {knowledge.num_features}]"
        if not isinstance(adj, torch.Tensor) or tuple(adj.shape) != (x.size(0), x.size(0)):
            shape = list(adj.shape) if isinstance(adj, torch.Tensor) else type(adj).__name__
            return f"graph {i}: edge scores {shape} for {x.size(0)} nodes"
        finite = adj[torch.isfinite(adj)]
        if finite.numel() and (finite.min() < 0 or finite.max() > 1):
            return f"graph {i}: edge scores from {finite.min():.3g} to {finite.max():.3g}, outside [0, 1]"
        if (problem := _label_problem(rec.label, knowledge)) is not None:
            return f"graph {i}: {problem}"
    return None


def _label_problem(label: object, knowledge: AttackerKnowledge) -> str | None:
    if label is None:
        return None
    if isinstance(label, torch.Tensor) and label.numel() == 1:
        label = label.item()
    if knowledge.task_type == "regression":
        ok = isinstance(label, numbers.Real) and not isinstance(label, bool)
        return None if ok else f"label {label!r} is not a number"
    if not isinstance(label, numbers.Integral) or isinstance(label, bool) or not 0 <= label < knowledge.num_classes:
        return f"label {label!r} is not a class of the task (0 to {knowledge.num_classes - 1})"
    return None


@dataclass(frozen=True)
class ClientFailure:
    """A client turn that produced no update: the Flower reply carried an error, or the client
    reported one (an empty partition, an exception in training or a defense). ``client_key`` is
    None when Flower's error reply does not say which partition it was."""

    round: int
    client_key: int | None
    reason: str


Status = Literal["ok", "not_applicable", "error", "nan", "timeout", "failed", "invalid_output", "crashed",
                 "client_failed"]
#: ``ok``: returned; ``not_applicable``: the threat model does not meet the attack's requirements;
#: ``error``: raised; ``nan``: returned NaN or inf; ``timeout``: spent its budget (scored if it
#: returned, or had streamed, its best graph so far); ``failed``: ran as designed but recovered
#: nothing; ``invalid_output``: returned something that is not a batch of graphs of the model's
#: width; ``crashed``: its worker process died (the exit code or signal in the message);
#: ``client_failed``: the client turn behind the update failed, so there was nothing to attack.
STATUSES: tuple[str, ...] = get_args(Status)
#: The statuses that mean something went wrong rather than an attack's result: counted in one
#: warning line at the end of a run, and ``--strict`` exits 1 on any of them.
FAULTS = ("error", "nan", "invalid_output", "crashed", "client_failed")


@dataclass
class AttackOutcome:
    """What one attack call on one update produced, as the attack runner recorded it.

    ``knowledge`` is what the call was given (the granted hints included); ``reconstructions``
    hold one graph per graph of the update's batch, in batch order (an attack whose one output
    stands for the whole batch has it repeated), or fewer when the attack stopped early. A
    ``client_failed`` outcome has no update, only the ``failure``.
    """

    attack: str
    update: ObservedUpdate | None
    knowledge: AttackerKnowledge
    status: Status
    message: str = ""
    reconstructions: list[Reconstruction] = field(default_factory=list)
    seconds: float = 0.0
    failure: ClientFailure | None = None
    hints_read: frozenset[str] | None = None  # the granted hints the call read (None: no call ran)
    info: dict = field(default_factory=dict)  # diagnostics of a call that stopped without output
