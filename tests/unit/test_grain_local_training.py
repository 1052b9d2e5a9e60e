import copy
import dataclasses

import pytest
import torch

from attacks.base import AttackContext, Budget
from attacks.grain import GRAIN
from attacks.grain.local_training import LocalTraining
from attacks.grain.scorer import GradientScorer
from clients.training import fedavg_weights
from fedgraph_sim.metrics.gsm import gsm
from tests.unit.grain_cases import dense_adj, molecule, observed, victim


def fedavg_update(smiles: str, steps: int = 5, lr: float = 0.01, dtype=torch.float32):
    """What the server sees when a client trains ``steps`` SGD steps on one molecule."""
    g, _ = molecule(smiles)
    graph = g.clone()
    graph.x = graph.x.to(dtype)
    model = copy.deepcopy(victim("gcn")).to(dtype)
    weights, _ = fedavg_weights(model, [[graph]] * steps, lr, loss="bce")
    update, knowledge = observed(smiles)
    update = dataclasses.replace(update, returned={k: v.numpy() for k, v in weights.items()},
                                 kind="weights", local_steps=steps, lr=lr, same_batch=True)
    return update, knowledge, g


def test_a_gradient_has_no_perturbation_and_weights_have_their_rounding():
    update, _ = observed("CCO")
    assert LocalTraining.of(update) == LocalTraining(0.01, 1)
    fedavg, _, _ = fedavg_update("CC(=O)Oc1ccccc1C(=O)O")
    exact, _, _ = fedavg_update("CC(=O)Oc1ccccc1C(=O)O", dtype=torch.float64)  # the same training, unrounded
    training = LocalTraining.of(fedavg)
    name = "convs.0.lin.weight"
    error = fedavg.gradient[name] - exact.gradient[name]
    moved = torch.from_numpy(fedavg.returned[name] != fedavg.global_weights[name])
    assert training.changed[name] == moved.sum() < 0.5 * moved.numel()  # the features aspirin has
    assert error[~moved].std() < 0.05 * training.noise[name]  # entries never moved: almost no rounding
    assert 0.8 < error[moved].std().item() / training.noise[name] < 1.25  # the model predicts the rest
    assert training.replays and training.change[name] > 0
    order = ["convs.0.lin.weight", "convs.1.lin.weight", "classifier.0.weight", "classifier.0.bias"]
    assert training.drift("convs.0.lin.weight", order) == 0.0  # layer 1 sees the data itself
    assert training.drift("classifier.0.weight", order) == pytest.approx(
        training.change["convs.0.lin.weight"] + training.change["convs.1.lin.weight"])


def test_the_replayed_local_training_matches_at_the_truth():
    """Replayed in float64, five steps on the true molecule give the client's pseudo-gradient up to
    the client's rounding, and within the exactness slack; one step of the wrong label does not."""
    update, knowledge, g = fedavg_update("CC(=O)Oc1ccccc1C(=O)O")
    model = knowledge.build_model(update.global_weights, dtype=torch.float64)
    scorer = GradientScorer(model, update.gradient, g.x.double(), "bce", 2, steps=5, lr=0.01)
    edges = [tuple(e) for e in torch.nonzero(torch.triu(dense_adj(g))).tolist()]
    by_label = [scorer.gap(grads) for grads in scorer.label_gradients(list(range(g.num_nodes)), edges)]
    slack = LocalTraining.of(update).exact_slack([n for n, _ in model.named_parameters()])
    assert by_label[int(g.y)] < 1e-6 + slack < by_label[1 - int(g.y)]


@pytest.mark.parametrize("smiles", ["OCC(O)CO", "CC(=O)Oc1ccccc1C(=O)O", "CC(C)Cc1ccc(cc1)C(C)C(=O)O"])
def test_a_five_step_fedavg_update_of_one_molecule_is_recovered_exactly(smiles):
    update, knowledge, g = fedavg_update(smiles)
    assert "needs the exact gradient" in GRAIN().not_applicable(update, knowledge)
    attack = GRAIN(local_steps=True)
    assert attack.not_applicable(update, knowledge) is None
    rec, = attack.reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(60)))
    assert rec.info["exact"] == 1 and rec.info["attack_input"] == "simulated_local_training"
    assert gsm(rec.x, rec.adj, g.x, dense_adj(g), knowledge.schema)["full_iso"] == 1.0
    assert rec.label == int(g.y)


