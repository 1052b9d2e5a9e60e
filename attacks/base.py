"""The attack interface: what an attack receives, what it returns, what it requires.

An attack sees exactly an :class:`~fedgraph_sim.threat.ObservedUpdate` and an
:class:`~fedgraph_sim.threat.AttackerKnowledge` (docs/architecture.md, "Threat model"), plus an
:class:`AttackContext` with its seeded RNG, its time budget, a progress callback and a
run-scoped ``shared`` store. It returns one :class:`~fedgraph_sim.threat.Reconstruction` per graph
it claims to recover (or one for the whole batch, when it declares ``batch_output =
"one_for_batch"``). It declares its :class:`Requirements`; the runner records ``not_applicable``
instead of running it wrongly. Per-round work that sees all of a round's updates at once goes in
the :meth:`Attack.prepare` hook.
"""

from __future__ import annotations

import dataclasses
import math
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Hashable, TypeVar

import torch

from fedgraph_sim import registry
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate, Reconstruction

T = TypeVar("T")


@dataclass(frozen=True)
class Requirements:
    exact_gradient: bool = False  # needs the exact gradient of one batch (FedSGD)
    node_count: bool = False  # needs the node-count hint
    aux_graphs: bool = False  # needs auxiliary graphs
    single_graph: bool = False  # needs an update of one graph (batch size 1, one local step)
    tasks: tuple[str, ...] = ("graph",)  # the model tasks it attacks (model.task: graph | node)
    regression: bool = False  # also attacks a regression model (data.task_type: regression, real labels)
    # what it reads of the model: "classifier" (the bench's GraphClassifier: its layers, readout or
    # embeddings), "forward" (a differentiable forward on a relaxed adjacency and the last linear
    # layer: a user's model too, where that relaxation is its forward) or "none"
    model: str = "classifier"


#: The victims the interface's contract test builds (tests/unit/test_attack_contract.py):
#: ``default``, the bench's 2-layer GCN classifier (a node classifier for the node task) on a small
#: synthetic graph, auxiliary graphs granted; ``grain``, GRAIN's victim (a GCN without conv bias, a
#: per-node readout over ``[X0 || H2]``) on a 4-node molecule whose features carry its degrees.
CONTRACT_VICTIMS = ("default", "grain")
#: What a contract case may grant beyond the node count: the victim's ``features``, or a leaky
#: node classifier's ``per_node_gradients``.
CONTRACT_GRANTS = ("features", "per_node_gradients")


@dataclass(frozen=True)
class ContractCase:
    """A tiny setting where an attack applies, which the contract test runs it in: it must apply,
    return valid graphs, the same ones from the same seed, and stop with a reason when its budget
    is spent.

    Args:
        task: the model task attacked (``graph``, ``node``) or ``regression`` (a graph regressor).
        params: parameters that keep the call to a second or so (fewer iterations, epochs).
        victim: one of :data:`CONTRACT_VICTIMS`.
        grants: any of :data:`CONTRACT_GRANTS`.
        label: the case's test id when the attack has several for one task.
    """

    task: str = "graph"
    params: dict = field(default_factory=dict)
    victim: str = "default"
    grants: tuple[str, ...] = ()
    label: str = ""

    def __post_init__(self) -> None:
        if self.task not in ("graph", "node", "regression") or self.victim not in CONTRACT_VICTIMS:
            raise ValueError(f"contract case: task is graph, node or regression (got {self.task!r}), victim one of "
                             f"{', '.join(CONTRACT_VICTIMS)} (got {self.victim!r})")
        unknown = [g for g in self.grants if g not in CONTRACT_GRANTS]
        if unknown:
            raise ValueError(f"contract case: unknown grants {unknown}; valid: {', '.join(CONTRACT_GRANTS)}")

    @property
    def id(self) -> str:
        return self.label or self.task


class AttackStopped(RuntimeError):
    """An attack that ended without a reconstruction; ``info`` holds its diagnostics so far (what
    its stages counted), which the rows record as a reconstruction's."""

    def __init__(self, message: str = "", info: dict | None = None) -> None:
        super().__init__(message)
        self.info = dict(info or {})


class AttackTimeout(AttackStopped):
    """Raised by :meth:`Budget.check` when an attack's time budget is spent."""


class AttackFailed(AttackStopped):
    """Raised when an attack runs as designed but recovers nothing (e.g. no candidate passed its
    checks); the row gets status ``failed`` and this message, not ``error``."""


class Budget:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = time.monotonic()
        self.deadline = self.started + seconds

    def elapsed(self) -> float:
        """Seconds since the budget started, on the clock its deadline is kept on."""
        return time.monotonic() - self.started

    def expired(self) -> bool:
        return time.monotonic() > self.deadline

    def check(self) -> None:
        if self.expired():
            raise AttackTimeout(f"time budget of {self.seconds:g} s spent")


