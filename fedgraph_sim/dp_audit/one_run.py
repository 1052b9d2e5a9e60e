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

Choosing how many guesses to make after seeing the scores would void the test, so
:func:`guesses_from_scores` tries a fixed grid of guess counts and splits the confidence over it
(Bonferroni), as a researcher declaring the grid in advance would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

#: Guess counts tried by :func:`guesses_from_scores`, as fractions of the canaries; each count is
#: tried split in two ways (half "in" from the top scores and half "out" from the bottom, or all
#: "in"), since a distinguisher may be sure of the canaries it saw and unsure of the rest.
GUESS_FRACTIONS = (0.02, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 0.9, 1.0)


def p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """The probability of ``v`` or more correct guesses out of ``r``, from ``m`` canaries, if the
    run were (epsilon, delta)-DP (Steinke et al. 2023, Theorem 3.1): an upper bound, at most 1."""
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
    guesses reject nothing. Bisection to 1e-6."""
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


def guesses_from_scores(scores: Sequence[float], included: Sequence[bool], delta: float,
                        confidence: float = 0.95, fractions: Sequence[float] = GUESS_FRACTIONS) -> Guesses:
    """The best lower bound over a fixed grid of guesses. For each fraction f, with k = f*m: guess
    "in" for the k/2 highest ``scores`` and "out" for the k/2 lowest, or "in" for the k highest;
    each of these 2*len(``fractions``) tests runs at confidence 1 - (1 - ``confidence``) / their
    number, so the best of them holds at ``confidence``. ``scores``: the attacker's, higher meaning
    "included", computed without ``included``, which is read only to count the correct guesses."""
    m = len(scores)
    if m != len(included) or m == 0:
        raise ValueError(f"need one inclusion per score, and some (got {m} scores, {len(included)} inclusions)")
    splits = [(min(max(1, int(f * m) // 2), m // 2),) * 2 for f in fractions]  # "in" and "out" on distinct canaries
    splits += [(max(1, int(f * m)), 0) for f in fractions]
    per_test = 1.0 - (1.0 - confidence) / len(splits)
    order = sorted(range(m), key=lambda i: scores[i])  # ascending: the last are the likeliest "in"
    best = Guesses(m, 0, 0, delta, confidence, 0.0)
    for ins, outs in splits:
        if ins == 0:
            continue
        correct = sum(bool(included[i]) for i in order[m - ins:]) + sum(not included[i] for i in order[:outs])
        bound = epsilon_lower_bound(m, ins + outs, correct, delta, per_test)
        if bound > best.epsilon_lower_bound:
            best = Guesses(m, ins + outs, correct, delta, confidence, bound)
    return best
