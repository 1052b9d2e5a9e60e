r"""Noise-aware GRAIN (our extension, [ext] ``noise_aware``): the noise a defense adds to the
update, read off the update itself.

A defense such as DP-Gradients or DP-SGD returns :math:`\tilde G = \alpha G + E` for each weight
gradient: :math:`G` of rank :math:`r` (GRAIN's signal), a clipping factor :math:`0 < \alpha \le 1`
and noise :math:`E` of i.i.d. entries of variance :math:`\sigma^2`, the same in every tensor. The
singular values of an :math:`m \times n` noise matrix concentrate below the Marchenko-Pastur edge
:math:`\sigma (\sqrt m + \sqrt n)` (Vershynin, "High-Dimensional Probability", Thm 4.4.5), so the
spectrum of :math:`\tilde G` shows the rank as a gap: the signal's singular values stand above the
edge, the rest of the energy is noise. The attacker knows only the update (no configured sigma or
clip): starting from rank 0 it alternates

.. math::
    \hat\sigma^2 = \frac{\sum_t \sum_{i > r_t} s_{t,i}^2}{\sum_t (m_t - r_t)(n_t - r_t)}, \qquad
    r_t = \#\{ i : s_{t,i} > \mathrm{edge} \cdot \hat\sigma (\sqrt{m_t} + \sqrt{n_t}) \}

over the weight gradients GRAIN reads until the ranks stop changing (the energy outside the top
:math:`r_t` directions is, to first order, that of the noise on the complement). The span checks
then keep the directions above the floor and allow each candidate the residual the noise turns
into it (``spancheck.RowSpace``), and the exactness test compares a replayed gradient with the
update allowing for the noise's energy: the true graph leaves, per tensor of :math:`N_t`
entries, :math:`\lVert E_t \rVert_F \approx \hat\sigma \sqrt{N_t}` with standard deviation
:math:`\hat\sigma / \sqrt 2`, so the mean over the :math:`T` tensors of the Frobenius distances
(GRAIN's distance) stays below

.. math::
    \hat\sigma \Big(\frac 1 T \sum_t \sqrt{N_t} + \frac{z}{\sqrt{2T}}\Big)

with probability :math:`\Phi(z)`; a wrong graph whose gradient differs by :math:`\Delta_t` adds
about :math:`\lVert \Delta_t \rVert^2 / (2 \hat\sigma \sqrt{N_t})` per tensor. Where the signal's
weakest directions sink below the edge (the gap closes), their rows no longer pass: the estimated
rank falls below the distinct rows of the layer's input, reported in the rows as ``rank_k``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attacks.grain.spancheck import NOISE_EDGE


@dataclass(frozen=True)
class NoiseEstimate:
    """The update's noise as the spectrum shows it.

    Args:
        sigma: the estimated per-entry standard deviation of the noise.
        ranks: per weight gradient, the singular values above the floor (``edge`` times the
            noise's edge).
        edge: the floor's multiple of the Marchenko-Pastur edge.
    """

    sigma: float
    ranks: dict[str, int]
    edge: float

    @classmethod
    def of(cls, matrices: dict[str, Tensor], edge: float = NOISE_EDGE, max_iter: int = 100) -> "NoiseEstimate":
        """Estimate sigma jointly from ``matrices`` (weight gradients ``[m, n]``), as above."""
        spectra = {k: torch.linalg.svdvals(g.detach().to(torch.float64)) for k, g in matrices.items()}
        shapes = {k: tuple(g.shape) for k, g in matrices.items()}
        ranks = {k: 0 for k in matrices}
        sigma = 0.0
        for _ in range(max_iter):
            energy = sum(float(s[ranks[k]:].pow(2).sum()) for k, s in spectra.items())
            entries = sum((m - ranks[k]) * (n - ranks[k]) for k, (m, n) in shapes.items())
            sigma = (energy / entries) ** 0.5 if entries > 0 else 0.0
            new = {k: int((s > edge * sigma * (m ** 0.5 + n ** 0.5)).sum())
                   for (k, s), (m, n) in zip(spectra.items(), shapes.values())}
            new = {k: min(r, min(shapes[k]) - 1) for k, r in new.items()}  # leave noise to measure
            if new == ranks:
                break
            ranks = new
        return cls(sigma, ranks, edge)

    def exact_tol(self, numels: list[int], z: float = 4.0) -> float:
        """The distance (GRAIN's mean over tensors of Frobenius norms) below which a replayed
        gradient is the update's up to its noise, for tensors of ``numels`` entries."""
        t = len(numels)
        return self.sigma * (sum(n ** 0.5 for n in numels) / t + z / (2 * t) ** 0.5)