@dataclass
class AttackContext:
    """``seed`` seeds the call's RNG (:meth:`generator`); ``budget`` is its time budget;
    ``progress(done, total)`` reports iterations; ``shared`` is a store that lives as long as the
    run, for state that an attack's variants share across calls (GraphDLG's decoder); ``fits``
    holds the last fit of the call's fit group (:meth:`shared_fit`).
    :meth:`checkpoint` streams the best graphs so far: if the call is then stopped for overrunning
    its budget, they are scored (status ``timeout``) instead of nothing."""

    seed: int
    budget: Budget
    progress: Callable[[int, int], None] = lambda done, total: None
    shared: dict = field(default_factory=dict)
    stream: Callable[[list], None] = field(default=lambda recs: None, repr=False)
    last_checkpoint: list | None = field(default=None, repr=False)
    fits: dict = field(default_factory=dict, repr=False)

    def shared_fit(self, compute: Callable[[], T]) -> T:
        """``compute()``, or what it returned in an earlier call of the same fit group on the same
        update (``Attack.after_fit``: such calls share their seed, and the executor runs them in one
        worker). Only the latest update's fit is kept. Calls that miss the store compute the same
        fit from the same seed, so rows never depend on whether it hit."""
        if self.fits.get("seed") != self.seed:
            self.fits.clear()
            self.fits.update(value=compute(), seed=self.seed)
        return self.fits["value"]

    def generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(self.seed)

    def checkpoint(self, recs: list[Reconstruction]) -> None:
        self.last_checkpoint = list(recs)
        self.stream(self.last_checkpoint)


