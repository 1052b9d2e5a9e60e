"""Every registered attack keeps the interface's contract. The list of attacks comes from the
registry, and each runs in the cases it declares itself (``Attack.contract_cases``: a victim built
here, grants and small parameters; by default one per model task it declares, and one for
regression if it declares that), where it must apply, return valid graphs, the same ones from the
same seed, and stop with a reason when its budget is spent. So a new attack is checked without
editing this file."""

from __future__ import annotations

import inspect
import math
import pickle
from dataclasses import replace
from functools import lru_cache

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import dense_to_sparse

import attacks
from attacks.base import Attack, AttackContext, AttackFailed, AttackTimeout, Budget, ContractCase, Reconstruction
from clients.training import fedsgd_gradient, per_node_gradients
from fedgraph_sim import registry
from fedgraph_sim.data import load_dataset, make_synthetic
from fedgraph_sim.data.schema import FeatureBlock, FeatureSchema
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate, output_problem

NAMES = registry.attacks.names()
BUDGET = 120.0  # seconds: far above what any setting takes, so running out of it is a failure
Case = tuple[ObservedUpdate, AttackerKnowledge]


# -- the victims ---------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def synthetic():
    return make_synthetic(num_graphs=40, min_nodes=6, max_nodes=8, seed=1)


def observe(model_kwargs: dict, graph: Data, *, num_features: int, num_classes: int, schema: FeatureSchema,
            aux=(), loss: str = "cross_entropy", task_type: str = "classification", per_node: bool = False) -> Case:
    """One FedSGD step of the victim on ``graph`` as the server observes it, and the knowledge of
    an attacker granted the node count and ``aux`` (nothing else)."""
    knowledge = AttackerKnowledge(model=model_kwargs, num_features=num_features, num_classes=num_classes,
                                  schema=schema, loss=loss, task_type=task_type, aux_graphs=tuple(aux),
                                  aux_scenario="same" if aux else "none")
    torch.manual_seed(0)
    model = knowledge.build_model()
    grad, _ = fedsgd_gradient(model, [graph], loss=loss)
    update = ObservedUpdate.fedsgd(model, grad)
    if per_node:  # a leaky client's per-node gradients (threat.per_node_gradients)
        leaked = per_node_gradients(model, graph, loss)
        update = replace(update, per_node={k: v.numpy() for k, v in leaked.items()})
    return update, knowledge.with_hints(node_counts=[graph.num_nodes])


def graph_case() -> Case:
    """A 2-layer GCN graph classifier (the default model) on one synthetic molecule; the auxiliary
    set is another half of the same dataset."""
    data = synthetic()
    return observe({}, data.graphs[0], num_features=data.schema.width, num_classes=2,
                   schema=data.schema, aux=data.graphs[20:])


def features_granted(case: Case) -> Case:
    """``case`` with the victim's features granted (threat.features_known)."""
    update, knowledge = case
    return update, knowledge.with_hints(node_counts=knowledge.node_counts, features=[synthetic().graphs[0].x])


def regression_case() -> Case:
    """The same molecule with a real target; the model regresses it under MSE."""
    data = synthetic()
    graph = data.graphs[0].clone()
    graph.y = torch.tensor([-1.5])
    return observe({}, graph, num_features=data.schema.width, num_classes=1, schema=data.schema,
                   aux=data.graphs[20:], loss="mse", task_type="regression")


@lru_cache(maxsize=2)
def balls(labelled: str):
    return load_dataset("random_graph_balls", num_subgraphs=6, graph_nodes=200, subgraph_nodes=6, features=8,
                        labelled=labelled, seed=0)


def node_case(per_node: bool = False) -> Case:
    """A node classifier (GCN, ``task: node``) on one client's 6-node subgraph: only its centre
    labelled (GLG's Node-1), or every node with a leaky client's per-node gradients (Node-2)."""
    data = balls("all" if per_node else "center")
    return observe(dict(task="node"), data.graphs[0], num_features=data.schema.width, num_classes=2,
                   schema=data.schema, aux=data.graphs[1:], per_node=per_node)


GRAIN_SCHEMA = FeatureSchema((FeatureBlock("atom_type", ("C", "N", "O")), FeatureBlock("degree", (0, 1, 2, 3))),
                             type_block="atom_type", degree_block="degree")
# GRAIN's architecture (experiments/configs/reproduce/grain_mutag.yaml) at a smaller width.
GRAIN_MODEL = dict(conv="gcn", hidden=64, conv_bias=False, last_activation=False, readout="mlp",
                   readout_hidden=[64, 16], readout_input="concat_input", readout_placement="per_node")


