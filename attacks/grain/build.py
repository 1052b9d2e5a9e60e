"""Graph building: gluing 2-hop blocks onto a partial graph, closing rings by merging nodes, and
the depth-first search over gluings (GRAIN, Drencheva et al., ICLR 2025, Alg. 4 and 5, App. A.6).

A partial graph holds node types (indices into T0) and adjacency sets; a node whose adjacency is
smaller than its degree feature is "dangling". ``glue(G, v, B)`` lists every way to attach block
``B`` at dangling node ``v``: ``v``'s known neighbours must map to distinct first-hop slots of
``B`` of the same type, and each mapped neighbour's other known neighbours must be among that
slot's children; ``B``'s unmatched nodes are added. Rings are closed by merging a new node into an
existing node of the same type (every subset of such pairs is a branch; the official code merges
only nodes at least ``min_ring`` hops apart, i.e. no 3- or 4-membered rings for molecules, and
rejects graphs with such rings). No node may end with more neighbours than its degree feature.
"""

from __future__ import annotations

import math
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Callable

from attacks.grain.blocks import Block


@dataclass(frozen=True)
class PartialGraph:
    types: tuple[int, ...]
    adj: tuple[frozenset[int], ...]

    @property
    def num_nodes(self) -> int:
        return len(self.types)

    def dangling(self, deg) -> list[int]:
        return [v for v, t in enumerate(self.types) if len(self.adj[v]) < deg[t]]

    def over_degree(self, deg) -> bool:
        return any(len(self.adj[v]) > deg[t] for v, t in enumerate(self.types))

    def edges(self) -> list[tuple[int, int]]:
        return [(u, w) for u, nb in enumerate(self.adj) for w in nb if u < w]

    @classmethod
    def from_block(cls, block: Block) -> "PartialGraph":
        types, adj = [block.centre], [set()]
        for t, children in block.slots:
            u = _add(types, adj, t, 0)
            for c in children:
                _add(types, adj, c, u)
        return cls(tuple(types), tuple(frozenset(a) for a in adj))


def _add(types: list[int], adj: list[set[int]], t: int, parent: int) -> int:
    types.append(t)
    adj.append({parent})
    adj[parent].add(len(types) - 1)
    return len(types) - 1


def distances_from(adj, source: int) -> dict[int, int]:
    seen, queue = {source: 0}, deque([source])
    while queue:
        u = queue.popleft()
        for w in adj[u]:
            if w not in seen:
                seen[w] = seen[u] + 1
                queue.append(w)
    return seen


def has_short_ring(adj, min_ring: int, around=None) -> bool:
    """A 3- or 4-cycle (when ``min_ring`` forbids it) through any node of ``around`` (default:
    all nodes). Merges create new cycles only through the kept nodes, so checking around them
    suffices when the graph had no short cycle before."""
    if min_ring <= 3:
        return False
    for j in (range(len(adj)) if around is None else around):
        nbrs = sorted(adj[j])
        for x, a in enumerate(nbrs):
            for c in nbrs[x + 1:]:
                if c in adj[a]:
                    return True  # j - a - c - j
                if min_ring > 4 and len(adj[a] & adj[c]) >= 2:
                    return True  # j - a - b - c - j
    return False


def _matchings(graph: PartialGraph, v: int, block: Block, deg):
    """Injective maps of ``v``'s known neighbours onto ``block``'s slots, type and children
    consistent, as ``{neighbour: slot}``."""
    known = sorted(graph.adj[v])
    slots = block.slots

    def fits(u: int, slot: int) -> bool:
        t, children = slots[slot]
        if graph.types[u] != t:
            return False
        need = Counter(graph.types[w] for w in graph.adj[u] if w != v)
        have = Counter(children)
        return all(have[k] >= n for k, n in need.items())

    def extend(i: int, used: frozenset, out: dict):
        if i == len(known):
            yield dict(out)
            return
        u = known[i]
        for s in range(len(slots)):
            if s not in used and fits(u, s):
                out[u] = s
                yield from extend(i + 1, used | {s}, out)
                del out[u]

    yield from extend(0, frozenset(), {})


