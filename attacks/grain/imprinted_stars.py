r"""GRAIN's building blocks from a batch's stars: the rows an ``imprinted_aggregates`` round reads
off a pooled GCN's first layer (``fedgraph_sim/crafting/imprinted_aggregates.py``).

Beyond GRAIN (Drencheva et al., ICLR 2025), which knows a graph only through the span of its
gradient. Here the crafting gives every distinct aggregated input :math:`(\hat A X)_v` of the
batch's nodes, with its weight: the sum over the nodes that share it of
:math:`c_v \propto (\partial\mathcal L/\partial\mathrm{logit}_0)\,((\hat A^\top)^{L-1}\mathbf 1)_v`
(over the node count under mean pooling), whose sign is the graph's label. So:

- **node types**: a row names its centre's degree and, per block, the values a centre may take
  (``aggregate_reading.read_star``); every node of the batch is the centre of its own row;
- **1-hop blocks** (stars): a centre type and a multiset of neighbour types whose aggregate *is*
  a decoded row (a check of equality, not of span);
- **2-hop blocks** (GRAIN's Alg. 3 gluing): a star whose every neighbour gets a star of its own
  that has the centre among its neighbours;
- **the search** (GRAIN's Alg. 4) builds one connected graph whose every complete node's row is a
  decoded row with weight left; the graph's weights, computed through the crafted model for the
  label the rows' sign gives, must fit within the rows' weights, and are then taken off them.
  Searches repeat while rows keep weight: the batch's graphs one by one, in any order;
- **the order**: a graph's blocks imply one per-node weight :math:`c_G` (its centre row's weight
  over the centre's :math:`t` and the row's copies in the graph), so the blocks are grouped by it
  (:func:`weight_clusters`); under mean pooling :math:`|c_G|\,|V_G|` lies between the least and the
  most loss derivative the crafted logits allow, so a group names the sizes its graph can have
  (:meth:`_Rows.sizes_for`). Groups are searched smallest size first (the shortest searches; a
  graph found takes its weights off the rows it shares), each bounded by its largest size and
  over the blocks whose centre row has that weight left.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from attacks.base import AttackContext, AttackFailed
from attacks.grain.blocks import Block
from attacks.grain.build import PartialGraph, SearchBudget, search
from fedgraph_sim.crafting.aggregate_reading import StarCounts, read_star
from fedgraph_sim.crafting.imprint_reading import read_imprints
from fedgraph_sim.crafting.imprinted_aggregates import aggregated_rows
from fedgraph_sim.data.schema import FeatureSchema
from fedgraph_sim.models import classification_loss
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate, Reconstruction

#: The most stars enumerated for one row, and 2-hop blocks glued from one star.
MAX_STARS, MAX_BLOCKS = 2_000, 2_000
#: The most copies of one row in one graph that the grouping by weight tries (:func:`weight_clusters`).
MAX_COPIES = 4

#: The relative tolerance of a graph's weights against a row's: the weights come from a float32
#: gradient's cells (about 1e-6 off), and a graph the crafted model sees differently is 1e-3 off.
WEIGHT_TOL = 1e-4
#: The relative slack of the sizes a group's weight allows (:meth:`_Rows.sizes_for`): the derivative's
#: range is already that of logits six standard deviations out, so this only absorbs rounding.
SIZE_TOL = 1e-2


@dataclass
class Stars:
    """The batch's node types (categorical value indices per block, and their encoding ``x``
    and degrees), and its 1-hop blocks: ``stars[i] = (centre, neighbour types)`` with the row
    ``row_of[i]`` they aggregate to."""

    types: list[tuple[int, ...]]
    x: Tensor
    deg: list[int]
    stars: list[tuple[int, tuple[int, ...]]]
    row_of: list[int]


def node_types(counts: list[StarCounts], schema: FeatureSchema,
               most: int = 64) -> tuple[list[tuple[int, ...]], list[bool]]:
    """Every centre type the rows allow, and whether it is sure: per row, the product of the values
    each block's centre may take, at most ``most`` per row. A neighbour of the centre's own degree
    can swap values with it in the reading, so a row with such a neighbour may propose types no
    node has; a row whose product is one type proposes it surely.

    Args:
        counts (list[StarCounts]): the rows' readings.
        schema (FeatureSchema): the node features.
        most (int, optional): the most types one row may propose. (default: ``64``)
    """
    found: dict[tuple[int, ...], bool] = {}
    slices = list(schema.slices().values())
    degree = [b.name for b in schema.blocks].index(schema.degree_block)
    for c in counts:
        per_block = []
        for j, part in enumerate(slices):
            if j == degree:
                per_block.append([list(schema.blocks[j].values).index(c.d)])
                continue
            per_block.append([e - part.start for e in range(part.start, part.stop)
                              if any(centre for centre, _ in c.options[e])])
        size = math.prod(len(v) for v in per_block)
        if 0 < size <= most:
            for t in itertools.product(*per_block):
                found[tuple(t)] = found.get(tuple(t), False) or size == 1
    return list(found), list(found.values())


def one_hop_stars(rows: Tensor, counts: list[StarCounts], schema: FeatureSchema, tol: float = 1e-3) -> Stars:
    """Every star over the rows' node types whose aggregate is one of ``rows`` (relative ``tol``
    in the largest entry), at most :data:`MAX_STARS` per row: over the sure types first
    (:func:`node_types`), and over all of them for a row that no star of sure types explains.

    Args:
        rows (Tensor): the decoded rows ``[M, F]`` (model encoding).
        counts (list[StarCounts]): their readings (``read_star``).
        schema (FeatureSchema): the node features.
        tol (float, optional): the relative tolerance of equality. (default: ``1e-3``)
    """
    types, sure = node_types(counts, schema)
    x = schema.encode(torch.tensor(types, dtype=torch.long)).to(torch.float64) if types else \
        torch.zeros(0, schema.width, dtype=torch.float64)
    deg = schema.degrees(x).tolist() if types else []
    slices = list(schema.slices().values())
    degrees = [int(k) for k in schema.block(schema.degree_block).values]
    scale = float(rows.abs().max()) if len(rows) else 1.0

    def of_row(r: int, allowed: list[int]) -> list[tuple[int, tuple[int, ...]]]:
        c = counts[r]
        centres = [t for t in allowed if deg[t] == c.d and all(
            any(centre for centre, _ in c.options[part.start + types[t][j]]) for j, part in enumerate(slices))]
        by_degree = []
        for k, n_k in c.n.items():
            i = degrees.index(k)
            fits = [t for t in allowed if deg[t] == k and all(
                any(cnt[i] for _, cnt in c.options[part.start + types[t][j]]) for j, part in enumerate(slices))]
            by_degree.append(list(itertools.combinations_with_replacement(fits, n_k)))
        found = []
        for centre in centres:
            for parts in itertools.product(*by_degree):
                nbrs = tuple(sorted(u for part in parts for u in part))
                agg = x[centre] / (c.d + 1) + sum(
                    (x[u] / ((deg[u] + 1) * (c.d + 1)) ** 0.5 for u in nbrs), torch.zeros_like(x[centre]))
                if float((agg - rows[r]).abs().max()) <= tol * scale:
                    found.append((centre, nbrs))
                if len(found) >= MAX_STARS:
                    return found
        return found

    surely = [t for t, ok in enumerate(sure) if ok]
    stars, row_of = [], []
    for r in range(len(counts)):
        found = of_row(r, surely) or of_row(r, list(range(len(types))))
        stars += found
        row_of += [r] * len(found)
    return Stars(types, x, deg, stars, row_of)


def consistent_stars(stars: Stars) -> Stars:
    """The stars that can sit in one graph with others: each neighbour type ``u`` of a kept star
    has a kept star of its own with the centre's type among its neighbours, to a fixed point. A
    centre with neighbours of its own degree can swap values with them in a row's reading
    (:func:`node_types`); such swapped stars mostly have no partner and drop out here.

    Args:
        stars (Stars): the stars of :func:`one_hop_stars`.
    """
    kept = list(range(len(stars.stars)))
    while True:
        around: dict[int, set[int]] = {}
        for i in kept:
            centre, nbrs = stars.stars[i]
            around.setdefault(centre, set()).update(nbrs)
        now = [i for i in kept if all(stars.stars[i][0] in around.get(u, ()) for u in stars.stars[i][1])]
        if len(now) == len(kept):
            break
        kept = now
    return Stars(stars.types, stars.x, stars.deg, [stars.stars[i] for i in kept], [stars.row_of[i] for i in kept])


def two_hop_blocks(stars: Stars, max_blocks: int = MAX_BLOCKS) -> list[Block]:
    """Each star glued with a star for every neighbour that has the centre among its neighbours
    (their other neighbours are the slot's children), at most ``max_blocks`` per star.

    Args:
        stars (Stars): the batch's 1-hop blocks.
        max_blocks (int, optional): the most blocks per star. (default: :data:`MAX_BLOCKS`)
    """
    by_centre: dict[int, list[tuple[int, ...]]] = {}
    for centre, nbrs in set(stars.stars):
        by_centre.setdefault(centre, []).append(nbrs)
    blocks: dict[tuple, None] = {}
    for centre, nbrs in dict.fromkeys(stars.stars):
        options = []
        for u in nbrs:
            children = set()
            for theirs in by_centre.get(u, []):
                if centre in theirs:
                    rest = list(theirs)
                    rest.remove(centre)
                    children.add(tuple(rest))
            options.append(sorted(children))
        for k, choice in enumerate(itertools.product(*options)):
            if k >= max_blocks:
                break
            blocks[(centre, tuple(sorted(zip(nbrs, choice))))] = None
    return [Block(c, slots) for c, slots in blocks]


class _Rows:
    """The decoded rows with their weights left; a graph's complete nodes are scored against them."""

    def __init__(self, rows: Tensor, weights: Tensor, stars: Stars, tol: float, net,
                 knowledge: AttackerKnowledge, batch_size: int, plan: dict) -> None:
        self.rows, self.left, self.stars, self.tol = rows, weights.clone(), stars, tol
        self.net, self.knowledge, self.batch_size = net, knowledge, batch_size
        self.sizes = None if knowledge.node_counts is None else Counter(knowledge.node_counts)
        self.layers = int(knowledge.model.get("layers", 2))
        self.mean_pool = knowledge.model.get("pool", "mean") == "mean"
        self.unit, self.most = _weight_range(net, plan, knowledge, batch_size)
        #: the per-node weight ``c`` of the graph being searched (:func:`weight_clusters`), or None
        self.target: float | None = None
        #: the largest size that ``target`` allows (:meth:`sizes_for`), or None
        self.target_size: int | None = None
        self.scale = float(rows.abs().max())

    def sizes_for(self, c: float) -> list[int]:
        r"""The sizes a graph of per-node weight ``c`` can have: under mean pooling
        :math:`|c| = \alpha\gamma |g| / (B |V_G|)` with :math:`|g|` between the least and the most
        loss derivative the crafted logits allow, so :math:`|V_G|` lies in
        ``[unit / |c|, most / |c|]`` (the sizes still to find, with the node-count hint); under sum
        pooling :math:`c` says nothing of the size."""
        sizes = sorted(+self.sizes) if self.sizes else range(1, 61)
        if not self.mean_pool:
            return list(sizes)
        c = abs(c)
        return [n for n in sizes if self.unit * (1 - SIZE_TOL) <= c * n <= self.most * (1 + SIZE_TOL)]

    def able(self, centred: list[tuple[Block, int, float | None]], c: float | None) -> list[Block]:
        """The blocks a graph of per-node weight ``c`` can hold: those whose centre row has at least
        ``c`` times the centre's ``t`` left, of ``c``'s sign (every block when ``c`` is None). A row
        shared with graphs of the other label holds less, and their common blocks are lost."""
        if c is None:
            return [b for b, _, _ in centred]
        least = abs(c) * (1 - 10 * WEIGHT_TOL)
        return [b for b, r, t in centred if t and float(self.left[r]) * c > 0 and abs(float(self.left[r])) / t >= least]

    def live(self) -> Tensor:
        return self.left.abs() > self.tol * 10 * self.left.abs().max().clamp_min(1e-300)

    def gaps(self, graph: PartialGraph) -> tuple[list[int], Tensor, Tensor]:
        """The complete nodes, each one's nearest live row and its relative gap to it."""
        deg = self.stars.deg
        done = [v for v, t in enumerate(graph.types) if len(graph.adj[v]) == deg[t]]
        if not done:
            return done, torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.float64)
        x = self.stars.x
        agg = torch.stack([x[graph.types[v]] / (deg[graph.types[v]] + 1) + sum(
            (x[graph.types[u]] / ((deg[graph.types[u]] + 1) * (deg[graph.types[v]] + 1)) ** 0.5 for u in graph.adj[v]),
            torch.zeros_like(x[0])) for v in done])
        live = torch.nonzero(self.live()).flatten()
        if not len(live):
            return done, torch.zeros(len(done), dtype=torch.long), torch.full((len(done),), float("inf"))
        gap, nearest = ((agg.unsqueeze(1) - self.rows[live].unsqueeze(0)).abs().amax(2) / self.scale).min(1)
        return done, live[nearest], gap

    def admissible(self, graph: PartialGraph) -> bool:
        """A partial graph within the largest size the threat's node-count hint allows, whose
        complete nodes' rows are live rows."""
        if self.target_size is not None and graph.num_nodes > self.target_size:
            return False
        if self.sizes and graph.num_nodes > max(self.sizes):
            return False
        done, nearest, gap = self.gaps(graph)
        if not bool((gap <= self.tol).all()):
            return False
        return self.within_weights(graph, done, nearest)

    def within_weights(self, graph: PartialGraph, done: list[int], nearest: Tensor) -> bool:
        r"""The settled nodes (every node within ``L - 2`` hops complete, so their
        :math:`t_v = ((\hat A^{\top})^{L-1} \mathbf 1)_v` is final) add at least ``unit * t_v``
        over the largest size left to their rows' weights: no more than each row has left."""
        if not done:
            return True
        deg = torch.tensor([self.stars.deg[t] for t in graph.types], dtype=torch.float64)
        a = torch.eye(graph.num_nodes, dtype=torch.float64)
        for u, w in graph.edges():
            a[u, w] = a[w, u] = 1.0
        a = a / ((deg + 1).sqrt().unsqueeze(0) * (deg + 1).sqrt().unsqueeze(1))
        t = torch.ones(graph.num_nodes, dtype=torch.float64)
        for _ in range(self.layers - 1):
            t = a @ t
        complete = torch.zeros(graph.num_nodes, dtype=torch.bool)
        complete[done] = True
        settled = complete.clone()
        for _ in range(self.layers - 2):  # complete within one more hop
            settled = settled & torch.tensor([all(bool(complete[u]) for u in graph.adj[v])
                                              for v in range(graph.num_nodes)])
        where = torch.tensor([bool(settled[v]) for v in done])
        if not bool(where.any()):
            return True
        if self.target is not None:  # the graph's own per-node weight, from a block's row
            share = abs(self.target)
        else:
            share = self.unit / ((max(self.sizes) if self.sizes else 60) if self.mean_pool else 1)
        added = torch.zeros(len(self.rows), dtype=torch.float64).index_add_(
            0, nearest[where], t[torch.tensor(done)[where]] * share)
        return bool((added <= self.left.abs() * (1 + WEIGHT_TOL)).all())

    def score(self, graph: PartialGraph) -> float:
        """0 for a complete graph whose rows are live rows and whose weights fit (:meth:`fitting`)."""
        dangling = graph.dangling(self.stars.deg)
        _, _, gap = self.gaps(graph)
        worst = float(gap.max()) if len(gap) else 1.0
        if dangling:
            return 1.0 + len(dangling) / graph.num_nodes + worst
        if self.sizes and graph.num_nodes not in self.sizes:
            return 1.0 + worst
        return worst if worst > self.tol or self.fitting(graph) is not None else 1.0 + worst

    def fitting(self, graph: PartialGraph) -> tuple[int, Tensor] | None:
        """The label under which a complete ``graph``'s weights fit within the weights left (each
        of its rows keeps its sign and at most its weight), with those weights; None if none fits."""
        for label in range(max(self.knowledge.num_classes, 2)):
            w = graph_weights(self.net, graph, self.stars, label, self.knowledge.loss, self.batch_size, self.rows)
            used = w != 0
            ratio = w[used] / self.left[used]
            # within every row's weight left, and all of one row's: a graph glued from two graphs'
            # stars has its own loss derivative, so it takes all of no row
            if bool((ratio > 0).all()) and float(ratio.max()) <= 1 + WEIGHT_TOL \
                    and float((ratio - 1).abs().min()) <= WEIGHT_TOL:
                return label, w
        return None

    def take(self, w: Tensor) -> None:
        """Takes a graph's weights ``w`` off the rows (a row left with its rounding is spent)."""
        used = w != 0
        self.left[used] -= w[used]
        self.left[used & (self.left.abs() <= WEIGHT_TOL * w.abs().max())] = 0.0


