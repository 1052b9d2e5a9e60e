"""Aggregation over attacked graphs: compute per graph, then mean, std and count."""

from __future__ import annotations

import math
from typing import Iterable, Mapping

import numpy as np


def aggregate(rows: Iterable[Mapping], metric: str) -> dict[str, float]:
    """``{"mean", "std", "count", "skipped"}`` of ``metric`` over rows; NaN or missing values
    (e.g. AUC on a one-class entry set) are skipped and counted, not averaged. ``std`` is the
    population one (divided by the count); mean and std are NaN when nothing is left.

    Args:
        rows (Iterable[Mapping]): result rows (or any mappings).
        metric (str): the column to aggregate.
    """
    values, skipped = [], 0
    for row in rows:
        value = row.get(metric)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            skipped += 1
        else:
            values.append(float(value))
    if not values:
        return {"mean": float("nan"), "std": float("nan"), "count": 0, "skipped": skipped}
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / len(values)
    return {"mean": mean, "std": math.sqrt(var), "count": len(values), "skipped": skipped}


def bootstrap_ci(values: Iterable[float], resamples: int = 10_000, level: float = 0.95,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean: ``level`` of the means of ``resamples``
    resamples with replacement (``numpy.random.default_rng(seed)``). NaN values are dropped;
    ``(nan, nan)`` for no values, ``(v, v)`` for one.

    Args:
        values (Iterable[float]): the per-graph values.
        resamples (int, optional): the bootstrap resamples. (default: ``10_000``)
        level (float, optional): the interval's coverage. (default: ``0.95``)
        seed (int, optional): the resampling seed. (default: ``0``)

    Returns:
        ``(low, high)``.
    """
    data = np.asarray([float(v) for v in values], dtype=np.float64)
    data = data[~np.isnan(data)]
    if data.size == 0:
        return float("nan"), float("nan")
    if data.size == 1:
        return float(data[0]), float(data[0])
    rng = np.random.default_rng(seed)
    # index matrices in chunks of ~4M entries: bounded memory, same draws for a given size
    chunk = max(1, 4_000_000 // data.size)
    means = np.concatenate([
        data[rng.integers(0, data.size, size=(min(chunk, resamples - start), data.size))].mean(1)
        for start in range(0, resamples, chunk)
    ])
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def wilson_interval(successes: int, trials: int, z: float = 1.959963984540054) -> tuple[float, float]:
    r"""Wilson score interval of a proportion (Wilson, "Probable inference, the law of succession,
    and statistical inference", JASA 1927), 95% by default:

    .. math::
        \frac{\hat p + \frac{z^2}{2n} \pm z \sqrt{\frac{\hat p (1 - \hat p)}{n} + \frac{z^2}{4n^2}}}{1 + \frac{z^2}{n}}

    For counts such as graphs rebuilt exactly it stays honest where a bootstrap of 0/1 values
    cannot: 0 of 10 gives [0, 0.28], not [0, 0]. ``(nan, nan)`` for no trials.

    Args:
        successes (int): the count of successes.
        trials (int): the count of trials.
        z (float, optional): the normal quantile of the coverage. (default: ``1.959963984540054``, for 95%)

    Returns:
        ``(low, high)``, clipped to [0, 1].
    """
    if trials <= 0:
        return float("nan"), float("nan")
    p, n = successes / trials, trials
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def none_seen_bound(trials: int, level: float = 0.95) -> float:
    r"""The one-sided upper confidence bound on a rate when none of ``trials`` showed it (the exact
    Clopper-Pearson bound for zero successes; Clopper and Pearson, Biometrika 1934):

    .. math::
        p_{\max} = 1 - (1 - \text{level})^{1/n}

    It is at most 5% from 59 trials on at the default 95% (the "rule of three", 3/n, approximates
    it). ``nan`` for no trials.

    Args:
        trials (int): the count of trials, none of which showed it.
        level (float, optional): the bound's confidence. (default: ``0.95``)
    """
    if trials <= 0:
        return float("nan")
    return 1.0 - (1.0 - level) ** (1.0 / trials)


def mean_interval(values: Iterable[float], level: float = 0.95) -> tuple[float, float, float]:
    r"""The mean of a few values and its Student-t interval,

    .. math::
        \bar x \pm t_{(1 + \text{level})/2,\, n - 1} \, \frac{s}{\sqrt n},

    for quantities such as a test accuracy over a handful of seeds, where a bootstrap of three
    values is meaningless. NaN values are dropped; ``(mean, nan, nan)`` for one value, all ``nan``
    for none.

    Args:
        values (Iterable[float]): the values.
        level (float, optional): the interval's coverage. (default: ``0.95``)

    Returns:
        ``(mean, low, high)``.
    """
    from scipy.stats import t

    data = np.asarray([float(v) for v in values], dtype=np.float64)
    data = data[~np.isnan(data)]
    if data.size == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(data.mean())
    if data.size == 1:
        return mean, float("nan"), float("nan")
    half = float(t.ppf((1 + level) / 2, data.size - 1) * data.std(ddof=1) / math.sqrt(data.size))
    return mean, mean - half, mean + half