def glue(graph: PartialGraph, v: int, block: Block, deg) -> list[tuple[PartialGraph, list[int]]]:
    """Every distinct way to attach ``block`` at ``v``: ``(new graph, indices of added nodes)``."""
    if block.centre != graph.types[v]:
        return []
    out, seen = [], set()
    for matching in _matchings(graph, v, block, deg):
        extra = []  # (parent, type, children to add under it)
        for u, s in matching.items():
            t, children = block.slots[s]
            have = Counter(graph.types[w] for w in graph.adj[u] if w != v)
            missing = Counter(children) - have
            extra.append((u, tuple(sorted(missing.elements())), None))
        matched = set(matching.values())
        for s, (t, children) in enumerate(block.slots):
            if s not in matched:
                extra.append((v, (t,), children))
        signature = tuple(sorted((p, kids, ch or ()) for p, kids, ch in extra))
        if signature in seen:
            continue
        seen.add(signature)
        types, adj = list(graph.types), [set(a) for a in graph.adj]
        added = []
        for parent, kids, children in extra:
            for t in kids:
                u = _add(types, adj, t, parent)
                added.append(u)
                for c in children or ():
                    added.append(_add(types, adj, c, u))
        new = PartialGraph(tuple(types), tuple(frozenset(a) for a in adj))
        if not new.over_degree(deg):
            out.append((new, added))
    return out


def merge(graph: PartialGraph, pairs: list[tuple[int, int]]) -> PartialGraph:
    """Merge each ``(keep, drop)`` pair: ``keep`` takes ``drop``'s neighbours, ``drop`` goes."""
    adj = [set(a) for a in graph.adj]
    dropped = set()
    for keep, drop in pairs:
        for w in adj[drop]:
            adj[w].discard(drop)
            if w != keep:
                adj[w].add(keep)
                adj[keep].add(w)
        adj[drop] = set()
        dropped.add(drop)
    index = {}
    for v in range(graph.num_nodes):
        if v not in dropped:
            index[v] = len(index)
    types = tuple(graph.types[v] for v in index)
    new_adj = tuple(frozenset(index[w] for w in adj[v]) for v in index)
    return PartialGraph(types, new_adj)


class _Expired(Exception):
    """The deadline passed inside :func:`ring_closures`' recursion."""


def ring_closures(graph: PartialGraph, added: list[int], deg, *, min_ring: int, first: bool,
                  deadline: float, expired: Callable[[], bool] = lambda: False) -> list[PartialGraph]:
    """The glued graph and every valid set of merges closing rings (App. A.6). After the first
    gluing any two same-type nodes may merge (every subset of such pairs is a branch); later each
    newly added node may merge into one earlier node. A merge needs the two nodes ``min_ring``
    hops apart, and every kept node must end within its degree feature: merge sets are grown one
    node at a time and cut as soon as a lower bound of a kept node's final degree exceeds it (the
    bound counts undecided neighbours only when none of their options could absorb them), so
    invalid sets are never built; every surviving set is then checked exactly.

    Order, as the official code visits them: the most merges first (it reverses its enumeration),
    the unmerged graph last. The enumeration stops at ``deadline`` (the official code's time per
    gluing) or once ``expired()`` (the attack's budget), keeping the sets found by then."""
    new = set(added)
    drops = range(graph.num_nodes) if first else sorted(added)
    options: dict[int, list[int]] = {}
    for a in drops:
        dist = distances_from(graph.adj, a)
        keeps = [j for j in range(graph.num_nodes)
                 if j != a and graph.types[j] == graph.types[a] and (j < a if first else j not in new)
                 and dist.get(j, 1 << 30) >= min_ring]
        if keeps:
            options[a] = keeps
    order = sorted(options)
    position = {a: i for i, a in enumerate(order)}
    phi: dict[int, int] = {}  # decided merges: drop -> keep
    out: list[tuple[int, PartialGraph]] = []

    def bound_ok(i: int) -> bool:
        """Each kept node's final degree, lower-bounded with the first ``i`` decisions made."""
        groups: dict[int, list[int]] = {}
        for a, j in phi.items():
            groups.setdefault(j, [j]).append(a)
        for j, members in groups.items():
            mapped, undecided = set(), []
            for m in members:
                for w in graph.adj[m]:
                    if w in position and position[w] >= i:
                        undecided.append(w)
                    else:
                        mapped.add(phi.get(w, w))
            mapped -= set(members) | {j}
            extra = sum(1 for w in undecided if not any(k in mapped for k in options[w]))
            if len(mapped) + extra > deg[graph.types[j]]:
                return False
        return True

    def extend(i: int) -> None:
        if time.monotonic() > deadline or expired():  # unwind at once: each branch left would run bound_ok
            raise _Expired
        if i == len(order):
            if phi:
                merged = merge(graph, [(j, a) for a, j in phi.items()])
                # the kept nodes' indices after the dropped ones are removed
                dropped = sorted(phi)
                kept = [j - sum(d < j for d in dropped) for j in phi.values()]
                if not merged.over_degree(deg) and not has_short_ring(merged.adj, min_ring, kept):
                    out.append((len(phi), merged))
            return
        a = order[i]
        if bound_ok(i + 1):
            extend(i + 1)  # node a stays
        if a in phi.values():  # already kept by an earlier merge
            return
        kept = set(phi.values())
        for j in options[a]:
            if j in kept or j in phi:
                continue
            phi[a] = j
            if bound_ok(i + 1):
                extend(i + 1)
            del phi[a]

    try:
        extend(0)
    except _Expired:
        pass  # the merge sets found before the deadline stand
    out.reverse()
    if first:
        out.sort(key=lambda item: -item[0])
    return [g for _, g in out] + [graph]


