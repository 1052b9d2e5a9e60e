r"""Batches: which complete graphs, with which labels, make up the gradient of a batch (our
extension of GRAIN, Drencheva et al., ICLR 2025, to batches of several graphs, as DAGER, Petrov
et al., NeurIPS 2024, arXiv 2405.15586, extends the same low-rank argument to batches of token
sequences).

A client that trains one FedSGD step on a batch of ``B`` graphs sends the mean gradient

.. math::
    g = \frac{1}{B} \sum_{i=1}^{B} \nabla_\theta \mathcal{L}(G_i, y_i),

so the span checks see the union of the batch's node rows and blocks, and the depth-first search
builds complete graphs one at a time. The gradient is linear in the batch: with every complete
graph the search has built, for every label, a column :math:`v_{G, y} = S \nabla_\theta
\mathcal{L}(G, y)` (``S`` keeps a fixed, seeded set of the gradient's coordinates), the
non-negative least-squares fit

.. math::
    w^\star = \arg\min_{w \ge 0} \lVert V w - B \, S g \rVert_2

puts integer weights on the batch's members when they are among the candidates. The rounded
weights are a batch; it is exact, as a single graph is, when the mean gradient of the replayed
batch is within the exactness tolerance of the client's (the official distance, every parameter).
A new candidate can lower the fit only if its column points along the current residual (the
optimality condition of the fit), so the fit is re-solved only then.

Members one at a time (:class:`Peeling`, FedSGD batches): the span checks pass every 2-hop
neighbourhood of every member, and the search, gluing them, builds many *chimeras*, complete graphs
whose every neighbourhood passes but which are in no member. A member ``G`` with label ``y`` is
recognised as soon as it is built: the rank its own neighbourhoods add to a weight gradient
``H^\top \Delta`` leaves it with the rest,

.. math::
    \operatorname{rank}\big(B\,g_\ell - \nabla_{W_\ell} \mathcal{L}(G, y)\big)
    < \operatorname{rank}(B\,g_\ell)

for the deepest checked layer ``\ell`` (by the number of neighbourhoods no other member shares),
while a chimera's rows lie in the span already and its generic ``\Delta`` keeps the rank (on four
Tox21 molecules: members drop the readout's rank by 6 to 12 with their label, by 0 with the
other; 60 chimeras by 0). The recognised member's gradient is removed, and the span checks rerun on
the rest, as DAGER removes the sequences it has recovered: the blocks only it had fail, and the
search goes on among fewer.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.optimize import nnls

from attacks.grain.build import PartialGraph, neighbourhood
from attacks.grain.scorer import GradientScorer
from attacks.grain.spancheck import RowSpace


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
        self.fixed: list[tuple[PartialGraph, int]] = []
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

    def reading(self) -> tuple[float, list[tuple[PartialGraph, int]]]:
        """The best batch's distance and ``B`` members: when it has fewer (a member recognised,
        the rest not fitted), the candidates the fit weighs most fill it, then its last member
        again, so every true graph has a reconstruction to be scored against."""
        distance, members = self.best
        if not members or len(members) >= self.batch_size:
            return distance, members
        c = self.scorer.num_classes
        taken = {id(g) for g, _ in members}
        filled = list(members)
        for j in np.argsort(-self.weights, kind="stable"):
            g = self.graphs[j // c]
            if len(filled) < self.batch_size and id(g) not in taken:
                taken.add(id(g))
                filled.append((g, int(j % c)))
        for g in self.graphs:
            if len(filled) < self.batch_size and id(g) not in taken:
                taken.add(id(g))
                filled.append((g, 0))
        filled += [filled[-1]] * (self.batch_size - len(filled))
        return distance, filled

    def fix(self, graph: PartialGraph, label: int, grads: list[torch.Tensor]) -> None:
        """``graph`` with ``label`` is a member (recognised by :class:`Peeling`, its gradient
        ``grads``): the fit reads the rest of the batch from what it leaves."""
        self.fixed.append((graph, label))
        self.target = self.target - torch.cat([t.flatten() for t in grads])[self.index].numpy()
        self.seen.add(canonical(graph))
        if self.columns:
            self._refit()
        else:
            self.residual = self.target.copy()
            self._consider([])

    def _refit(self) -> None:
        v = np.concatenate(self.columns, 1)
        self.weights, _ = nnls(v, self.target, maxiter=50 * v.shape[1])
        self.residual = self.target - v @ self.weights
        self._consider(self._members())

    def _consider(self, members: list[tuple[PartialGraph, int, int]]) -> None:
        members = [(g, y, 1) for g, y in self.fixed] + members
        key = tuple(sorted((id(g), y, k) for g, y, k in members))
        if members and key not in self.tried:
            self.tried.add(key)
            d = self.scorer.batch_distance([(g.types, g.edges(), y, k) for g, y, k in members])
            if d < self.best[0]:
                self.best = (d, [(g, y) for g, y, k in members for _ in range(k)])

    def _members(self) -> list[tuple[PartialGraph, int, int]]:
        """The fit read as the rest of the batch: the heaviest columns first, each with its
        rounded weight (at least one), until ``B`` graphs with the fixed members."""
        c = self.scorer.num_classes
        order = np.argsort(-self.weights, kind="stable")
        out, total = [], len(self.fixed)
        for j in order:
            if self.weights[j] < 0.5 or total >= self.batch_size:
                break
            k = min(int(round(self.weights[j])), self.batch_size - total)
            out.append((self.graphs[j // c], int(j % c), k))
            total += k
        return out


class Peeling:
    """Recognises a FedSGD batch's members one at a time by the rank they take out of the
    gradient, and keeps what the others leave (see the module docstring).

    Args:
        scorer: the replay of the client's step (its target: the batch's mean gradient).
        batch_size: ``B``.
        checked: the checked layers' weight names, shallowest first, with their rank tolerances.
    """

    def __init__(self, scorer: GradientScorer, batch_size: int, checked: list[tuple[str, float]]) -> None:
        self.scorer = scorer
        self.rest = [t * batch_size for t in scorer.target]  # the sum of the unrecognised members' gradients
        self.left = batch_size
        self.checked = [(scorer.names.index(name), tol) for name, tol in checked]
        # Ranks are counted above the client's float32 rounding, not the paper's absolute
        # tolerance alone: removing a member's float64 gradient moves the rounding's singular
        # values (about 1e-8 for the readout here) across 1e-8, while a member's own directions
        # stand 1e-4 and more above them.
        eps = torch.finfo(torch.float32).eps
        self.noise = {i: 5 * eps * float(self.rest[i].pow(2).mean().sqrt()) for i, _ in self.checked}
        self.ranks = self._ranks(self.rest)
        self.members: list[tuple[PartialGraph, int]] = []
        self.tested: set = set()

    def _ranks(self, grads: list[torch.Tensor], upto: int | None = None) -> list[int]:
        return [RowSpace(grads[i], tol, self.noise[i]).rank for i, tol in self.checked[::-1][:upto]][::-1]

    def gradient(self, name: str) -> torch.Tensor:
        """What the unrecognised members leave of weight ``name``'s gradient (their sum)."""
        return self.rest[self.scorer.names.index(name)]

    def test(self, graph: PartialGraph) -> tuple[int, list[torch.Tensor]] | None:
        """``(label, gradient)`` when ``graph`` is a member: with that label, removing its gradient
        lowers the deepest checked layer's rank and raises no other's (leaves rank 0 everywhere,
        for the last member); it is then removed."""
        key = canonical(graph)
        if self.left <= 0 or key in self.tested:
            return None
        self.tested.add(key)
        for label, grads in enumerate(self.scorer.label_gradients(graph.types, graph.edges())):
            rest = [r - g for r, g in zip(self.rest, grads)]
            if self._ranks(rest, 1)[-1] >= self.ranks[-1]:
                continue
            ranks = self._ranks(rest)
            # the last member must leave nothing: a graph sharing some of its neighbourhoods
            # with their coefficients (a ring twice as long, say) lowers a rank too
            if all(a <= b for a, b in zip(ranks, self.ranks)) and (self.left > 1 or not any(ranks)):
                self.rest, self.ranks, self.left = rest, ranks, self.left - 1
                self.members.append((graph, label))
                self.tested.clear()  # the ranks compared with changed: test again
                return label, grads
        return None