def _weight_range(net, plan: dict, knowledge: AttackerKnowledge, batch_size: int) -> tuple[float, float]:
    r"""The least and the most weight a node with :math:`t_v = 1` adds to its row in a graph of one
    node: :math:`\alpha\gamma |g| / B`, with :math:`|g|` the smallest (largest) loss derivative of
    the first logit over the labels and over first logits within six standard deviations
    (``plan["logit_spread"]`` each) of 0, where the crafted head centres the auxiliary graphs' (the
    other logits are 0: their weights and biases are)."""
    bias = [p for name, p in net.named_parameters() if name.startswith("classifier") and name.endswith("bias")][-1]
    least, most = float("inf"), 0.0
    for label in range(max(knowledge.num_classes, 2)):
        for shift in (-6 * float(plan["logit_spread"]), 6 * float(plan["logit_spread"])):
            logits = torch.zeros_like(bias.detach()).unsqueeze(0)
            logits[0, 0] = shift
            logits.requires_grad_(True)
            classification_loss(logits, torch.tensor([label]), knowledge.loss).backward()
            least = min(least, abs(float(logits.grad[0, 0])))
            most = max(most, abs(float(logits.grad[0, 0])))
    scale = float(plan["alpha"]) * float(plan["gamma"]) / batch_size
    return scale * least, scale * most