def grain_case(node_labels: bool = False) -> Case:
    """A 4-node molecule (C-C(-N)-O) whose features carry its degrees, under GRAIN's victim: a GCN
    without conv bias, a per-node readout MLP on [X0 || H2], BCE; with ``node_labels`` every atom
    carries a label of its own and the model classifies them (GRAIN's node classification)."""
    types, edges = [0, 0, 1, 2], [(0, 1), (1, 2), (1, 3)]
    adj = torch.zeros(4, 4)
    for i, j in edges:
        adj[i, j] = adj[j, i] = 1
    x = GRAIN_SCHEMA.onehot(torch.stack([torch.tensor(types), adj.sum(1).long()], dim=1))
    graph = Data(x=x, edge_index=dense_to_sparse(adj)[0], y=torch.tensor([0]), num_nodes=4)
    model = GRAIN_MODEL
    if node_labels:
        graph.node_y, graph.train_mask = torch.tensor([0, 1, 1, 0]), torch.ones(4, dtype=torch.bool)
        model = {**GRAIN_MODEL, "task": "node"}
    return observe(model, graph, num_features=GRAIN_SCHEMA.width, num_classes=2, schema=GRAIN_SCHEMA,
                   loss="bce")


# -- each attack's cases ------------------------------------------------------------------------
def build_case(case: ContractCase) -> Case:
    """The update and the knowledge of an attack's :class:`ContractCase`."""
    if case.victim == "grain":
        built = grain_case(node_labels=case.task == "node")
    elif case.task == "node":
        built = node_case(per_node="per_node_gradients" in case.grants)
    else:
        built = regression_case() if case.task == "regression" else graph_case()
    return features_granted(built) if "features" in case.grants else built


def case_problems(name: str) -> list[str]:
    """What is wrong with the contract cases attack ``name`` declares, one line each."""
    cls = registry.attacks.get(name)
    req = cls.requires
    needed = set(req.tasks) | ({"regression"} if req.regression else set())
    cases = cls.contract()
    problems = [f"attack '{name}' declares {task} but no contract case for it (contract_cases)"
                for task in sorted(needed - {c.task for c in cases})]
    problems += [f"attack '{name}' has a {c.task} contract case but does not declare {c.task} (requires)"
                 for c in cases if c.task not in needed]
    ids = [c.id for c in cases]
    problems += [f"attack '{name}' has two contract cases with id '{i}': give them labels" for i in sorted(set(ids))
                 if ids.count(i) > 1]
    return problems


CASES = [pytest.param(name, case, id=f"{name}-{case.id}")
         for name in NAMES for case in registry.attacks.get(name).contract()]


def run(attack: Attack, case: Case, budget: float = BUDGET) -> list[Reconstruction]:
    """One call as the attack worker makes it: on its own copy of the update and the knowledge,
    torch's RNG seeded with the call's seed, a fresh context, ``prepare`` first when the attack
    keeps state."""
    update, knowledge = pickle.loads(pickle.dumps(case))
    ctx = AttackContext(seed=0, budget=Budget(budget))
    torch.manual_seed(ctx.seed)
    if attack.keeps_state:
        attack.prepare([update], knowledge, ctx)
    return attack.reconstruct(update, knowledge, ctx)


def assert_valid(recs, update: ObservedUpdate, knowledge: AttackerKnowledge, batch_output: str) -> None:
    """One graph per batch entry (one for the batch if it says so), each with features of the
    model's width, finite symmetric [0, 1] edge scores with a zero diagonal and a label of the
    label set (a real under regression)."""
    problem = output_problem(recs, knowledge, update.num_graphs)  # the runner's invalid_output check
    assert problem is None, problem
    assert len(recs) == (update.num_graphs if batch_output == "per_graph" else 1)
    for rec in recs:
        n = rec.num_nodes
        assert n >= 1 and rec.x.shape == (n, knowledge.num_features) and rec.adj.shape == (n, n)
        assert torch.isfinite(rec.x).all() and torch.isfinite(rec.adj).all()
        assert torch.allclose(rec.adj, rec.adj.t()) and (rec.adj >= 0).all() and (rec.adj <= 1).all()
        assert float(rec.adj.diagonal().abs().sum()) == 0
        if knowledge.task_type == "regression":
            assert rec.label is None or (isinstance(rec.label, float) and math.isfinite(rec.label))
        else:
            assert rec.label is None or rec.label in range(knowledge.num_classes)
        assert isinstance(rec.info, dict)


