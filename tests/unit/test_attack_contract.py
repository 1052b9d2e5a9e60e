"""Every registered attack keeps the interface's contract; the list of attacks comes from the
registry, so a new attack (a plugin's too) is checked without editing this file."""

import inspect

import pytest
import torch

import attacks
from attacks.base import Attack, AttackContext, AttackFailed, AttackTimeout, Budget, Reconstruction
from clients.training import fedsgd_gradient
from fedgraph_sim import registry
from fedgraph_sim.data import make_synthetic
from fedgraph_sim.models import GraphClassifier
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate

DATA = make_synthetic(num_graphs=40, min_nodes=6, max_nodes=8, seed=1)
NAMES = registry.attacks.names()


def test_every_attack_in_the_package_is_registered():
    assert {"random", "dlg", "idlg", "inverting_gradients", "graphdlg", "grain", "tableak",
            "majority_type", "aux_mean_adjacency"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_the_attack_declares_its_paper_threat_model_and_defaults(name):
    cls = registry.attacks.get(name)
    assert issubclass(cls, Attack) and cls.name == name and cls.paper
    assert cls.batch_output in ("per_graph", "one_for_batch")
    doc = (inspect.getmodule(cls).__doc__ or "").lower()
    assert "threat model" in doc and "recovers" in doc, f"{name}: module docstring"
    cls()  # its defaults build


@pytest.mark.parametrize("name", NAMES)
def test_the_attack_returns_valid_graphs_or_says_why_not(name):
    """On one synthetic FedSGD update: ``not_applicable`` with a reason, or one valid graph per
    batch entry (features of the model's width, symmetric [0, 1] scores with a zero diagonal, a
    label of the label set), or a failure or timeout it raised itself."""
    torch.manual_seed(0)
    model = GraphClassifier(4, 2)
    graph = DATA.graphs[0]
    grad, _ = fedsgd_gradient(model, [graph])
    update = ObservedUpdate.fedsgd(model, grad)
    knowledge = AttackerKnowledge(model={}, num_features=4, num_classes=2, schema=DATA.schema,
                                  aux_graphs=tuple(DATA.graphs[20:]), aux_scenario="same").with_hints(
                                      node_counts=[graph.num_nodes])
    attack = registry.attacks.get(name)()
    reason = attack.not_applicable(update, knowledge)
    if reason is not None:
        assert isinstance(reason, str) and reason
        return
    try:
        recs = attack.reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(3.0)))
    except (AttackFailed, AttackTimeout) as exc:
        assert str(exc)
        return
    assert isinstance(recs, list) and len(recs) == 1 and isinstance(recs[0], Reconstruction)
    rec = recs[0]
    n = rec.num_nodes
    assert rec.x.shape == (n, 4) and rec.adj.shape == (n, n)
    assert torch.allclose(rec.adj, rec.adj.t()) and (rec.adj >= 0).all() and (rec.adj <= 1).all()
    assert float(rec.adj.diagonal().abs().sum()) == 0
    assert rec.label in (None, 0, 1)
    assert attacks  # the package import registered them


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