def may_be_a_cover(graph: PartialGraph) -> bool:
    """Whether ``graph`` could be a k-fold cover (k >= 2) of a smaller graph: every class of its
    colour refinement (Weisfeiler-Lehman, starting from node types) must then have a size divisible
    by k. A cover repeats every node's unrolled neighbourhood k times, so with per-node logits
    averaged it gives exactly the gradient of the smaller graph."""
    colours = list(graph.types)
    for _ in range(graph.num_nodes):
        signature = [(colours[v], tuple(sorted(colours[w] for w in graph.adj[v]))) for v in range(graph.num_nodes)]
        index = {sig: i for i, sig in enumerate(sorted(set(signature)))}
        refined = [index[sig] for sig in signature]
        if len(set(refined)) == len(set(colours)):
            break
        colours = refined
    return math.gcd(*Counter(colours).values()) >= 2


def preference(distance: float, graph: PartialGraph | None, exact_tol: float) -> tuple:
    """Order of reconstructions: exact ones first, the smaller the better; then by distance."""
    if graph is None:
        return (2, 0, distance)
    return (0, graph.num_nodes, distance) if distance < exact_tol else (1, 0, distance)


def neighbourhood(block_or_graph, v: int | None = None) -> tuple:
    """A 2-hop block's, or node ``v``'s 2-hop neighbourhood's, centre type and sorted
    (neighbour type, sorted children types) slots: equal when the block describes the node."""
    if v is None:
        block = block_or_graph
        return block.centre, tuple(sorted((t, tuple(sorted(ch))) for t, ch in block.slots))
    g = block_or_graph
    return g.types[v], tuple(sorted((g.types[u], tuple(sorted(g.types[w] for w in g.adj[u] if w != v)))
                                    for u in g.adj[v]))


class FixedNeighbourhoods:
    """Admits a partial graph when every node's 2-hop neighbourhood, as far as the graph fixes it,
    is part of some block among ``blocks``, the blocks that passed the span check: the node's
    known neighbours map injectively onto a block's slots of their types, each with its known
    other neighbours among the slot's children (a node whose neighbours all have all their
    neighbours must then equal a block). A neighbourhood that fails the check is in no graph
    behind the gradient, and a node that no block can complete is a dead end however the search
    goes on. Gluing a block at ``v`` fixes ``v``'s neighbourhood to the block, but ring closures
    and later gluings fix other nodes' neighbourhoods too, and a batch's span passes many blocks
    that glue together into neighbourhoods of none of its graphs.

    Args:
        blocks: the 2-hop blocks that passed the span check (rings of >= 5 atoms keep a node's
            2-hop neighbourhood a tree, as a block is).
    """

    def __init__(self, blocks: list[Block]) -> None:
        self.by_centre: dict[int, list[list[tuple[int, Counter]]]] = {}
        for b in blocks:
            self.by_centre.setdefault(b.centre, []).append([(t, Counter(ch)) for t, ch in b.slots])
        self.known: dict[tuple, bool] = {}

    def __call__(self, graph: PartialGraph) -> bool:
        for v in range(graph.num_nodes):
            key = neighbourhood(graph, v)  # as far as the graph fixes it
            ok = self.known.get(key)
            if ok is None:
                ok = self.known[key] = any(_fits(key[1], slots) for slots in self.by_centre.get(key[0], ()))
            if not ok:
                return False
        return True


def _fits(neighbours: tuple, slots: list[tuple[int, Counter]], used: int = 0) -> bool:
    """Whether the (type, known children) ``neighbours`` map injectively onto ``slots``."""
    if not neighbours:
        return True
    (t, children), rest = neighbours[0], neighbours[1:]
    need = Counter(children)
    for s, (slot_type, have) in enumerate(slots):
        if not used >> s & 1 and slot_type == t and all(have[k] >= n for k, n in need.items()) \
                and _fits(rest, slots, used | 1 << s):
            return True
    return False


@dataclass
class SearchBudget:
    """The official code's DFS limits (App. A.6); their defaults are the attack's parameters'
    (``GRAIN.Params``), read by :meth:`of`."""

    max_depth: int
    max_nodes: int
    grad_evals: int
    start_blocks: int
    seeds_per_block: int
    pass_seconds: float
    total_seconds: float
    overlap_seconds: float
    score_complete: bool
    prefer_smaller: bool

    @classmethod
    def of(cls, params, max_depth: int, max_nodes: int) -> "SearchBudget":
        """The limits ``params`` (a ``GRAIN.Params``) set, for a search of this depth and size."""
        return cls(max_depth=max_depth, max_nodes=max_nodes, grad_evals=params.grad_evals,
                   start_blocks=params.start_blocks, seeds_per_block=params.seeds_per_block,
                   pass_seconds=params.dfs_pass_seconds, total_seconds=params.dfs_total_seconds,
                   overlap_seconds=params.overlap_seconds, score_complete=params.score_complete,
                   prefer_smaller=params.prefer_smaller)