def canonical(graph: PartialGraph) -> tuple:
    """A key equal for graphs that colour refinement (1-WL, from the node types) cannot tell
    apart: isomorphic graphs, and the few others that message passing cannot tell apart either
    (every node's unrolled neighbourhood is the same, so is the gradient)."""
    colours = [hash(t) for t in graph.types]
    for _ in range(graph.num_nodes):  # n rounds: enough for any two graphs of n nodes
        colours = [hash((colours[v], tuple(sorted(colours[w] for w in graph.adj[v]))))
                   for v in range(graph.num_nodes)]
    return graph.num_nodes, tuple(sorted(colours))


def unexplained_first(blocks: list, graphs: list[PartialGraph], started: set = frozenset()) -> list:
    """``blocks`` reordered (stably) so that the next search starts from the part of the batch
    not built yet, as DAGER removes the sequences it has recovered: blocks no search has started
    from (their :func:`neighbourhood` not in ``started``) first; among those, the blocks centred
    at a node type that no graph of ``graphs`` has, then those that no node of ``graphs``
    explains."""
    seen = {neighbourhood(g, v) for g in graphs for v in range(g.num_nodes)}
    types = {t for g in graphs for t in g.types}
    return sorted(blocks, key=lambda b: (neighbourhood(b) in started, b.centre in types, neighbourhood(b) in seen))
