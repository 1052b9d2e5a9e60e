r"""The one-run epsilon lower bound of Steinke, Nasr and Jagielski, "Privacy Auditing with One (1)
Training Run" (NeurIPS 2023, arXiv:2305.08846), Theorem 3.1 and its Algorithm (the p-value and
the binary search over epsilon).

``m`` canaries are each included in the training data independently with probability 1/2. After
training, the auditor guesses "in" or "out" for ``r`` of them (abstaining on the rest) and is right
``v`` times. If the run is :math:`(\varepsilon, \delta)`-DP, the number of correct guesses is
stochastically dominated by randomised response, up to a term in :math:`\delta`:

.. math::
    \Pr[V \ge v] \;\le\; \beta + 2 m \delta \, \alpha, \qquad
    \beta = \Pr[\mathrm{Bin}(r, q) \ge v], \quad q = \frac{e^{\varepsilon}}{1 + e^{\varepsilon}},

    \alpha = \max_{1 \le i \le v} \frac{1}{i} \Pr[v - i \le \mathrm{Bin}(r, q) < v].

So an outcome whose p-value falls below :math:`1 - \gamma` rejects :math:`(\varepsilon,
\delta)`-DP at confidence :math:`\gamma`, and the largest :math:`\varepsilon` rejected is the
audit's lower bound: the run is *not* :math:`(\varepsilon, \delta)`-DP for any smaller one. With
:math:`m` canaries the bound cannot exceed what all :math:`m` correct guesses give (the method's
ceiling, about 4-5 at 1000 canaries, delta 1e-5, 95%).

The f-DP refinement (Mahloujifar, Melis and Chaudhuri, "Auditing f-Differential Privacy in One
Run", arXiv:2410.22235, 2024) tests a stronger null: that the run is as private as the Gaussian
mechanism which is exactly :math:`(\varepsilon, \delta)`-DP (:math:`\mu`-GDP with :math:`\mu =
1/\sigma`, :func:`gaussian_sigma`), whose trade-off function :math:`f(x) = \Phi(\Phi^{-1}(1-x) -
\mu)` bounds the guesses' successes round by round instead of through randomised response
(:func:`gdp_epsilon_lower_bound`). It is tighter where the mechanism's privacy is Gaussian (DP-SGD,
the Gaussian mechanism, Flower's central DP); a mechanism that is :math:`(\varepsilon,
\delta)`-DP without being Gaussian-like (randomised response) may fail it, so refutations rest on
the first bound and the second is reported beside it.

Choosing how many guesses to make after seeing the scores would void the test, so
:func:`guesses_from_scores` tries a fixed grid of guess counts and splits the confidence over it
(Bonferroni), as a researcher declaring the grid in advance would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Sequence

import numpy as np

#: Guess counts tried by :func:`guesses_from_scores`, as fractions of the canaries; each count is
#: tried split in two ways (half "in" from the top scores and half "out" from the bottom, or all
#: "in"), since a distinguisher may be sure of the canaries it saw and unsure of the rest.
GUESS_FRACTIONS = (0.02, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 0.9, 1.0)


def p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """The probability of ``v`` or more correct guesses out of ``r``, from ``m`` canaries, if the
    run were (epsilon, delta)-DP (Steinke et al. 2023, Theorem 3.1): an upper bound, at most 1.

    Args:
        m (int): the canaries.
        r (int): the guesses made, ``r <= m``.
        v (int): the correct guesses, ``v <= r``.
        epsilon (float): the claimed epsilon, ``>= 0``.
        delta (float): the claimed delta, in [0, 1].

    Raises:
        ValueError: for arguments outside those ranges.
    """
    from scipy.stats import binom

    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m (got v={v}, r={r}, m={m})")
    if epsilon < 0 or not 0 <= delta <= 1:
        raise ValueError(f"need epsilon >= 0 and 0 <= delta <= 1 (got {epsilon}, {delta})")
    q = 1.0 / (1.0 + math.exp(-epsilon))  # randomised response's accuracy at epsilon
    beta = float(binom.sf(v - 1, r, q))  # P[Bin(r, q) >= v]
    if v == 0 or delta == 0:
        return min(beta, 1.0)
    i = np.arange(1, v + 1)
    below = np.cumsum(binom.pmf(v - i, r, q))  # P[v - i <= Bin(r, q) < v], i = 1..v
    alpha = float(np.max(below / i))
    return min(beta + alpha * delta * 2 * m, 1.0)


def epsilon_lower_bound(m: int, r: int, v: int, delta: float, confidence: float = 0.95) -> float:
    """The largest epsilon that ``v`` correct guesses out of ``r`` (``m`` canaries) reject at
    ``confidence``: the run is not (epsilon, delta)-DP for any epsilon below it. 0 when the
    guesses reject nothing. Bisection to 1e-6.

    Args:
        m (int): the canaries.
        r (int): the guesses made.
        v (int): the correct guesses.
        delta (float): the claimed delta.
        confidence (float, optional): the test's confidence, in (0, 1). (default: ``0.95``)
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1) (got {confidence})")
    alpha = 1.0 - confidence
    if p_value(m, r, v, 0.0, delta) >= alpha:
        return 0.0
    low, high = 0.0, 1.0
    while p_value(m, r, v, high, delta) < alpha:
        low, high = high, 2 * high
    while high - low > 1e-6:
        mid = (low + high) / 2
        low, high = (mid, high) if p_value(m, r, v, mid, delta) < alpha else (low, mid)
    return low