def graph_weights(net, graph: PartialGraph, stars: Stars, label: int, loss: str, batch_size: int,
                  rows: Tensor) -> Tensor:
    """What ``graph`` (of ``label``) adds to each decoded row's weight in a batch of ``batch_size``:
    the first layer's bias gradient that its nodes of each row receive, computed through the
    crafted model ``net`` (the server's own weights).

    Args:
        net (GraphClassifier): the crafted model, float64.
        graph (PartialGraph): a complete graph over ``stars``' types.
        stars (Stars): the batch's types.
        label (int): the graph's label.
        loss (str): the clients' training loss.
        batch_size (int): the graphs of the batch (the gradient is their mean).
        rows (Tensor): the decoded rows ``[M, F]``.
    """
    edges = graph.edges()
    index = torch.tensor(edges + [(w, u) for u, w in edges], dtype=torch.long).view(-1, 2).T
    x = stars.x[list(graph.types)]
    pre = {}

    def keep(_module, _inputs, output):
        output.retain_grad()
        pre["out"] = output

    handle = net.convs[0].register_forward_hook(keep)
    try:
        logits = net(x, index, torch.zeros(len(x), dtype=torch.long))
        target = torch.tensor([label])
        classification_loss(logits, target, loss).backward()
    finally:
        handle.remove()
        net.zero_grad()
    # every table unit of a node receives the same derivative where it is active: its first unit's
    # (active on every node) is the node's c_v
    c = pre["out"].grad[:, 0] / batch_size
    agg = aggregated_rows(x, index)
    nearest = ((agg.unsqueeze(1) - rows.unsqueeze(0)).abs().amax(2)).argmin(1)
    return torch.zeros(len(rows), dtype=torch.float64).index_add_(0, nearest, c.detach())


