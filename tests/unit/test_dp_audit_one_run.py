"""The one-run epsilon lower bound (Steinke, Nasr and Jagielski, NeurIPS 2023): its closed form
where there is one, validity and tightness on randomised response (a mechanism whose epsilon is
known exactly), and guesses that never read which canaries were included."""

import math

import numpy as np
import pytest

from fedgraph_sim.dp_audit import epsilon_lower_bound, guesses_from_scores, p_value


def test_at_epsilon_0_and_delta_0_the_p_value_is_a_fair_coins_tail():
    assert p_value(10, 10, 10, 0.0, 0.0) == pytest.approx(1 / 1024)
    assert p_value(10, 10, 0, 0.0, 0.0) == 1.0  # 0 or more correct: certain
    assert p_value(1000, 10, 10, 0.0, 1e-3) > p_value(1000, 10, 10, 0.0, 0.0)  # delta's term adds


def test_all_guesses_right_without_delta_give_randomised_responses_epsilon_in_closed_form():
    # v = r and delta 0: the p-value is q^r, so the bound solves q^r = 0.05, eps = log(q / (1 - q))
    q = 0.05 ** (1 / 100)
    assert epsilon_lower_bound(100, 100, 100, 0.0) == pytest.approx(math.log(q / (1 - q)), abs=1e-5)
    bound = epsilon_lower_bound(1000, 1000, 1000, 1e-5)
    assert p_value(1000, 1000, 1000, bound, 1e-5) < 0.05 <= p_value(1000, 1000, 1000, bound + 1e-4, 1e-5)
    assert 4 < bound < 7  # the method's ceiling at 1000 canaries, delta 1e-5
    assert epsilon_lower_bound(1000, 1000, 500, 1e-5) == 0.0  # chance: nothing rejected


def test_more_correct_guesses_never_lower_the_bound():
    bounds = [epsilon_lower_bound(1000, 200, v, 1e-5) for v in range(100, 201, 10)]
    assert bounds == sorted(bounds) and bounds[0] == 0.0 < bounds[-1]


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_on_randomised_response_the_bound_holds_and_comes_close(epsilon):
    # each canary's output is its membership bit flipped with probability 1 / (1 + e^eps): exactly
    # eps-DP, and the best possible guesses are the outputs themselves
    rng = np.random.default_rng(7)
    bounds = []
    for _ in range(20):
        included = rng.random(1000) < 0.5
        keep = rng.random(1000) < 1 / (1 + math.exp(-epsilon))
        scores = np.where(keep, included, ~included).astype(float) + rng.random(1000) * 1e-3  # ties broken
        bounds.append(guesses_from_scores(scores.tolist(), included.tolist(), delta=0.0).epsilon_lower_bound)
    assert sum(b > epsilon for b in bounds) <= 2  # valid: above the truth at most ~5% of the runs
    assert np.median(bounds) > 0.5 * epsilon  # and not vacuous


def test_the_guesses_are_chosen_from_the_scores_alone():
    rng = np.random.default_rng(0)
    scores = rng.random(200).tolist()
    a = guesses_from_scores(scores, (rng.random(200) < 0.5).tolist(), delta=1e-5)
    b = guesses_from_scores(scores, [False] * 200, delta=1e-5)
    assert a.count == b.count == 200 and b.correct == b.guesses // 2  # every "out" right, every "in" wrong
    with pytest.raises(ValueError, match="one inclusion per score"):
        guesses_from_scores(scores, [True], delta=1e-5)
    with pytest.raises(ValueError, match="v <= r <= m"):
        p_value(10, 5, 6, 1.0, 0.0)


def test_the_gaussian_mechanisms_sigma_spends_exactly_its_delta():
    from scipy.stats import norm

    from fedgraph_sim.dp_audit.one_run import gaussian_sigma

    for epsilon in (0.5, 1.0, 8.0):
        sigma = gaussian_sigma(epsilon, 1e-5)
        spent = norm.cdf(0.5 / sigma - epsilon * sigma) - math.exp(epsilon) * norm.cdf(-0.5 / sigma - epsilon * sigma)
        assert spent == pytest.approx(1e-5, rel=1e-6)
    assert gaussian_sigma(1.0, 1e-5) == pytest.approx(3.73, abs=0.01)  # Balle and Wang's analytic calibration


def test_the_fdp_bound_is_valid_and_tighter_on_the_gaussian_mechanism():
    from fedgraph_sim.dp_audit.one_run import gaussian_sigma

    rng = np.random.default_rng(3)
    for epsilon in (2.0, 8.0):
        mu = 1 / gaussian_sigma(epsilon, 1e-5)
        for _ in range(5):
            included = rng.random(1000) < 0.5
            guesses = guesses_from_scores((mu * included + rng.standard_normal(1000)).tolist(), included.tolist(), 1e-5)
            assert guesses.epsilon_lower_bound <= guesses.gdp_epsilon_lower_bound <= epsilon


def test_the_fdp_bound_grows_with_the_correct_guesses():
    from fedgraph_sim.dp_audit.one_run import gdp_epsilon_lower_bound

    bounds = [gdp_epsilon_lower_bound(1000, 200, v, 1e-5) for v in (120, 150, 180, 200)]
    assert bounds == sorted(bounds) and bounds[0] < bounds[-1] and gdp_epsilon_lower_bound(1000, 200, 90, 1e-5) == 0