class Attack(ABC):
    """Subclasses set ``name``, ``paper``, ``requires`` and a ``Params`` dataclass of defaults,
    and implement :meth:`reconstruct`; :meth:`prepare` and ``batch_output`` are optional."""

    name: ClassVar[str]
    paper: ClassVar[str]
    #: What ``fedgraph-sim attacks`` and the README's attack table (``--markdown``) show: the
    #: paper cited short (default ``paper``), the threat model it needs, what it recovers and its
    #: defaults in words (markdown allowed).
    cited_as: ClassVar[str] = ""
    threat_model: ClassVar[str] = ""
    recovers: ClassVar[str] = ""
    defaults_note: ClassVar[str] = "-"
    requires: ClassVar[Requirements] = Requirements()
    #: ``per_graph``: one reconstruction per graph of the batch, in batch order.
    #: ``one_for_batch``: one reconstruction that stands for the whole batch (e.g. decoded from
    #: the batch's mean embedding), scored against every graph of it.
    batch_output: ClassVar[str] = "per_graph"
    #: True when a call depends on earlier calls of the run (a :meth:`prepare`, ``ctx.shared``):
    #: the attack's calls then run in order in one worker. Otherwise each call stands alone (its
    #: own seed, a fresh ``ctx.shared``) and any free worker may take it.
    keeps_state: ClassVar[bool] = False
    #: Parameters that act only on the fit's result (a binarisation, a decoder applied to it).
    #: Variants that differ only in these share their fit: one seed per update and, through
    #: :meth:`AttackContext.shared_fit`, one computation (DLG+BP is DLG's own fit, binarised).
    after_fit: ClassVar[tuple[str, ...]] = ()
    #: Options beyond the paper (``[ext]``, off in paper mode) that widen where the attack applies
    #: (other training, batches, noisy updates); ``fedgraph-sim audit`` runs the attack with them
    #: as ``<name>@ext`` beside its paper mode.
    audit_options: ClassVar[dict[str, Any]] = {}
    #: True when the paper rebuilds a graph exactly (up to node order) when it succeeds, so its
    #: rows can count graphs rebuilt exactly; ``fedgraph-sim audit`` runs these attacks first.
    exact: ClassVar[bool] = False
    #: True when the attack reads a malicious server's crafted update (``update.crafted``) knowing
    #: the crafting; the others are not applicable there, unless they use no update at all.
    reads_crafting: ClassVar[bool] = False
    #: Where the interface's contract test runs it (:class:`ContractCase`); by default one case per
    #: task it declares (and regression if it does), on the default victim with default parameters.
    contract_cases: ClassVar[tuple[ContractCase, ...]] = ()

    @dataclass
    class Params:
        pass

    @classmethod
    def contract(cls) -> tuple[ContractCase, ...]:
        """The attack's contract cases: its own, or one per declared task on the default victim."""
        if cls.contract_cases:
            return tuple(cls.contract_cases)
        req = cls.requires
        return tuple(ContractCase(task) for task in (*req.tasks, *("regression",) * req.regression))

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.prepare is not Attack.prepare and not cls.keeps_state:
            raise TypeError(f"{cls.__name__} overrides prepare(), so its calls depend on earlier "
                            "ones: declare keeps_state = True")

    def __init__(self, **params: Any) -> None:
        valid = {f.name for f in dataclasses.fields(self.Params)}
        for key in params:
            if key not in valid:
                raise ConfigError(f"attack.params.{self.name}.{key}: not a parameter of "
                                  f"{self.name}; valid: {', '.join(sorted(valid)) or 'none'}")
        defaults = self.Params()
        for key, value in params.items():
            self._check_param(key, getattr(defaults, key), value)
        self.params = self.Params(**params)

    def _check_param(self, key: str, default: Any, value: Any) -> None:
        """A number where the default is one (finite, >= 0: counts, rates, tolerances and budgets),
        a bool where it is a bool, a string where it is a string."""
        where = f"attack.params.{self.name}.{key}"
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: must be true or false (got {value!r})")
        elif isinstance(default, (int, float)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ConfigError(f"{where}: must be a finite number >= 0 (got {value!r})")
            if isinstance(default, int) and not float(value).is_integer():
                raise ConfigError(f"{where}: must be a whole number (got {value!r})")
        elif isinstance(default, str) and not isinstance(value, str):
            raise ConfigError(f"{where}: must be a string (got {value!r})")

    def not_applicable(self, update: ObservedUpdate, knowledge: AttackerKnowledge) -> str | None:
        """Why this attack cannot run on this update under this threat model, or None."""
        req = self.requires
        if update.crafted is not None and not self.reads_crafting and req.model != "none":
            return (f"the server crafted this round's weights ({update.crafted.crafting}, threat.server: malicious); "
                    f"{self.name} reads honest updates only")
        if req.exact_gradient and not self.reads_as_gradient(update):
            return (f"needs the exact gradient of one batch (FedSGD: train.local_steps=1); got {update.kind} after "
                    f"{update.local_steps} local steps")
        if req.node_count and knowledge.node_counts is None:
            return "needs the node-count hint (threat.node_count=true)"
        if req.aux_graphs and not knowledge.aux_graphs:
            return "needs auxiliary graphs (threat.aux_graphs=true)"
        if req.single_graph and update.num_graphs != 1:
            return f"needs one graph (train.batch_size=1); the update was computed on {update.num_graphs}"
        if knowledge.task_type == "regression" and not req.regression:
            return "recovers class labels; the model regresses real targets (data.task_type: regression)"
        task = knowledge.model.get("task", "graph")
        if task not in req.tasks:
            return f"attacks {' and '.join(req.tasks)} classifiers; the model classifies {task}s"
        if knowledge.model.get("module") is not None:
            return self.user_model_problem(knowledge)
        return None

    def reads_as_gradient(self, update: ObservedUpdate) -> bool:
        """Whether this attack reads ``update`` as the exact gradient of one batch, which
        ``requires.exact_gradient`` asks for: FedSGD's, or one local step's (``update.exact``). An
        attack that reads some multi-step updates as one gradient overrides it.

        Args:
            update (ObservedUpdate): the update to read.
        """
        return update.exact

    def user_model_problem(self, knowledge: AttackerKnowledge) -> str | None:
        """Why this attack cannot read a user's model (``model.module``), or None: by its
        ``requires.model`` (an attack that reads it otherwise overrides this)."""
        if self.requires.model == "none":
            return None
        name = knowledge.model["module"].rpartition(":")[2]
        if self.requires.model == "classifier":
            return (f"reads the layers of the bench's own classifier (model.conv, model.pool, ...); "
                    f"a user's model ({name}) is not one it can read")
        from fedgraph_sim.models.user import relaxation_problem
        return relaxation_problem(knowledge.model, knowledge.num_features, knowledge.num_classes)

    def prepare(self, updates: list[ObservedUpdate], knowledge: AttackerKnowledge,
                ctx: AttackContext) -> None:
        """Once per round, before any :meth:`reconstruct` of that round, with every selected
        update of the round (e.g. to train a decoder on the round's weights). A no-op by default;
        an exception here is logged and the round's calls go on."""

    @abstractmethod
    def reconstruct(self, update: ObservedUpdate, knowledge: AttackerKnowledge,
                    ctx: AttackContext) -> list[Reconstruction]:
        ...


def fit_groups(attacks: dict[str, Attack], case: Callable[[str], Hashable] = lambda name: None) -> dict[str, str]:
    """Each attack's fit group: the first attack (in ``attacks``' order) of its class whose
    parameters outside ``after_fit`` are its own and whose ``case(name)`` (what else the fit
    depends on: the hints granted, the budget) is equal; itself when its class has no
    ``after_fit``."""
    first: dict[Hashable, str] = {}
    groups = {}
    for name, attack in attacks.items():
        key: Hashable = name
        if attack.after_fit:
            fit_params = tuple((k, repr(v)) for k, v in sorted(dataclasses.asdict(attack.params).items())
                               if k not in attack.after_fit)
            key = (type(attack), fit_params, case(name))
        groups[name] = first.setdefault(key, name)
    return groups


register = registry.attacks.register  # a class decorator: registered under ``cls.name``


def build_attack(name: str, params: dict | None = None, key: str = "attack.names") -> Attack:
    """The attack of row name ``name`` (``<attack>`` or ``<attack>@<variant>``) with ``params``;
    ``<attack>@ext`` starts from the attack's ``audit_options`` (its [ext] options that widen where
    it applies), which ``params`` may override."""
    base, _, variant = name.partition("@")
    cls = registry.attacks.get(base, key=key)
    options = dict(cls.audit_options) if variant == "ext" else {}
    return cls(**{**options, **(params or {})})
