r"""Reading a node's star from its aggregated input to a GCN layer, the rows an
``imprinted_aggregates`` round decodes (:mod:`fedgraph_sim.crafting.imprinted_aggregates`).

With one-hot blocks (standardised or not) and a degree block, a node :math:`v` of degree
:math:`d` and neighbours :math:`u` of degrees :math:`d_u` has the row

.. math::
    (\hat A X)_v = \frac{x_v}{d + 1} + \sum_{u \in N(v)} \frac{x_u}{\sqrt{(d_u + 1)(d + 1)}},

so in the degree block column :math:`k` holds :math:`[k = d]/(d+1) + n_k/\sqrt{(k+1)(d+1)}`,
with :math:`n_k` the neighbours of degree :math:`k`. Every hypothesis :math:`(d, n)` with
:math:`\sum_k n_k = d` predicts that block and the row's total per block,
:math:`s_v = 1/(d+1) + \sum_k n_k / \sqrt{(k+1)(d+1)}` (every node has one value per block); a
standardised row :math:`r` is the one-hot aggregate :math:`a = \sigma \odot r + s_v \mu`, so the
hypothesis that fits the degree block also undoes the standardisation. Scaled by
:math:`\sqrt{d+1}`, each other column holds :math:`c/\sqrt{d+1} + \sum_k n_{k,e}/\sqrt{k+1}`: the
centre's indicator and how many neighbours of each degree take that value, integers that the
irrational weights :math:`1/\sqrt{k+1}` keep apart (:func:`read_star`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fedgraph_sim.data.schema import FeatureSchema


@dataclass(frozen=True)
class StarCounts:
    """What a row says about its node (see the module's docstring): its degree ``d``, its
    neighbours of each degree ``n`` (degree -> count), the one-hot aggregate ``a [F]`` and, per
    column, every ``(centre, counts per degree)`` that explains it (``options[e]``; a column at
    zero has only ``(0, zeros)``)."""

    d: int
    n: dict[int, int]
    a: np.ndarray
    options: tuple[tuple[tuple[int, tuple[int, ...]], ...], ...]


@lru_cache(maxsize=8)
def _hypotheses(degrees: tuple[int, ...]) -> list[tuple[int, tuple[int, ...], float, np.ndarray]]:
    """Every ``(d, n, s, predicted degree block)`` for the degree block's values."""
    out = []
    neighbour_degrees = [k for k in degrees if k >= 1]
    for d in degrees:
        for combo in itertools.combinations_with_replacement(neighbour_degrees, d):
            n = tuple(combo.count(k) for k in degrees)
            block = np.array([(k == d) / (d + 1) + n[i] / np.sqrt((k + 1) * (d + 1)) for i, k in enumerate(degrees)])
            out.append((d, n, 1 / (d + 1) + sum(n[i] / np.sqrt((k + 1) * (d + 1)) for i, k in enumerate(degrees)),
                        block))
    return out


def read_star(row, schema: FeatureSchema, tol: float = 1e-3) -> StarCounts | None:
    """The star a row of :math:`\\hat A X` holds, or None when no star explains it (a mixture of
    several rows, as a peeled cell holding two nodes gives).

    Args:
        row (array-like): one row ``[F]`` in the model's encoding (standardised when ``schema`` is).
        schema (FeatureSchema): the node features; it needs a degree block.
        tol (float, optional): the absolute tolerance of a column of the one-hot aggregate (its
            values are at least ``1 / 7`` apart in practice). (default: ``1e-3``)

    Raises:
        ValueError: a schema without a degree block.
    """
    if schema.degree_block is None:
        raise ValueError("a star is read through the degree block; this schema has none")
    r = np.asarray(row, np.float64)
    mean = np.zeros_like(r) if not schema.standardized else np.asarray(schema.mean, np.float64)
    std = np.ones_like(r) if not schema.standardized else np.asarray(schema.std, np.float64)
    cols = schema.slices()[schema.degree_block]
    degrees = tuple(int(k) for k in schema.block(schema.degree_block).values)
    best = min(_hypotheses(degrees), key=lambda h: np.abs(std[cols] * r[cols] + h[2] * mean[cols] - h[3]).max())
    d, n, s, block = best
    a = std * r + s * mean
    if np.abs(a[cols] - block).max() > tol or a.min() < -tol:
        return None
    options = []
    scale = np.sqrt(d + 1)
    present = [(i, k) for i, k in enumerate(degrees) if n[i]]
    for b in schema.blocks:
        part = schema.slices()[b.name]
        if abs(a[part].sum() - s) > tol * len(b.values):
            return None
        for e in range(part.start, part.stop):
            target = a[e] * scale
            found = []
            for centre in (0, 1):
                for counts in itertools.product(*[range(n[i] + 1) for i, _ in present]):
                    value = centre / scale + sum(c / np.sqrt(k + 1) for c, (_, k) in zip(counts, present))
                    if abs(value - target) <= tol * scale:
                        full = [0] * len(degrees)
                        for c, (i, _) in zip(counts, present):
                            full[i] = c
                        found.append((centre, tuple(full)))
            if not found:
                return None
            options.append(tuple(found))
    return StarCounts(d, {k: n[i] for i, k in enumerate(degrees) if n[i]}, a, tuple(options))