def read_imprinted_aggregates(update: ObservedUpdate, knowledge: AttackerKnowledge, params,
                              ctx: AttackContext, tol: float = 1e-3) -> list[Reconstruction]:
    """An ``imprinted_aggregates`` round's reply: its rows peeled, read as stars, and the batch's
    graphs built one by one from them (the time left shared by the graphs still to find). A graph
    is kept when its weights fit within the rows' weights left."""
    schema = knowledge.schema
    net = knowledge.build_model(update.global_weights, dtype=torch.float64)
    imprints = read_imprints(update, None, tol=1e-2, valid=lambda z: read_star(z.numpy(), schema, tol) is not None)
    if not len(imprints.rows):
        raise AttackFailed(f"no row of the imprinted table decoded ({imprints.cells} cells with nodes)",
                           info=dict(crafted=update.crafted.crafting, imprint_cells=imprints.cells))
    counts = [read_star(z.numpy(), schema, tol) for z in imprints.rows]
    stars = one_hop_stars(imprints.rows, counts, schema, tol)
    one_hop = len(stars.stars)
    stars = consistent_stars(stars)
    blocks = two_hop_blocks(stars)
    rows = _Rows(imprints.rows, imprints.weights, stars, tol, net, knowledge, update.num_graphs,
                 update.crafted.plan)
    info = dict(crafted=update.crafted.crafting, imprint_cells=imprints.cells, imprint_undecoded=imprints.undecoded,
                imprint_rows=len(imprints.rows), types=len(stars.types), one_hop_candidates=one_hop,
                one_hop_kept=len(stars.stars),
                two_hop_kept=len(blocks))
    # each block's centre row (its star's) and the centre's t, fixed for the whole reading
    centred = centred_blocks(blocks, stars, rows.layers)
    recs: list[Reconstruction] = []
    tried: set[float | int] = set()  # weights of groups searched, ids of start blocks searched
    # every complete graph is scored: the check is one of equality, cheap beside GRAIN's span
    budget = replace(SearchBudget.of(params, max_depth=60, max_nodes=60), score_complete=True)
    # the graphs found are returned before the budget ends (and streamed as found: a stop scores them)
    stop = ctx.budget.deadline - max(1.0, 0.02 * ctx.budget.seconds)
    while len(recs) < update.num_graphs and time.monotonic() < stop:
        deadline = time.monotonic() + (stop - time.monotonic()) / (update.num_graphs - len(recs))
        groups = [(c, group) for c, group in weight_clusters(centred, rows) if round(c, 12) not in tried]
        # groups whose weight fits a size still to find first, the smallest size first (its search
        # is the shortest, and a graph found takes its weights off the rows it shares), then the
        # largest group; the groups that fit no size after
        sized = sorted(((c, group, max(rows.sizes_for(c), default=None)) for c, group in groups),
                       key=lambda cgn: (cgn[2] or 1000, -len(cgn[1])))
        if sized:  # a group of blocks that imply one per-node weight, searched under it
            c, group, largest = sized[0]
            tried.add(round(c, 12))
        else:  # then without a weight: windows of start blocks whose centre row has weight left
            live = rows.live()
            group = [b for b, r, _ in centred if id(b) not in tried and bool(live[r])][: params.start_blocks]
            if not group:
                break
            c = largest = None
            tried.update(id(b) for b in group)
        rows.target, rows.target_size, starts = c, largest, {id(b) for b in group}
        found = search([rows.able(centred, c)], stars.deg, rows.score, budget=replace(budget, start_blocks=len(group)),
                       exact_tol=tol, min_ring=params.min_ring, expired=lambda: time.monotonic() > deadline,
                       skip_start=lambda b: id(b) not in starts, admissible=rows.admissible)
        rows.target = rows.target_size = None
        if not found.exact:
            continue
        label, w = rows.fitting(found.graph)  # exact: its weights fit
        rows.take(w)
        if rows.sizes:
            rows.sizes[found.graph.num_nodes] -= 1
            rows.sizes = +rows.sizes  # the sizes still to find
        recs.append(_reconstruction(found.graph, stars, label, {**info, "exact": 1, "state_distance": found.distance}))
        ctx.checkpoint(recs)
        tried.clear()  # the rows' weights changed: every group is new
    if not recs:
        raise AttackFailed(f"no graph rebuilt from the imprinted stars ({len(imprints.rows)} rows, "
                           f"{len(stars.stars)} stars, {len(blocks)} 2-hop blocks)", info=info)
    for rec in recs:
        rec.info["imprint_rows_left"] = int(rows.live().sum())
    return recs