@pytest.fixture
def sealed(tmp_path, monkeypatch, offline):
    """Nothing to read beyond the call's arguments: an empty working directory, no data root, an
    empty cache, no network; and one torch thread, as in an attack worker."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FEDGRAPH_DATA_ROOT", str(tmp_path / "no-data"))
    monkeypatch.setenv("FEDGRAPH_CACHE", str(tmp_path / "empty-cache"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# -- the tests -----------------------------------------------------------------------------------
def test_every_attack_in_the_package_is_registered():
    assert {"random", "dlg", "idlg", "inverting_gradients", "graphdlg", "grain", "tableak", "majority_type",
            "aux_mean_adjacency", "aux_sample", "fedgig", "gi_gan", "gra_gfa", "glg"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_the_attack_has_a_contract_case_for_every_task_it_declares(name):
    assert case_problems(name) == []


def test_a_case_for_an_undeclared_task_is_reported(monkeypatch):
    from attacks.random_guess import RandomGuess

    monkeypatch.setattr(RandomGuess, "requires", replace(RandomGuess.requires, regression=False))
    monkeypatch.setattr(RandomGuess, "contract_cases", (ContractCase("graph"), ContractCase("node"),
                                                        ContractCase("regression"), ContractCase("graph")))
    assert case_problems("random") == [
        "attack 'random' has a regression contract case but does not declare regression (requires)",
        "attack 'random' has two contract cases with id 'graph': give them labels"]


@pytest.mark.parametrize("name", NAMES)
def test_the_attack_declares_its_paper_threat_model_and_defaults(name):
    cls = registry.attacks.get(name)
    assert issubclass(cls, Attack) and cls.name == name and cls.paper
    assert cls.batch_output in ("per_graph", "one_for_batch")
    doc = (inspect.getmodule(cls).__doc__ or "").lower()
    assert "threat model" in doc and "recovers" in doc, f"{name}: module docstring"
    cls()  # its defaults build


@pytest.mark.parametrize("name, setting", CASES)
def test_the_attack_applies_in_its_case_and_returns_valid_graphs_deterministically(name, setting, sealed):
    """Applicable (no ``not_applicable``, no failure, no timeout), valid graphs, the same ones
    again from the same seed, with nothing to read beyond the update and the knowledge."""
    case = build_case(setting)
    update, knowledge = case
    cls = registry.attacks.get(name)
    reason = cls(**setting.params).not_applicable(update, knowledge)
    assert reason is None, f"{name} is not applicable in its {setting.id} setting: {reason}"
    first = run(cls(**setting.params), case)
    assert_valid(first, update, knowledge, cls.batch_output)
    again = run(cls(**setting.params), case)
    assert [(r.num_nodes, r.label) for r in again] == [(r.num_nodes, r.label) for r in first]
    assert all(torch.equal(a.x, b.x) and torch.equal(a.adj, b.adj) for a, b in zip(first, again)), \
        f"{name}: another output from the same seed"


@pytest.mark.parametrize("name, setting", CASES)
def test_a_spent_budget_stops_the_attack_with_a_reason_or_it_returns_valid_graphs(name, setting, sealed):
    """With no time left an attack raises its own timeout or failure, with a message, or returns
    valid graphs (those that check their budget only between stages)."""
    case = build_case(setting)
    cls = registry.attacks.get(name)
    try:
        recs = run(cls(**setting.params), case, budget=0.0)
    except (AttackFailed, AttackTimeout) as exc:
        assert str(exc)
        return
    assert_valid(recs, *case, cls.batch_output)


@pytest.mark.parametrize("name", NAMES)
def test_the_parameters_it_applies_after_the_fit_are_its_own(name):
    cls = registry.attacks.get(name)
    assert set(cls.after_fit) <= {f.name for f in inspect.signature(cls.Params).parameters.values()}


def test_variants_differing_only_after_the_fit_share_their_fit_group():
    from attacks.base import fit_groups
    from attacks.dlg import DLG
    from attacks.idlg import IDLG

    configured = {"dlg": DLG(), "dlg@bp": DLG(discretize=True), "dlg@long": DLG(iterations=300),
                  "dlg@long_bp": DLG(iterations=300, discretize=True), "idlg": IDLG(), "idlg@bp": IDLG(discretize=True),
                  "dlg@granted": DLG(discretize=True), "random": attacks.random_guess.RandomGuess(),
                  "random@2": attacks.random_guess.RandomGuess()}
    groups = fit_groups(configured, lambda name: name == "dlg@granted")  # e.g. another hint grant
    assert groups == {"dlg": "dlg", "dlg@bp": "dlg", "dlg@long": "dlg@long", "dlg@long_bp": "dlg@long",
                      "idlg": "idlg", "idlg@bp": "idlg", "dlg@granted": "dlg@granted", "random": "random",
                      "random@2": "random@2"}


def test_a_shared_fit_is_computed_once_per_seed_and_only_the_last_is_kept():
    computed = []

    def fit(value):
        computed.append(value)
        return value

    fits = {}
    first = AttackContext(seed=1, budget=Budget(60), fits=fits).shared_fit(lambda: fit("a"))
    again = AttackContext(seed=1, budget=Budget(60), fits=fits).shared_fit(lambda: fit("b"))
    other = AttackContext(seed=2, budget=Budget(60), fits=fits).shared_fit(lambda: fit("c"))
    assert (first, again, other, computed) == ("a", "a", "c", ["a", "c"])
    assert fits == {"seed": 2, "value": "c"}


def test_a_fit_that_raises_is_not_kept():
    fits = {}

    def timed_out():
        raise AttackTimeout("spent")

    with pytest.raises(AttackTimeout):
        AttackContext(seed=1, budget=Budget(60), fits=fits).shared_fit(timed_out)
    assert AttackContext(seed=1, budget=Budget(60), fits=fits).shared_fit(lambda: "again") == "again"
