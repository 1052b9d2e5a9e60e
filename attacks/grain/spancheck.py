r"""Span checks: is a candidate input row in the row space of a linear layer's weight gradient?

For ``Y = X W^T`` the weight gradient ``G = (dL/dY)^T X`` (PyTorch layout, ``d_out x d_in``) has
its rows in the span of the rows of ``X``; when ``dL/dY`` has rank ``n`` the two spans are equal
(DAGER, Petrov et al. 2024, Thm 3.1), and GRAIN (Drencheva et al., ICLR 2025, Thm 5.1) shows a
true row passes whenever its own row of ``dL/dY`` is not a combination of the others. A candidate
``z`` is scored by the residual of ``z / ||z||_2`` after projection on that span, in the L1 norm as
GRAIN's official code does; everything is float64 and the basis comes from an exact SVD.

A FedAvg update read as a gradient carries a perturbation the server can bound
(``local_training.py``): noise ``E`` of per-entry standard deviation ``noise`` (the client's float32
rounding), whose spectral norm is about ``noise (sqrt(m) + sqrt(n))`` for an ``m x n`` matrix, and a
relative ``drift`` of the layer's input rows over the local steps. Singular values under twice
the noise's spectral norm are not counted (``floor``). The noise turns each kept direction ``v_i``
out of the clean span by about ``noise sqrt(m) / sigma_i`` (first-order perturbation of the SVD),
so a true row whose unit vector has coordinates ``a_i`` on the kept basis is expected to leave a
residual of L2 norm

.. math::
    \rho(z) = \Big(\sum_i a_i^2 \, \frac{\mathrm{noise}^2 \, m}{\sigma_i^2}\Big)^{1/2};

its distance is the L1 residual less ``sqrt(d_in) (drift + 2 rho(z))`` (the L1 norm of a
``d_in``-vector is at most ``sqrt(d_in)`` times its L2 norm), compared with the paper's threshold.
Measured on a 13-atom molecule after 5 SGD steps of lr 0.01, true 1-hop blocks leave
``0.96-1.03 rho`` and false ones over ``4 rho``; Wedin's worst-case bound ``||E|| / sigma_r`` would
pass almost every candidate. With neither perturbation (a FedSGD gradient) the checks are the
paper's.
"""

from __future__ import annotations

import torch
from torch import Tensor


#: Singular values under this multiple of the noise's spectral edge ``noise (sqrt(m) + sqrt(n))``
#: are not counted (the noise's own reach under that edge, with margin).
NOISE_EDGE = 2.0

#: The float32 screen's margin on the L1 residual of a unit row, per ``sqrt(d_in)``
#: (:meth:`RowSpace.plausible`): 7 times the worst case of its float32 error at rank 100.
L1_MARGIN = 1e-3


