"""Which 2-hop blocks the readout's gradient is made of (our extension of GRAIN, Drencheva et al.,
ICLR 2025, for batches; off in paper mode).

With the readout applied per node, a node's readout input :math:`r_v = [x_v \\,\\|\\, h_v]` is fixed
by its 2-hop neighbourhood, and the first readout layer's weight gradient is a sum of rank-one
terms, one per node. Grouping the nodes by their neighbourhood (block) ``b``,

.. math::
    \\nabla_{W_r} \\mathcal{L} = \\sum_G \\sum_{v \\in G} \\sum_c
        \\frac{\\partial \\mathcal{L}}{\\partial z_{G,c}} \\frac{\\partial z_{G,c}}{\\partial o_{v,c}}
        J_c(r_v) \\, r_v^\\top
    = \\sum_b \\sum_c s_{b,c} \\, J_c(r_b) \\, r_b^\\top,

where :math:`J_c(r) = \\partial o_c / \\partial (W_r r + \\beta_r)` is the readout's Jacobian at the
node (known: the round's weights) and :math:`s_{b,c} = \\sum_G \\mathrm{count}_G(b) \\, \\partial
\\mathcal{L} / \\partial z_{G,c} \\cdot \\partial z_{G,c} / \\partial o_{v,c}` sums over the graphs
holding ``b``: zero for a block in no graph. The span check passes any block whose row is a
combination of the true rows, and in a batch many are; the rank-one matrices
:math:`J_c(r_b) r_b^\\top` of different blocks are in general position even then. So the
least-squares coefficients over the passing blocks, from the Gram matrix
:math:`(J_c(r_b) \\cdot J_{c'}(r_{b'}))(r_b \\cdot r_{b'})`, vanish for the blocks of no graph, up to
the gradient's rounding; each coefficient is compared with its standard error (the fit's residual
as noise, :math:`\\sigma^2 (M^+)_{bb}`).

On four Tox21 molecules in one FedSGD batch (678 passing blocks, 59 of them true), the true
blocks' coefficients stand 1.2e5 to 4e6 standard errors from zero, the false ones' at most 30,
except 8 whose rows equal a true block's (the same computation tree by another gluing), which the
fit cannot tell apart and keeps: 67 blocks are left. Float32 rounding is not independent noise,
so the default threshold, 1000 standard errors, is far above a Gaussian test's; it was set on that
diagnostic batch. When the passing blocks do not explain the gradient (a relative residual above
``1e-4``: a true block failed the span check), the scores are not used.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from fedgraph_sim.models import GraphClassifier


def readout_jacobians(model: GraphClassifier, rows: Tensor) -> Tensor:
    """``J [C, K, H]``: the per-node readout's outputs' gradients with respect to its first
    layer's pre-activation, at each of the readout inputs ``rows [K, R]``."""
    readout = model.classifier
    first, rest = (readout, nn.Identity()) if isinstance(readout, nn.Linear) else (readout[0], readout[1:])
    pre = (rows @ first.weight.T + first.bias).detach().requires_grad_()
    out = rest(pre)
    return torch.stack([torch.autograd.grad(out[:, c].sum(), pre, retain_graph=True)[0]
                        for c in range(out.size(1))])


def block_z_scores(model: GraphClassifier, rows: Tensor, gradient: Tensor) -> tuple[Tensor, float]:
    """For each block (its readout input a row of ``rows [K, R]``), its largest least-squares
    coefficient in ``gradient [H, R]`` (the readout's first weight gradient), in standard errors;
    and the fit's relative residual. The scores mean something only when the blocks explain the
    gradient (a residual at the rounding's level, about 1e-7 in float32): when a true block did
    not pass the span check, its share of the gradient is the residual and no block stands out.

    Args:
        model: the attacked model at the round's weights (float64).
        rows: the passing blocks' readout inputs.
        gradient: the first readout layer's weight gradient (a batch's sum or mean: the scale
            does not change the scores).
    """
    rows = rows.to(torch.float64)
    g = gradient.to(torch.float64)
    jac = readout_jacobians(model, rows).detach()  # [C, K, H]
    c, k, _ = jac.shape
    j = jac.reshape(c * k, -1)
    r = rows.repeat(c, 1)
    gram = (j @ j.T) * (r @ r.T)
    rhs = ((j @ g) * r).sum(1)
    values, vectors = torch.linalg.eigh(gram)
    keep = values > values.max() * 1e-13  # equal rows (twin blocks) make the Gram matrix singular
    inverse = (vectors[:, keep] / values[keep]) @ vectors[:, keep].T
    coef = inverse @ rhs
    fit = (j * coef[:, None]).T @ r
    residual = float((g - fit).norm())
    dof = max(g.numel() - int(keep.sum()), 1)
    se = residual / dof ** 0.5 * inverse.diagonal().clamp(min=0).sqrt()
    z = coef.abs() / se.clamp(min=1e-300)
    return z.reshape(c, k).max(0).values, residual / max(float(g.norm()), 1e-300)
