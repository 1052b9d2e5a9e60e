import dataclasses

import pytest
import torch

from attacks.base import AttackContext, AttackFailed, Budget
from attacks.grain import GRAIN
from attacks.grain.noise import NoiseEstimate
from attacks.grain.scorer import GradientScorer
from clients.defenses.dp_gradients import DPGradients
from fedgraph_sim.metrics.gsm import gsm
from tests.unit.grain_cases import dense_adj, molecule, observed

ASPIRIN = "CC(=O)Oc1ccccc1C(=O)O"
READ = ("convs.0.lin.weight", "convs.1.lin.weight", "classifier.0.weight")


def defended(smiles: str, sigma: float, noise: str = "gaussian", clip: float | None = None, seed: int = 1):
    """The update of one FedSGD step on ``smiles`` after the client's DP-Gradients defense."""
    update, knowledge = observed(smiles)
    defense = DPGradients(sigma, noise=noise, clip=clip)
    grads = {k: torch.from_numpy(v).float() for k, v in update.returned.items()}
    noisy = defense.apply(grads, torch.Generator().manual_seed(seed))
    return dataclasses.replace(update, returned={k: v.numpy() for k, v in noisy.items()}), knowledge


def attack(update, knowledge, **params):
    return GRAIN(**params).reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(60)))[0]


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_the_noise_level_is_read_from_the_spectrum(noise):
    update, _ = defended(ASPIRIN, 1e-6, noise)
    true_std = 1e-6 * (1 if noise == "gaussian" else 2 ** 0.5)  # Laplace(0, b) has variance 2 b^2
    estimate = NoiseEstimate.of({k: update.gradient[k] for k in READ})
    assert estimate.sigma == pytest.approx(true_std, rel=0.02)


def test_on_a_clean_gradient_the_estimated_ranks_are_the_distinct_input_rows():
    """Ethanol's three atoms differ at every layer: each checked gradient has rank 3, its node
    count, and the noise-aware attack reads the same ranks as the paper's."""
    update, knowledge = observed("CCO")
    paper, aware = attack(update, knowledge), attack(update, knowledge, noise_aware=True)
    assert [aware.info[f"rank_{k}"] for k in (1, 2, 3)] == [3, 3, 3]
    assert [paper.info[f"rank_{k}"] for k in (1, 2, 3)] == [3, 3, 3]
    assert aware.info["noise_sigma"] < 1e-10 and aware.info["exact"] == 1


@pytest.mark.parametrize("smiles", ["CCO", "c1ccncc1", ASPIRIN])
def test_noise_aware_grain_recovers_what_the_paper_loses_to_noise(smiles):
    update, knowledge = defended(smiles, 1e-7)
    with pytest.raises(AttackFailed, match="full rank"):  # every singular value above its tolerance
        attack(update, knowledge)
    rec = attack(update, knowledge, noise_aware=True)
    g, schema = molecule(smiles)
    assert rec.info["exact"] == 1 and rec.label == int(g.y)
    assert gsm(rec.x, rec.adj, g.x, dense_adj(g), schema)["full_iso"] == 1.0


def test_a_clipped_noisy_update_is_matched_up_to_its_scale():
    """Clipping to half the gradient's norm scales the update: the replay is fitted to it."""
    update, knowledge = observed(ASPIRIN)
    norm = sum(float((v ** 2).sum()) for v in update.returned.values()) ** 0.5
    update, knowledge = defended(ASPIRIN, 1e-8, clip=norm / 2)
    rec = attack(update, knowledge, noise_aware=True)
    assert rec.info["exact"] == 1


def test_the_exactness_test_admits_the_truth_and_not_a_near_miss():
    update, knowledge = defended(ASPIRIN, 1e-6)
    g, _ = molecule(ASPIRIN)
    model = knowledge.build_model(update.global_weights, dtype=torch.float64)
    scorer = GradientScorer(model, update.gradient, g.x, "bce", 2, fit_scale=True)
    tol = NoiseEstimate.of({k: update.gradient[k] for k in READ}).exact_tol(
        [p.numel() for p in model.parameters()])
    edges = [tuple(e) for e in g.edge_index.T.tolist() if e[0] < e[1]]
    truth, label = scorer.distance(list(range(g.num_nodes)), edges)
    missing_bond, _ = scorer.distance(list(range(g.num_nodes)), edges[1:])
    assert label == int(g.y) and truth < tol < missing_bond


def test_the_gap_closes_above_the_weakest_direction():
    """At 1e-5 per entry (7% of the gradient's root-mean-square entry) the weakest directions of
    aspirin's layer-1 gradient sink below the noise's edge: the estimated rank falls below the
    seven distinct node rows, and the attack fails with its reason instead of guessing."""
    update, knowledge = defended(ASPIRIN, 1e-5)
    estimate = NoiseEstimate.of({k: update.gradient[k] for k in READ})
    assert estimate.ranks["convs.0.lin.weight"] < 7
    with pytest.raises(AttackFailed) as failure:
        attack(update, knowledge, noise_aware=True)
    # the failure carries the stages' counts to the rows
    assert failure.value.info["rank_1"] < 7 and failure.value.info["noise_sigma"] == pytest.approx(1e-5, rel=0.02)


def test_noise_that_drowns_every_direction_is_said_so():
    update, knowledge = defended(ASPIRIN, 1e-3)
    with pytest.raises(AttackFailed, match="lies within the defense's noise"):
        attack(update, knowledge, noise_aware=True)


def test_a_noisy_fedavg_update_is_recovered_with_local_steps():
    """Five local steps on aspirin, the returned weights' change perturbed by noise of 1e-8 per
    entry (2e-7 in the pseudo-gradient): the rounding-aware checks alone miss the molecule, with the
    noise read off the spectrum they recover it."""
    import numpy as np

    from tests.unit.test_grain_local_training import fedavg_update

    update, knowledge, g = fedavg_update(ASPIRIN)
    rng = np.random.default_rng(0)
    noisy = {k: (v.astype(np.float64) + 1e-8 * rng.standard_normal(v.shape)).astype(np.float32)
             for k, v in update.returned.items()}
    update = dataclasses.replace(update, returned=noisy)
    _, schema = molecule(ASPIRIN)
    try:
        plain = attack(update, knowledge, local_steps=True)
        assert gsm(plain.x, plain.adj, g.x, dense_adj(g), schema)["full_iso"] == 0.0
    except AttackFailed:  # or nothing at all
        pass
    aware = attack(update, knowledge, local_steps=True, noise_aware=True)
    assert aware.info["exact"] == 1 and gsm(aware.x, aware.adj, g.x, dense_adj(g), schema)["full_iso"] == 1.0


def test_a_noisy_batch_below_the_width_is_attempted():
    """Noise fills the spectrum of a batch's layer-1 gradient too: paper mode calls it full rank,
    the noise-aware option counts only the directions above the noise."""
    from tests.unit.test_grain_batch import batch_update

    update, knowledge, _ = batch_update(["CCO", "c1ccncc1"])
    grads = {k: torch.from_numpy(v).float() for k, v in update.returned.items()}
    noisy = DPGradients(1e-7, noise="gaussian").apply(grads, torch.Generator().manual_seed(0))
    update = dataclasses.replace(update, returned={k: v.numpy() for k, v in noisy.items()})
    assert "full rank" in GRAIN(batches=True).not_applicable(update, knowledge)
    assert GRAIN(batches=True, noise_aware=True).not_applicable(update, knowledge) is None