class RowSpace:
    """The row space of a gradient matrix: an orthonormal basis ``Q [r, d_in]`` of its top-``r``
    right singular vectors, ``r`` = the number of singular values above ``tol`` (absolute, as the
    official code counts them) and above the perturbation's floor.

    Args:
        grad: the weight gradient ``[d_out, d_in]``.
        tol: the rank tolerance (absolute).
        noise: per-entry standard deviation of additive noise in ``grad`` (0 for a gradient).
        drift: relative change of the layer's input rows while the update was made.
    """

    def __init__(self, grad: Tensor, tol: float, noise: float = 0.0, drift: float = 0.0) -> None:
        g = grad.detach().to(torch.float64)
        _, s, vh = torch.linalg.svd(g, full_matrices=False)
        self.singular_values = s
        self.floor = NOISE_EDGE * noise * (g.size(0) ** 0.5 + g.size(1) ** 0.5)
        self.rank = int((s > max(tol, self.floor)).sum())
        self.basis = vh[: self.rank]
        self.dim = g.size(1)
        self.drift = drift
        # each kept direction's expected turn out of the clean span, per unit of its coordinate
        self.turn = noise * g.size(0) ** 0.5 / s[: self.rank] if noise > 0 else None

    @property
    def perturbed(self) -> bool:
        """True when the update carries noise or drift, so each row gets an allowance (:meth:`slack`)."""
        return self.turn is not None or self.drift != 0

    def slack(self, coords: Tensor) -> Tensor | float:
        """What the perturbations may add to the L1 residual of unit rows with ``coords`` on the
        basis: ``sqrt(d_in) (drift + 2 rho)``; 0 for an unperturbed gradient."""
        if not self.perturbed:
            return 0.0
        rho = 0.0 if self.turn is None else (coords * self.turn.to(coords.dtype)).norm(dim=1)
        return self.dim ** 0.5 * (self.drift + 2 * rho)

    @property
    def saturated(self) -> bool:
        """True when the rank reaches the smaller matrix side: the span may be all of input space
        (``n >= width``) and the check cannot filter."""
        return self.rank >= self.dim

    def residual(self, z: Tensor, chunk: int = 16384) -> tuple[Tensor, Tensor]:
        """``(residual, slack)`` of each row of ``z [B, d_in]``: the L1 norm of its unit row's
        residual after projection on the span (zero rows get +inf: no input row of a real graph
        is zero) and its :meth:`slack`."""
        residuals, slacks = [], []
        q = self.basis
        for part in torch.split(z.to(torch.float64), chunk):
            norm = part.norm(dim=1, keepdim=True)
            unit = part / norm.clamp(min=1e-300)
            coords = unit @ q.T
            r = (unit - coords @ q).abs().sum(1)
            residuals.append(torch.where(norm[:, 0] > 0, r, torch.full_like(r, float("inf"))))
            slacks.append(torch.as_tensor(self.slack(coords), dtype=torch.float64).expand_as(r))
        if not residuals:
            return torch.zeros(0, dtype=torch.float64), torch.zeros(0, dtype=torch.float64)
        return torch.cat(residuals), torch.cat(slacks)

    def distance(self, z: Tensor, chunk: int = 16384) -> Tensor:
        """L1 norm of the residual of each unit-normalised row of ``z [B, d_in]``, less its
        :meth:`slack`: what is compared with the threshold."""
        r, slack = self.residual(z, chunk)
        return r - slack

    def plausible(self, z: Tensor, tau: float) -> Tensor:
        """Indices of the rows of ``z`` that may pass ``distance < tau``: the residual's L2 norm,
        ``sqrt(1 - ||Q z_unit||^2)``, never exceeds its L1 norm, so rows whose L2 residual is
        clearly above ``tau`` cannot pass. Computed in float32 with a margin far above its
        rounding, on ``r``-dimensional projections only.

        Under a perturbation the allowance is ``sqrt(d_in)`` times an L2 quantity, so the L2 test
        passes nearly every row (a unit row's L2 residual is at most 1) and the float64 check
        would see them all; there the L1 residual itself is screened in float32, with a margin of
        :data:`L1_MARGIN` ``sqrt(d_in)`` (0.017 for ``d_in`` 300) over ``tau`` and the allowance.
        Its float32 error is below ``(r + 1)`` float32 epsilons times ``sqrt(d_in) (1 + sqrt(r))``:
        2.3e-3 at worst for ``r`` 100 and ``d_in`` 300."""
        q32 = self.basis.to(torch.float32)
        part = z.to(torch.float32)
        unit = part / part.norm(dim=1, keepdim=True).clamp(min=1e-30)
        coords = unit @ q32.T
        l2_sq = (1 - coords.pow(2).sum(1)).clamp(min=0)
        slack = self.slack(coords)
        keep = l2_sq < (2 * (tau + slack)) ** 2 + 1e-4
        if self.perturbed:
            l1 = (unit - coords @ q32).abs().sum(1)
            keep &= l1 < tau + slack + L1_MARGIN * self.dim ** 0.5
        return torch.nonzero(keep).flatten()

    def passing(self, z: Tensor, tau: float, chunk: int = 65536) -> tuple[Tensor, Tensor]:
        """``(indices, residuals)`` of the rows of ``z`` whose :meth:`distance` is below ``tau``:
        the same rows as thresholding :meth:`distance`, computed in float64 only for the
        :meth:`plausible` ones. The rows come with their :meth:`residual`, not their distance: the
        slack is an allowance for the perturbation, not evidence of fit, and it varies with a
        row's coordinates, so ranking by distance would favour rows on weak directions (in
        paper mode the two are equal)."""
        index = torch.cat([start + self.plausible(z[start:start + chunk], tau)
                           for start in range(0, z.size(0), chunk)] or [torch.zeros(0, dtype=torch.long)])
        r, slack = self.residual(z[index])
        ok = r - slack < tau
        return index[ok], r[ok]


    def nearest(self, z: Tensor, groups: Tensor, k: int) -> tuple[Tensor, Tensor]:
        """``(indices, residuals)`` of the ``k`` rows of ``z`` of smallest :meth:`residual` within
        each group of ``groups [B]`` (ranking where a threshold would keep none; ``ranking.py``)."""
        residual, _ = self.residual(z)
        picked = [rows[torch.argsort(residual[rows])[:k]]
                  for rows in (torch.nonzero(groups == g).flatten() for g in groups.unique())]
        index = torch.cat(picked) if picked else torch.zeros(0, dtype=torch.long)
        return index, residual[index]