def test_local_steps_on_different_molecules_are_a_batch_replayed_in_order():
    """Three steps, each on another molecule (epoch sampling): one batch of three for GRAIN, read
    from one-step gradients and exact when some order of the three over the steps replays the
    update."""
    from fedgraph_sim.evaluation.batch import batch_assignment

    smiles = ["CCO", "OCC(O)CO", "Cc1ccccc1"]
    graphs = [molecule(s)[0] for s in smiles]
    weights, _ = fedavg_weights(copy.deepcopy(victim("gcn")), [[g] for g in graphs], 0.01, loss="bce")
    update, knowledge = observed(smiles[0])
    update = dataclasses.replace(update, returned={k: v.numpy() for k, v in weights.items()}, kind="weights",
                                 local_steps=3, same_batch=False)
    assert update.num_graphs == 3
    assert GRAIN(local_steps=True).not_applicable(update, knowledge) == (
        "needs one graph; the update was computed on 3 (attack.params.<name>.batches=true extends GRAIN "
        "to batches)")
    recs = GRAIN(local_steps=True, batches=True).reconstruct(update, knowledge,
                                                              AttackContext(seed=0, budget=Budget(60)))
    assert len(recs) == 3 and all(r.info["exact"] == 1 for r in recs)
    order = batch_assignment(recs, graphs, knowledge.schema)
    assert [gsm(recs[j].x, recs[j].adj, g.x, dense_adj(g), knowledge.schema)["full_iso"]
            for j, g in zip(order, graphs)] == [1.0, 1.0, 1.0]
    assert [recs[j].label for j in order] == [int(g.y) for g in graphs]


def test_an_update_lost_in_its_rounding_fails_with_the_reason():
    """At lr 1e-7 five steps move each float32 weight by less than its rounding: nothing in the
    update can be matched, and the attack says so instead of matching noise. At lr 1e-6 the
    update stands clear of its rounding but its weak directions drown: no graph is called exact."""
    from attacks.base import AttackFailed, AttackTimeout

    update, knowledge, _ = fedavg_update("CC(=O)Oc1ccccc1C(=O)O", lr=1e-7)
    with pytest.raises(AttackFailed, match="within the client's float32 rounding"):
        GRAIN(local_steps=True).reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(30)))
    update, knowledge, _ = fedavg_update("CC(=O)Oc1ccccc1C(=O)O", lr=1e-6)
    try:  # a failure or a spent budget (on a loaded machine) also calls nothing exact
        recs = GRAIN(local_steps=True).reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(30)))
    except (AttackFailed, AttackTimeout):
        recs = []
    assert not any(r.info["exact"] for r in recs)


def test_an_epochs_ranked_witnessed_blocks_join_the_passing_ones():
    """Three steps at lr 0.003, each on another molecule: the client's rounding hides half the
    true 1-hop blocks, and [ext] ``rank_witnessed`` adds the nearest failing candidates of the
    witnessed types to the blocks the search starts from (off: the plain checks only)."""
    smiles = ["CC(=O)Oc1ccccc1C(=O)O", "CCN(CC)CC", "C1CCNCC1"]
    graphs = [molecule(s)[0] for s in smiles]
    weights, _ = fedavg_weights(copy.deepcopy(victim("gcn")), [[g] for g in graphs], 0.003, loss="bce")
    update, knowledge = observed(smiles[0])
    update = dataclasses.replace(update, returned={k: v.numpy() for k, v in weights.items()}, kind="weights",
                                 local_steps=3, lr=0.003, same_batch=False)
    runs = [GRAIN(local_steps=True, batches=True, **extra).reconstruct(
        update, knowledge, AttackContext(seed=0, budget=Budget(5)))[0].info for extra in ({}, {"rank_witnessed": 3})]
    plain, ranked = runs
    assert "one_hop_witnessed" not in plain and ranked["one_hop_witnessed"] > 0
    assert ranked["one_hop_kept"] == plain["one_hop_kept"]  # the checks alone are unchanged