def gaussian_sigma(epsilon: float, delta: float) -> float:
    """The noise of the Gaussian mechanism (sensitivity 1) that is exactly (epsilon, delta)-DP
    (Balle and Wang, "Improving the Gaussian Mechanism for Differential Privacy", ICML 2018,
    Theorem 8): the sigma at which
    ``Phi(1 / (2 sigma) - epsilon sigma) - exp(epsilon) Phi(-1 / (2 sigma) - epsilon sigma)``,
    decreasing in sigma, equals delta. Infinite at epsilon 0 (no mechanism with finite noise).

    Args:
        epsilon (float): the mechanism's epsilon.
        delta (float): its delta.

    Returns:
        sigma, searched in ``[e^-20, e^20]``: ``e^-20`` when even that is private enough.
    """
    from scipy.optimize import brentq
    from scipy.stats import norm

    if epsilon <= 0:
        return math.inf

    def excess(log_sigma: float) -> float:
        sigma = math.exp(log_sigma)
        return (norm.cdf(0.5 / sigma - epsilon * sigma)
                - math.exp(epsilon) * norm.cdf(-0.5 / sigma - epsilon * sigma) - delta)

    low, high = -20.0, 20.0
    if excess(low) <= 0:  # even a tiny sigma is private enough
        return math.exp(low)
    return math.exp(brentq(excess, low, high, xtol=1e-10))


_PHI = NormalDist()


def _gdp_rejects(m: int, r: int, v: int, epsilon: float, delta: float, alpha: float) -> bool:
    """Whether ``v`` correct of ``r`` guesses (``m`` canaries) reject, at level ``alpha``, that the
    run is as private as the (epsilon, delta) Gaussian mechanism: Mahloujifar et al.'s recursion
    over the correct guesses, which bounds the mass of "in" canaries guessed right (``right``) and
    wrong (``wrong``) by the Gaussian trade-off one guess at a time; rejected when together they
    would have to exceed the guesses made."""
    mu = 1.0 / gaussian_sigma(epsilon, delta)
    right, wrong = alpha * v / m, alpha * (r - v) / m
    for i in range(v - 1, -1, -1):
        # the least "wrong" mass that much "right" needs (scalar Phi: NormalDist is ~20x scipy's)
        spread = _PHI.cdf(_PHI.inv_cdf(min(right, 1 - 1e-16)) - mu)
        grown = max(wrong, spread)
        if grown == wrong:
            break
        right, wrong = min(right + i / (r - i) * (grown - wrong), 1.0), grown
    return right + wrong > r / m