class CoordinateScreen:
    r"""A necessary condition of the span check, on a few input coordinates only (our speed-up for
    the 1-hop enumeration, which a batch's large T0 makes the bulk of the work).

    If a unit row ``u`` passes (L1, hence L2, residual below ``tau``), its coordinates ``I`` lie
    within ``tau`` of the span's projection ``S_I`` onto them, since the projection of ``u``'s
    nearest point of the span lies in ``S_I``. For an unnormalised row ``z`` whose norm is at most
    ``bound``,

    .. math::
        \mathrm{dist}(z_I, S_I) \le \mathrm{dist}(z, S) < \tau \lVert z \rVert \le \tau \cdot \mathrm{bound},

    so rows above that are dropped without their other coordinates ever being computed. ``S_I``
    has the span's rank ``r`` and ``|I| = r + extra`` coordinates (evenly spaced) leave a false
    row about ``sqrt(extra / d_in)`` of its norm away: with ``extra = 32`` and ``d_in = 300`` a
    third, against the ``2 tau`` the screen allows. Only for unperturbed gradients (no slack)
    and spans well below the input dimension (``usable``).

    Args:
        space: the row space screened.
        extra: coordinates beyond the rank.
    """

    def __init__(self, space: RowSpace, extra: int = 32) -> None:
        k = space.rank + extra
        self.usable = (not space.perturbed and 0 < space.rank and k <= 0.6 * space.dim)
        self.index = torch.linspace(0, space.dim - 1, min(k, space.dim)).round().long()
        u, s, _ = torch.linalg.svd(space.basis[:, self.index].T, full_matrices=False)
        self.basis = u[:, : int((s > 1e-9).sum())].T.to(torch.float32)  # [r, |I|], orthonormal rows

    def plausible(self, z: Tensor, bound: Tensor, tau: float) -> Tensor:
        """Indices of the rows of ``z [B, |I|]`` (the screened coordinates of rows whose full norm
        is at most ``bound [B]``) that may pass the span check: float32, with the same margin as
        :meth:`RowSpace.plausible`."""
        coords = z @ self.basis.T
        residual_sq = (z.pow(2).sum(1) - coords.pow(2).sum(1)).clamp(min=0)
        return torch.nonzero(residual_sq < ((2 * tau) ** 2 + 1e-4) * bound.pow(2)).flatten()
