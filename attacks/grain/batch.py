"""Batches: which complete graphs, with which labels, make up the gradient of a batch (our
extension of GRAIN, Drencheva et al., ICLR 2025, to batches of several graphs, as DAGER, Petrov
et al., NeurIPS 2024, arXiv 2405.15586, extends the same low-rank argument to batches of token
sequences).

A client that trains one FedSGD step on a batch of ``B`` graphs sends the mean gradient

.. math::
    g = \\frac{1}{B} \\sum_{i=1}^{B} \\nabla_\\theta \\mathcal{L}(G_i, y_i),

so the span checks see the union of the batch's node rows and blocks, and the depth-first search
builds complete graphs one at a time. The gradient is linear in the batch: with every complete
graph the search has built, for every label, a column :math:`v_{G, y} = S \\nabla_\\theta
\\mathcal{L}(G, y)` (``S`` keeps a fixed, seeded set of the gradient's coordinates), the
non-negative least-squares fit

.. math::
    w^\\star = \\arg\\min_{w \\ge 0} \\lVert V w - B \\, S g \\rVert_2

puts integer weights on the batch's members when they are among the candidates. The rounded
weights are a batch; it is exact, as a single graph is, when the mean gradient of the replayed
batch is within the exactness tolerance of the client's (the official distance, every parameter).
A new candidate can lower the fit only if its column points along the current residual (the
optimality condition of the fit), so the fit is re-solved only then.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.optimize import nnls

from attacks.grain.build import PartialGraph
from attacks.grain.scorer import GradientScorer


class BatchAssembler:
    """Collects the complete graphs of a search and reads the batch from them.

    Args:
        scorer: the replay of the client's step (the round's weights, the loss, the labels).
        batch_size: ``B``, the number of graphs behind the gradient (the server reads it from the
            client's reply).
        coordinates: how many gradient coordinates the fit uses (more than twice the columns it
            may hold: candidates beyond ``coordinates // num_classes`` are not added).
        exact_tol: the exactness tolerance on the replayed batch's distance.
        seed: seeds the choice of coordinates.
    """

    def __init__(self, scorer: GradientScorer, batch_size: int, *, coordinates: int = 4096,
                 exact_tol: float = 1e-6, seed: int = 0) -> None:
        self.scorer, self.batch_size, self.exact_tol = scorer, batch_size, exact_tol
        target = torch.cat([t.flatten() for t in scorer.target])
        g = torch.Generator().manual_seed(seed)
        self.index = torch.randperm(target.numel(), generator=g)[: min(coordinates, target.numel())].sort().values
        self.target = (target[self.index] * batch_size).numpy()
        self.max_candidates = max(1, self.index.numel() // (2 * scorer.num_classes))
        self.graphs: list[PartialGraph] = []
        self.columns: list[np.ndarray] = []  # per candidate, [coordinates, num_classes]
        self.residual = self.target.copy()
        self.weights = np.zeros(0)
        self.seen: set = set()
        self.tried: set = set()
        self.best: tuple[float, list[tuple[PartialGraph, int]]] = (float("inf"), [])
        self.dropped = 0

    @property
    def exact(self) -> bool:
        return self.best[0] < self.exact_tol

    def add(self, graph: PartialGraph) -> float:
        """Take a complete graph from the search; the best batch's distance so far."""
        key = canonical(graph)
        if key in self.seen or self.exact:
            return self.best[0]
        self.seen.add(key)
        if len(self.graphs) >= self.max_candidates:
            self.dropped += 1
            return self.best[0]
        grads = self.scorer.label_gradients(graph.types, graph.edges())
        flat = np.stack([torch.cat([t.flatten() for t in gl])[self.index].numpy() for gl in grads], 1)
        for other in self.columns:  # gradient-equivalent to a candidate (e.g. a cover of it)
            if np.abs(flat - other).max() <= 1e-12 * max(1.0, np.abs(other).max()):
                return self.best[0]
        self.graphs.append(graph)
        self.columns.append(flat)
        if float((flat.T @ self.residual).max()) > 1e-12 * np.linalg.norm(flat) * np.linalg.norm(self.residual):
            self._refit()
        return self.best[0]

    def _refit(self) -> None:
        v = np.concatenate(self.columns, 1)
        self.weights, _ = nnls(v, self.target, maxiter=50 * v.shape[1])
        self.residual = self.target - v @ self.weights
        members = self._members()
        key = tuple(sorted((id(g), y, k) for g, y, k in members))
        if members and key not in self.tried:
            self.tried.add(key)
            d = self.scorer.batch_distance([(g.types, g.edges(), y, k) for g, y, k in members])
            if d < self.best[0]:
                self.best = (d, [(g, y) for g, y, k in members for _ in range(k)])

    def _members(self) -> list[tuple[PartialGraph, int, int]]:
        """The fit read as a batch: the heaviest columns first, each with its rounded weight (at
        least one), until ``B`` graphs."""
        c = self.scorer.num_classes
        order = np.argsort(-self.weights, kind="stable")
        out, total = [], 0
        for j in order:
            if self.weights[j] < 0.5 or total >= self.batch_size:
                break
            k = min(int(round(self.weights[j])), self.batch_size - total)
            out.append((self.graphs[j // c], int(j % c), k))
            total += k
        return out


def canonical(graph: PartialGraph) -> tuple:
    """A key equal for graphs that colour refinement (1-WL, from the node types) cannot tell
    apart: isomorphic graphs, and the few others that message passing cannot tell apart either
    (every node's unrolled neighbourhood is the same, so is the gradient)."""
    colours = [hash(t) for t in graph.types]
    for _ in range(graph.num_nodes):  # n rounds: enough for any two graphs of n nodes
        colours = [hash((colours[v], tuple(sorted(colours[w] for w in graph.adj[v]))))
                   for v in range(graph.num_nodes)]
    return graph.num_nodes, tuple(sorted(colours))


def neighbourhood(block_or_graph, v: int | None = None) -> tuple:
    """A 2-hop block's, or node ``v``'s 2-hop neighbourhood's, centre type and sorted
    (neighbour type, sorted children types) slots: equal when the block describes the node."""
    if v is None:
        block = block_or_graph
        return block.centre, tuple(sorted((t, tuple(sorted(ch))) for t, ch in block.slots))
    g = block_or_graph
    return g.types[v], tuple(sorted((g.types[u], tuple(sorted(g.types[w] for w in g.adj[u] if w != v)))
                                    for u in g.adj[v]))


def unexplained_first(blocks: list, graphs: list[PartialGraph], started: set = frozenset()) -> list:
    """``blocks`` reordered (stably) so that the next search starts from the part of the batch
    not built yet, as DAGER removes the sequences it has recovered: blocks no search has started
    from (their :func:`neighbourhood` not in ``started``) first; among those, the blocks centred
    at a node type that no graph of ``graphs`` has, then those that no node of ``graphs``
    explains."""
    seen = {neighbourhood(g, v) for g in graphs for v in range(g.num_nodes)}
    types = {t for g in graphs for t in g.types}
    return sorted(blocks, key=lambda b: (neighbourhood(b) in started, b.centre in types, neighbourhood(b) in seen))