def gdp_epsilon_lower_bound(m: int, r: int, v: int, delta: float, confidence: float = 0.95) -> float:
    """The largest epsilon whose Gaussian mechanism ``v`` correct guesses out of ``r`` (``m``
    canaries) reject at ``confidence`` (Mahloujifar et al. 2024). 0 when they reject nothing.
    Bisection to 1e-4; the search stops at epsilon 1000 (returning the last rejected power of 2).

    Args:
        m (int): the canaries.
        r (int): the guesses made.
        v (int): the correct guesses.
        delta (float): the claimed delta.
        confidence (float, optional): the test's confidence, in (0, 1). (default: ``0.95``)
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1) (got {confidence})")
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m (got v={v}, r={r}, m={m})")
    alpha = 1.0 - confidence
    if v == 0 or not _gdp_rejects(m, r, v, 1e-6, delta, alpha):
        return 0.0
    low, high = 1e-6, 1.0
    while _gdp_rejects(m, r, v, high, delta, alpha):
        low, high = high, 2 * high
        if high > 1e3:
            return low
    while high - low > 1e-4:
        mid = (low + high) / 2
        low, high = (mid, high) if _gdp_rejects(m, r, v, mid, delta, alpha) else (low, mid)
    return low


@dataclass(frozen=True)
class Guesses:
    """The audit's outcome: ``guesses`` made (``r``), ``correct`` (``v``) of ``count`` canaries
    (``m``), and the epsilon lower bound they give at ``delta`` and ``confidence``."""

    count: int
    guesses: int
    correct: int
    delta: float
    confidence: float
    epsilon_lower_bound: float
    gdp_epsilon_lower_bound: float = 0.0  # Mahloujifar et al.'s, over the same grid (its own best split)


def guesses_from_scores(scores: Sequence[float], included: Sequence[bool], delta: float,
                        confidence: float = 0.95, fractions: Sequence[float] = GUESS_FRACTIONS) -> Guesses:
    """The best lower bounds over a fixed grid of guesses. For each fraction f, with k = f*m: guess
    "in" for the k/2 highest ``scores`` and "out" for the k/2 lowest, or "in" for the k highest;
    each of these 2*len(``fractions``) tests runs at confidence 1 - (1 - ``confidence``) / their
    number, so the best of them holds at ``confidence``: Steinke et al.'s bound (``guesses`` and
    ``correct`` are its best test's) and, beside it, the f-DP refinement's
    (``gdp_epsilon_lower_bound``). ``scores``: the attacker's, higher meaning "included", computed
    without ``included``, which is read only to count the correct guesses.

    Args:
        scores (Sequence[float]): one score per canary, higher meaning "included".
        included (Sequence[bool]): whether each canary was included (the secret), same length.
        delta (float): the claimed delta.
        confidence (float, optional): the confidence of the best test. (default: ``0.95``)
        fractions (Sequence[float], optional): the guess counts tried, as fractions of the
            canaries. (default: :data:`GUESS_FRACTIONS`)
    """
    m = len(scores)
    if m != len(included) or m == 0:
        raise ValueError(f"need one inclusion per score, and some (got {m} scores, {len(included)} inclusions)")
    splits = [(min(max(1, int(f * m) // 2), m // 2),) * 2 for f in fractions]  # "in" and "out" on distinct canaries
    splits += [(max(1, int(f * m)), 0) for f in fractions]
    per_test = 1.0 - (1.0 - confidence) / len(splits)
    order = sorted(range(m), key=lambda i: scores[i])  # ascending: the last are the likeliest "in"
    best, gdp = Guesses(m, 0, 0, delta, confidence, 0.0), 0.0
    for ins, outs in splits:
        if ins == 0:
            continue
        correct = sum(bool(included[i]) for i in order[m - ins:]) + sum(not included[i] for i in order[:outs])
        bound = epsilon_lower_bound(m, ins + outs, correct, delta, per_test)
        gdp = max(gdp, gdp_epsilon_lower_bound(m, ins + outs, correct, delta, per_test))
        if bound > best.epsilon_lower_bound:
            best = Guesses(m, ins + outs, correct, delta, confidence, bound)
    return replace(best, gdp_epsilon_lower_bound=gdp)