@dataclass
class SearchResult:
    graph: PartialGraph | None
    distance: float
    exact: bool
    steps: int
    evaluations: int
    timed_out: bool


def search(blocks_by_pass: list[list[Block]], deg, score: Callable[[PartialGraph], float], *,
           budget: SearchBudget, exact_tol: float, min_ring: int,
           expired: Callable[[], bool], skip_start: Callable[[Block], bool] = lambda b: False,
           admissible: Callable[[PartialGraph], bool] = lambda g: True) -> SearchResult:
    """Depth-first search over gluings (Alg. 4), started from the best-scored blocks (those
    ``skip_start`` rejects excepted: an earlier search started there); a second pass uses the
    backup blocks when the first finds no exact graph. Gluings that ``admissible`` rejects are
    not explored (see :class:`FixedNeighbourhoods`). With ``prefer_smaller`` an
    exact graph that may be a cover of a smaller one does not end the search: it goes on among
    smaller graphs, and the smallest exact graph found is returned."""
    start = time.monotonic()
    best, best_dist, steps, evals = None, float("inf"), 0, 0
    exact: PartialGraph | None = None

    def evaluate(g: PartialGraph):
        nonlocal best, best_dist, evals
        evals += 1
        d = score(g)
        if preference(d, g, exact_tol) < preference(best_dist, best, exact_tol):
            best, best_dist = g, d
        return d

    def result(timed_out: bool = False) -> SearchResult:
        return SearchResult(best, best_dist, exact is not None, steps, evals, timed_out)

    def closures(glued: PartialGraph, added: list[int], first: bool) -> list[PartialGraph]:
        """The admissible ring closures of a gluing; none once the budget is spent (``admissible``
        may run the model on each, and the search is about to return)."""
        found = ring_closures(glued, added, deg, min_ring=min_ring, first=first,
                              deadline=time.monotonic() + budget.overlap_seconds, expired=expired)
        return [] if expired() else [g for g in found if admissible(g)]

    for blocks in blocks_by_pass:
        pass_start = time.monotonic()
        by_centre: dict[int, list[Block]] = {}
        for b in blocks:
            by_centre.setdefault(b.centre, []).append(b)
        starts = [b for b in blocks if not skip_start(b) and PartialGraph.from_block(b).dangling(deg)]
        starts = starts[: budget.start_blocks]
        for block in starts:
            root = PartialGraph.from_block(block)
            v = root.dangling(deg)[0]
            seeds = []
            for candidate in by_centre.get(root.types[v], []):
                for glued, added in glue(root, v, candidate, deg):
                    seeds.extend(closures(glued, added, first=True))
                if len(seeds) >= budget.seeds_per_block:
                    break
            if expired():
                return result(timed_out=True)
            stack = [(g, 2, float(budget.grad_evals)) for g in seeds[: budget.seeds_per_block]][::-1]
            while stack:
                now = time.monotonic()
                if expired() or now - start > budget.total_seconds:
                    return result(timed_out=True)
                graph, depth, share = stack.pop()
                steps += 1
                if exact is not None and graph.num_nodes >= exact.num_nodes:
                    continue
                dangling = graph.dangling(deg)
                leaf = (not dangling or now - pass_start > budget.pass_seconds or depth > budget.max_depth
                        or graph.num_nodes > budget.max_nodes)
                if leaf:
                    # The official code scores a leaf only while its share of the evaluation
                    # budget is >= 1; ``score_complete`` scores every complete graph (Alg. 4).
                    if (share >= 1 or (budget.score_complete and not dangling)) and evaluate(graph) < exact_tol:
                        exact = graph
                        if not (budget.prefer_smaller and may_be_a_cover(graph)):
                            return result()
                    continue
                v = dangling[0]
                children = []
                for candidate in by_centre.get(graph.types[v], []):
                    for glued, added in glue(graph, v, candidate, deg):
                        children.extend(closures(glued, added, first=False))
                if expired():
                    return result(timed_out=True)
                if not children:
                    if share >= 1:
                        evaluate(graph)
                    continue
                child_share = share / len(children)
                # A subtree whose share is below one evaluation can never score a graph: the
                # official code walks it anyway; skipping it changes no result, only the time.
                if child_share >= 1 or budget.score_complete:
                    stack.extend((c, depth + 1, child_share) for c in reversed(children))
    return result()
