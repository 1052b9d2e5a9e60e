r"""What a pooled model's last ReLU layer tells about the whole graph (our extension of GRAIN,
[ext] ``pooled_sums``, off in paper mode): per unit, how many nodes switch it on and the sum of
their inputs, a bound every partial graph of the search must respect.

Where a linear map :math:`o_v = W a_v + b` with a ReLU after it is applied to every node and
what follows is the same for all nodes up to a pool, every node receives the same output
gradient :math:`g` (times :math:`1/n` under mean pooling), masked by its own activations
:math:`m_{vk} = [o_{vk} > 0]`. So for every unit ``k``

.. math::
    \frac{\partial \mathcal{L}}{\partial b_k} = \frac{g_k \, c_k}{n}, \qquad
    \frac{\partial \mathcal{L}}{\partial W_{k\cdot}} = \frac{g_k \, S_k}{n}, \qquad
    c_k = \sum_v m_{vk}, \quad S_k = \sum_v m_{vk} \, a_v

(``n = 1`` for sum pooling). Two such sites:

- a sum-pooled GIN (PyG's examples): ``W`` is the second map of the last layer's MLP, ``a_v`` its
  hidden layer, and :math:`g = U^\top \partial \mathcal{L} / \partial u` is read from the head's
  first map ``U z + u``;
- GRAIN's victim, whose readout MLP runs on every node before its logits are pooled: ``W`` is the
  readout's last hidden map, ``a_v`` the hidden layer before it, and ``g`` is read from the output
  map's weight and bias gradient the same way.

The server thus knows, per unit, the number of nodes that switch it on and the sum of their
inputs. Counts are integers, which checks the reading; under mean pooling, where the gradient
gives :math:`c_k / n`, ``n`` is read as the smallest node count that makes every count an integer
(the true ``n`` unless every count shares a factor with it). Both are sums of non-negative
terms (``a_v`` is a ReLU output), so the nodes of a partial graph whose state is already final
(every node within ``L - 1`` hops complete, for ``L`` message-passing layers: later gluings and
ring closures never change a complete node's neighbours) can count and sum to at most ``c`` and
``S``: a partial graph that exceeds them is in no graph behind the gradient, and the search
skips it (:meth:`PooledSums.admits`, composed with the search's other admissibility test).

Applies to one graph's FedSGD gradient (a batch's mean mixes the graphs' ``g``; local steps mix
weights) of a sum-pooled GIN or of a GCN with GRAIN's per-node readout. Elsewhere
:func:`pooled_sums` says why not and the search runs without it.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from attacks.grain.local_training import gradient_rounding
from fedgraph_sim.models import GraphClassifier

#: units whose output gradient is below this share of the largest carry too little signal to
#: divide by (their counts would be rounding)
MIN_UNIT_SIGNAL = 1e-3
#: a count read from the gradient must lie this close to an integer, or the reading is refused
COUNT_TOLERANCE = 1e-3


class PooledSums:
    """The bound of a pooled ReLU layer on partial graphs.

    Args:
        forward: ``forward(types, edges, deg) -> (a, m)``, per node of a graph the layer's input
            row ``a_v`` and unit mask ``m_v`` (NumPy: the search calls it for every partial graph,
            and torch's per-call overhead dominates at this size).
        layers: the message-passing layers ``L``: a node's state is final when every node within
            ``L - 1`` hops is complete.
        counts: per used unit, the number of nodes that switch it on, ``c``.
        sums: per used unit, the sum of those nodes' inputs, ``S`` (``[units, width]``).
        units: the units whose output gradient is large enough to read.
        tol: per used unit, the slack allowed on ``S`` for the gradient's float32 rounding.
    """

    def __init__(self, forward, layers: int, counts: np.ndarray, sums: np.ndarray, units: np.ndarray,
                 tol: np.ndarray) -> None:
        self.forward, self.layers = forward, layers
        self.counts, self.sums, self.units, self.tol = counts, sums, units, tol
        self.checked = self.rejected = 0

    def final_nodes(self, graph, deg) -> list[int]:
        """The nodes whose every node within ``L - 1`` hops is complete: their states are final."""
        complete = [len(graph.adj[v]) == deg[t] for v, t in enumerate(graph.types)]
        out = []
        for v in range(graph.num_nodes):
            ball, frontier, ok = {v}, {v}, complete[v]
            for _ in range(self.layers - 1):
                if not ok:
                    break
                frontier = {w for u in frontier for w in graph.adj[u]} - ball
                ball |= frontier
                ok = all(complete[w] for w in frontier)
            if ok:
                out.append(v)
        return out

    def admits(self, graph, deg) -> bool:
        """Whether the final nodes of ``graph`` stay within the counts and sums."""
        final = self.final_nodes(graph, deg)
        if not final:
            return True
        self.checked += 1
        a, mask = self.forward(list(graph.types), graph.edges(), deg)
        a, mask = a[final], mask[final][:, self.units].astype(np.float64)  # [F, width], [F, units]
        if (mask.sum(0) > self.counts + 0.5).any() or (mask.T @ a > self.sums + self.tol).any():
            self.rejected += 1
            return False
        return True


def _numpy(t: Tensor | None) -> np.ndarray | float:
    return 0.0 if t is None else t.detach().to(torch.float64).numpy()


def _dense(n: int, edges) -> np.ndarray:
    adj = np.zeros((n, n))
    for u, w in edges:
        adj[u, w] = adj[w, u] = 1.0
    return adj


def _gin_forward(model: GraphClassifier, rows: np.ndarray):
    """A sum-pooled GIN: the last MLP's hidden rows and its second map's unit masks."""
    layers = [(float(c.eps), _numpy(c.nn[0].weight).T, _numpy(c.nn[0].bias), _numpy(c.nn[2].weight).T,
               _numpy(c.nn[2].bias)) for c in model.convs]

    def forward(types, edges, deg):
        adj, h = _dense(len(types), edges), rows[types]
        for eps, w0, b0, w2, b2 in layers[:-1]:
            h = np.maximum(np.maximum(((1 + eps) * h + adj @ h) @ w0 + b0, 0.0) @ w2 + b2, 0.0)
        eps, w0, b0, w2, b2 = layers[-1]
        a = np.maximum(((1 + eps) * h + adj @ h) @ w0 + b0, 0.0)
        return a, a @ w2 + b2 > 0

    return forward


def _per_node_forward(model: GraphClassifier, rows: np.ndarray):
    """GRAIN's victim (GCN, readout MLP per node): the readout's last hidden map's input rows and
    unit masks. GCN's normalisation takes every node's degree from its type, not from the partial
    graph, whose far nodes are not complete yet (as the star layers do, ``embed.StarLayer``)."""
    convs = [(_numpy(c.lin.weight).T, _numpy(c.bias), not isinstance(act, torch.nn.Identity))
             for c, act in zip(model.convs, model.acts)]
    maps = [(_numpy(m.weight).T, _numpy(m.bias)) for m in model.classifier if isinstance(m, torch.nn.Linear)]
    concat = model.readout_input == "concat_input"

    def forward(types, edges, deg):
        d = np.array([deg[t] for t in types], dtype=np.float64) + 1
        norm = (_dense(len(types), edges) + np.eye(len(types))) / np.sqrt(np.outer(d, d))
        x0 = h = rows[types]
        for w, b, act in convs:
            h = norm @ (h @ w) + b
            h = np.maximum(h, 0.0) if act else h
        a = np.concatenate([x0, h], 1) if concat else h
        for w, b in maps[:-2]:
            a = np.maximum(a @ w + b, 0.0)
        w, b = maps[-2]
        return a, a @ w + b > 0

    return forward


def _integral(values: Tensor) -> bool:
    return bool(((values - values.round()).abs() < COUNT_TOLERANCE).all())


def _site(model: GraphClassifier) -> tuple[str, str, object] | str:
    """The bound's layer and the head ``g`` is read from, with the forward; or why there is none."""
    relu = torch.nn.ReLU
    if model.task != "graph" or model.pool not in ("sum", "mean"):
        return "needs a graph classifier with sum or mean pooling"
    if model.conv_name == "gin" and model.readout_placement != "per_node" and model.pool == "sum":
        if not all(isinstance(act, relu) for act in model.acts) or model.readout_input == "concat_input":
            return "needs a ReLU after every layer and the layers' states alone pooled"
        if not all(len(c.nn) == 3 and isinstance(c.nn[1], relu) for c in model.convs):
            return "needs GIN's MLP as Linear, ReLU, Linear"
        return f"convs.{len(model.convs) - 1}.nn.2", model.first_readout_name, _gin_forward
    if model.conv_name == "gcn" and model.readout_placement == "per_node":
        mlp = model.classifier
        if not isinstance(mlp, torch.nn.Sequential) or len(mlp) < 5 or not isinstance(mlp[-2], relu) \
                or not isinstance(mlp[-4], relu) or not all(isinstance(act, (relu, torch.nn.Identity))
                                                            for act in model.acts):
            return "needs a readout MLP with two hidden ReLU layers (GRAIN's victim)"
        return f"classifier.{len(mlp) - 3}", f"classifier.{len(mlp) - 1}", _per_node_forward
    return "needs a sum-pooled GIN or a GCN with a per-node readout"


def pooled_sums(model: GraphClassifier, grad: dict[str, Tensor], type_rows: Tensor,
                max_nodes: int = 256) -> tuple[PooledSums | None, str]:
    """The bound of ``model``'s pooled ReLU layer read from one float32 FedSGD gradient ``grad``,
    or ``None`` and the reason it does not apply. ``max_nodes`` bounds the node count a mean pool's
    counts are read with."""
    site = _site(model)
    if isinstance(site, str):
        return None, site
    layer, head, make_forward = site
    if f"{layer}.bias" not in grad or f"{head}.bias" not in grad:
        return None, "needs the biases of the bound layer and of the head"
    weight = model.get_parameter(f"{head}.weight").detach().to(torch.float64)
    g = weight.T @ grad[f"{head}.bias"].to(torch.float64)  # each node's output gradient, times n
    units = torch.nonzero(g.abs() > MIN_UNIT_SIGNAL * g.abs().max()).flatten()
    if units.numel() == 0:
        return None, "the pooled layer's gradient is zero"
    shares = grad[f"{layer}.bias"].to(torch.float64)[units] / g[units]  # c_k / n
    sizes = [1] if model.pool == "sum" else range(1, max_nodes + 1)
    n = next((k for k in sizes if _integral(k * shares)), None)
    counts = None if n is None else (n * shares).round()
    if counts is None or bool((counts < 0).any()):
        return None, "the active-node counts read from the gradient are not integers (not one graph's FedSGD gradient)"
    sums = n * grad[f"{layer}.weight"].to(torch.float64)[units] / g[units, None]
    # the float32 rounding of the weight's gradient, divided by g_k / n, and of g itself (relative)
    tol = 10 * n * gradient_rounding(grad[f"{layer}.weight"]) / g[units, None].abs() \
        + 1e-5 * sums.abs().amax(1, keepdim=True)
    forward = make_forward(model, type_rows.to(torch.float64).numpy())
    return PooledSums(forward, len(model.convs), counts.numpy(), sums.numpy(), units.numpy(), tol.numpy()), ""