def centred_blocks(blocks: list[Block], stars: Stars, layers: int) -> list[tuple[Block, int, float | None]]:
    """Each 2-hop block with its centre's row (its star's) and :func:`block_t`, fixed for a reading.

    Args:
        blocks (list[Block]): the 2-hop blocks.
        stars (Stars): the stars they were glued from.
        layers (int): the model's GCN layers.
    """
    row_of = dict(zip(stars.stars, stars.row_of))
    return [(b, row_of[(b.centre, tuple(sorted(b.neighbour_types)))], block_t(b, stars.deg, layers)) for b in blocks]


def block_t(block: Block, deg: list[int], layers: int) -> float | None:
    r"""The centre's :math:`t = ((\hat A^\top)^{L-1}\mathbf 1)_c` from its 2-hop block, or None for
    more than 3 layers (it would need more hops): :math:`L = 2` gives the centre's row sum
    :math:`s_c`, :math:`L = 3` the sum of :math:`\hat A_{cw} s_w` over the centre and its neighbours.

    Args:
        block (Block): a 2-hop block.
        deg (list[int]): each type's degree.
        layers (int): the model's GCN layers.
    """
    if layers > 3:
        return None
    dc = deg[block.centre] + 1
    s_c = 1 / dc + sum(1 / math.sqrt(dc * (deg[w] + 1)) for w, _ in block.slots)
    if layers == 2:
        return s_c
    t = s_c / dc
    for w, children in block.slots:
        dw = deg[w] + 1
        s_w = 1 / dw + 1 / math.sqrt(dw * dc) + sum(1 / math.sqrt(dw * (deg[x] + 1)) for x in children)
        t += s_w / math.sqrt(dc * dw)
    return t


