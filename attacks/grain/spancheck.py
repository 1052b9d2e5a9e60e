"""Span checks: is a candidate input row in the row space of a linear layer's weight gradient?

For ``Y = X W^T`` the weight gradient ``G = (dL/dY)^T X`` (PyTorch layout, ``d_out x d_in``) has
its rows in the span of the rows of ``X``; when ``dL/dY`` has rank ``n`` the two spans are equal
(DAGER, Petrov et al. 2024, Thm 3.1), and GRAIN (Drencheva et al., ICLR 2025, Thm 5.1) shows a
true row passes whenever its own row of ``dL/dY`` is not a combination of the others. A candidate
``z`` is scored by the residual of ``z / ||z||_2`` after projection on that span, in the L1 norm as
GRAIN's official code does; everything is float64 and the basis comes from an exact SVD.
"""

from __future__ import annotations

import torch
from torch import Tensor


class RowSpace:
    """The row space of a gradient matrix: an orthonormal basis ``Q [r, d_in]`` of its top-``r``
    right singular vectors, ``r`` = the number of singular values above ``tol`` (absolute, as the
    official code counts them)."""

    def __init__(self, grad: Tensor, tol: float) -> None:
        g = grad.detach().to(torch.float64)
        _, s, vh = torch.linalg.svd(g, full_matrices=False)
        self.singular_values = s
        self.rank = int((s > tol).sum())
        self.basis = vh[: self.rank]
        self.dim = g.size(1)

    @property
    def saturated(self) -> bool:
        """True when the rank reaches the smaller matrix side: the span may be all of input space
        (``n >= width``) and the check cannot filter."""
        return self.rank >= self.dim

    def distance(self, z: Tensor, chunk: int = 16384) -> Tensor:
        """L1 norm of the residual of each unit-normalised row of ``z [B, d_in]`` (zero rows get
        +inf: no input row of a real graph is zero)."""
        out = []
        q = self.basis
        for part in torch.split(z.to(torch.float64), chunk):
            norm = part.norm(dim=1, keepdim=True)
            unit = part / norm.clamp(min=1e-300)
            residual = unit - (unit @ q.T) @ q
            d = residual.abs().sum(1)
            out.append(torch.where(norm[:, 0] > 0, d, torch.full_like(d, float("inf"))))
        return torch.cat(out) if out else torch.zeros(0, dtype=torch.float64)

    def plausible(self, z: Tensor, tau: float) -> Tensor:
        """Indices of the rows of ``z`` that may pass ``distance < tau``: the residual's L2 norm,
        ``sqrt(1 - ||Q z_unit||^2)``, never exceeds its L1 norm, so rows whose L2 residual is
        clearly above ``tau`` cannot pass. Computed in float32 with a margin far above its
        rounding, on ``r``-dimensional projections only."""
        q32 = self.basis.to(torch.float32)
        part = z.to(torch.float32)
        unit = part / part.norm(dim=1, keepdim=True).clamp(min=1e-30)
        l2_sq = (1 - (unit @ q32.T).pow(2).sum(1)).clamp(min=0)
        return torch.nonzero(l2_sq < (2 * tau) ** 2 + 1e-4).flatten()

    def passing(self, z: Tensor, tau: float, chunk: int = 65536) -> tuple[Tensor, Tensor]:
        """``(indices, distances)`` of the rows of ``z`` whose :meth:`distance` is below ``tau``:
        the same rows as thresholding :meth:`distance`, the exact float64 distance computed only
        for the :meth:`plausible` ones."""
        index = torch.cat([start + self.plausible(z[start:start + chunk], tau)
                           for start in range(0, z.size(0), chunk)] or [torch.zeros(0, dtype=torch.long)])
        d = self.distance(z[index])
        ok = d < tau
        return index[ok], d[ok]
