"""A candidate graph's node labels, read from the client's gradient: GRAIN on node classification.

GRAIN's node-classification experiment (Drencheva et al., ICLR 2025, Table 5) trains the
per-node readout on every node's own label, with no pooling, and treats the labels as known; the
official code takes them from the true graph by matching the candidate to it, which the bench's
threat boundary does not allow. The attacker here knows at most how many nodes carry each class
(``threat.node_labels``) and reads which node carries which from the gradient.

For the readout's last linear layer :math:`z_v = W h_v + b` and a per-node loss that is linear in
the one-hot label :math:`e_{y_v}` (cross-entropy, or BCE on one-hot targets, averaged over the
nodes), the logit gradient is :math:`\\partial L / \\partial z_v = a_v - s\\, e_{y_v}`, with
:math:`a_v` and the scale :math:`s` known once the candidate is. The observed gradients of
:math:`W` and :math:`b` are then linear in the labels:

.. math::

    \\sum_v e_{y_v} [h_v; 1]^\\top = \\frac{1}{s} \\Big( \\sum_v a_v [h_v; 1]^\\top -
    [\\nabla_W L \\;\\; \\nabla_b L] \\Big),

a least-squares problem for the label rows :math:`Y`, exact for the true graph when its nodes'
rows :math:`[h_v; 1]` are independent. Nodes with equal rows (the same view of the graph two hops
out) share one unknown there; how their labels split is read from the whole gradient, which is
linear in them as well (one backward pass per such node and class). Each node takes the class of its
largest entry, or, with the counts known, classes are assigned to maximise the summed entries under
the counts.

Args:
    model: the attacked node classifier (per-node readout, float64).
    observed: the client's gradient by parameter name.
    loss: the training loss (``cross_entropy`` or ``bce``).
    counts: how many nodes carry each class, when the threat grants it.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment
from torch import Tensor, nn

from fedgraph_sim.models import GraphClassifier, classification_loss


class NodeLabelReader:
    def __init__(self, model: GraphClassifier, observed: dict[str, Tensor], loss: str,
                 counts: tuple[int, ...] | None = None) -> None:
        self.model, self.loss, self.counts = model, loss, counts
        # the whole gradient, flat in the model's parameter order (``split`` fits against it)
        self.target = torch.cat([observed[n].to(torch.float64).reshape(-1) for n, _ in model.named_parameters()])
        last = model.final_linear_name
        self.weight_grad = observed[f"{last}.weight"].to(torch.float64)
        bias = observed.get(f"{last}.bias")
        self.bias_grad = None if bias is None else bias.to(torch.float64)

    def last_inputs(self, x: Tensor, adj: Tensor) -> Tensor:
        """``h_v``: every node's input to the readout's last linear layer, ``[N, k]``."""
        m = self.model
        mask = torch.ones(1, x.size(0), dtype=torch.bool)
        rows = m._readout_rows(x, m.dense_node_embeddings(x[None], adj[None], mask)[0])
        return rows if isinstance(m.classifier, nn.Linear) else m.classifier[:-1](rows)

    def logit_gradients(self, z: Tensor) -> tuple[Tensor, float]:
        """``a [N, C]`` and ``s`` of ``dL/dz_v = a_v - s e_{y_v}`` at the logits ``z``."""
        def at(label: int) -> Tensor:
            leaf = z.detach().requires_grad_()
            target = torch.full((z.size(0),), label, dtype=torch.long)
            return torch.autograd.grad(classification_loss(leaf, target, self.loss), leaf)[0]

        d0, d1 = at(0), at(1)
        s = float((d0 - d1)[0, 1])  # d_v(0) - d_v(1) = s (e_1 - e_0)
        a = d0.clone()
        a[:, 0] += s
        return a, s

    def scores(self, x: Tensor, adj: Tensor) -> Tensor:
        """The least-squares label rows ``Y [N, C]`` (one-hot for the true graph, up to the split
        of nodes the gradient cannot tell apart)."""
        return self.read(x, adj)[0]

    def read(self, x: Tensor, adj: Tensor) -> tuple[Tensor, list[list[int]]]:
        """``scores`` and the groups of nodes with equal readout rows."""
        with torch.no_grad():
            h = self.last_inputs(x, adj)
            z = self.model.final_linear(h)
        a, s = self.logit_gradients(z)
        rows, observed = h, self.weight_grad
        if self.bias_grad is not None:
            rows = torch.cat([h, torch.ones(h.size(0), 1, dtype=h.dtype)], dim=1)
            observed = torch.cat([observed, self.bias_grad[:, None]], dim=1)
        # nodes whose rows are equal (the same 2-hop view of the graph) share one unknown here: the
        # readout sees only their labels' sum, the layers below tell them apart (``split``)
        groups = _equal_rows(rows)
        units = torch.stack([rows[g[0]] for g in groups])
        rhs = (a.T @ rows - observed) / s  # [C, k] = Y^T rows
        mass = torch.linalg.lstsq(units.T, rhs.T, driver="gelsd").solution  # [units, C]
        y = torch.empty(h.size(0), z.size(1), dtype=h.dtype)
        for g, m in zip(groups, mass):
            y[g] = m / len(g)
        shared = [v for g in groups if len(g) > 1 for v in g]
        if shared:
            y[shared] = self.split(x, adj, y, shared, s)
        return y, groups

    def split(self, x: Tensor, adj: Tensor, y: Tensor, shared: list[int], s: float) -> Tensor:
        """Label rows of the ``shared`` nodes from the whole gradient, which is linear in them:
        ``g(Y) = g(Y_0) - s sum_v J_v^T (e_{y_v} - e_0)``, ``J_v`` the Jacobian of node ``v``'s logits."""
        params = [p for _, p in self.model.named_parameters()]
        z = self.model.forward_dense(x, adj)[0]
        base = y.argmax(1)
        base[shared] = 0
        grads = torch.autograd.grad(classification_loss(z, base, self.loss), params, retain_graph=True)
        residual = self.target - torch.cat([g.reshape(-1) for g in grads])
        classes = z.size(1)
        columns = []
        for v in shared:
            for k in range(1, classes):
                jac = torch.autograd.grad(z[v, k] - z[v, 0], params, retain_graph=True)
                columns.append(-s * torch.cat([g.reshape(-1) for g in jac]))
        # nodes alike all the way down have equal columns: the minimum-norm solution (gelsd) splits
        # their mass evenly, where gelsy's pivoting returns garbage
        t = torch.linalg.lstsq(torch.stack(columns, 1), residual[:, None], driver="gelsd").solution
        t = t.reshape(len(shared), classes - 1)
        return torch.cat([1 - t.sum(1, keepdim=True), t], dim=1).detach()

    def __call__(self, x: Tensor, adj: Tensor) -> Tensor:
        """The candidate's node labels ``[N]``: each group of equal rows takes as many of each class
        as its label mass says (the gradient fixes no more when the nodes are alike all the way
        down: any split then gives the same gradient); where that breaks the granted counts, the
        counts are met overall instead."""
        y, groups = self.read(x, adj)
        labels = torch.empty(y.size(0), dtype=torch.long)
        for g in groups:
            labels[g] = _assign(y, g, _rounded(y[g].sum(0), len(g)))
        counts = self.counts
        if counts is not None and sum(counts) == y.size(0) and \
                torch.bincount(labels, minlength=len(counts)).tolist() != list(counts):
            return _assign(y, list(range(y.size(0))), counts)  # the reading breaks the counts: a wrong candidate
        return labels