def weight_clusters(centred: list[tuple[Block, int, float | None]],
                    rows: _Rows) -> list[tuple[float, list[Block]]]:
    """The blocks grouped by the per-node weight :math:`c = w_r / (k t)` their centre's live row
    ``r`` implies with ``k`` copies of the row in one graph (``k`` up to :data:`MAX_COPIES`: a
    methyl's or a ring's symmetric atoms repeat their row): a graph's true blocks share its ``c``,
    a block glued from the wrong stars mostly has a ``c`` of its own. Largest group first; none for
    more than 3 layers.

    Args:
        centred (list[tuple[Block, int, float | None]]): each 2-hop block with its centre's row and
            :func:`block_t` (None past 3 layers).
        rows (_Rows): the rows and their weights left.
    """
    live = rows.live()
    scored = sorted(((float(rows.left[r]) / (k * t), b) for b, r, t in centred if t and bool(live[r])
                     for k in range(1, MAX_COPIES + 1)), key=lambda cb: cb[0])
    groups: list[tuple[float, list[Block]]] = []
    members: set[int] = set()  # the last group's blocks: one block counts once, whatever its copies
    for c, b in scored:
        if not groups or abs(c - groups[-1][0]) > WEIGHT_TOL * abs(c):
            groups.append((c, []))
            members = set()
        if id(b) not in members:
            members.add(id(b))
            groups[-1][1].append(b)
    return sorted((g for g in groups if len(g[1]) >= 2), key=lambda g: -len(g[1]))


def _reconstruction(graph: PartialGraph, stars: Stars, label: int, info: dict) -> Reconstruction:
    adj = torch.zeros(graph.num_nodes, graph.num_nodes)
    for u, w in graph.edges():
        adj[u, w] = adj[w, u] = 1.0
    return Reconstruction(x=stars.x[list(graph.types)].float(), adj=adj, num_nodes=graph.num_nodes, label=label,
                          info=dict(info))