def _rounded(mass: Tensor, total: int) -> list[int]:
    """``mass`` as whole counts summing to ``total`` (largest remainders)."""
    mass = mass.clamp(min=0)
    mass = mass * (total / float(mass.sum())) if float(mass.sum()) > 0 else torch.full_like(mass, total / len(mass))
    counts = mass.floor().long()
    for c in torch.argsort(mass - counts, descending=True)[: total - int(counts.sum())]:
        counts[c] += 1
    return counts.tolist()


def _assign(y: Tensor, nodes: list[int], counts) -> Tensor:
    """Labels for ``nodes`` with ``counts[c]`` of class ``c``, maximising their summed scores."""
    slots = np.repeat(np.arange(len(counts)), counts)
    rows, cols = linear_sum_assignment(-y[nodes][:, slots].numpy())
    labels = torch.empty(len(nodes), dtype=torch.long)
    labels[torch.as_tensor(rows)] = torch.as_tensor(slots[cols])
    return labels


def _equal_rows(rows: Tensor, rtol: float = 1e-9) -> list[list[int]]:
    """Nodes grouped by equal rows (within ``rtol`` of the largest row norm), in node order."""
    scale = float(rows.norm(dim=1).max()) or 1.0
    groups: list[list[int]] = []
    for v in range(rows.size(0)):
        for g in groups:
            if float((rows[v] - rows[g[0]]).norm()) <= rtol * scale:
                g.append(v)
                break
        else:
            groups.append([v])
    return groups
