r"""GRAIN's building blocks on a graph whose every node state the server knows: the rows an
``imprinted_nodes`` round reads (``fedgraph_sim/crafting/imprinted_nodes.py``).

Beyond GRAIN (Drencheva et al., ICLR 2025), which knows a graph only through the span of its
gradient. Here the crafting gives, per graph of a batch, every node's readout row
:math:`z_v = [x_v \,\|\, h_v]` (its features and its 2-hop state under the round's message-passing
weights, which the server sent) and its copies, so each of GRAIN's span checks becomes a check of
equality:

- **node types** are the distinct feature parts :math:`x_v`, snapped to the schema's values, with
  their counts (the copies) and degrees;
- **1-hop blocks**: every multiset of the graph's types a centre's degree allows, kept when a node
  of the centre's type could hold it. For a bias-free GCN second layer (GRAIN's),
  :math:`h_v W_2^{+\top} = \sum_{u \in N(v) \cup \{v\}} h^{(1)}_u / \sqrt{\tilde d_u \tilde d_v}`
  is a sum of ReLU outputs, so the centre's own term :math:`h^{(1)}_v / \tilde d_v` lies below it in
  every coordinate, up to the row's decoding error carried through :math:`W_2^{+\top}`;
- **2-hop blocks** (GRAIN's Alg. 3 gluing) are kept when their centre's row equals a decoded row;
- **the search** (GRAIN's Alg. 4) scores a graph by the distance between its nodes' rows, computed
  through the model, and the decoded rows with their copies: zero exactly when the graph has the
  victim's node states, which for GRAIN's victim is an isomorphic graph or one the GCN cannot
  tell from it; a graph the search cannot build connected is read as a disjoint union (a salt),
  one component per search.

An ``imprinted_nodes_epoch`` round is read from the FedAvg epoch's weights as one gradient of all
the epoch's graphs; its graphs of one label and node count share their weight, so they come as
one proposal of :math:`m` graphs, rebuilt as a union of :math:`m` components of that size and
split into them (:func:`split_union`).
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from typing import Callable

import networkx as nx
import torch
from torch import Tensor

from attacks.base import AttackContext, AttackFailed
from attacks.grain.blocks import OneHopBlocks, two_hop_blocks
from attacks.grain.build import PartialGraph, SearchBudget, SearchResult, search
from attacks.grain.embed import StarLayer, check_input
from fedgraph_sim.crafting.imprint_reading import EPOCH_CHECK_TOL, epoch_table, group_graphs, read_imprints
from fedgraph_sim.crafting.imprinted_nodes import aggregation_inverse
from fedgraph_sim.data.schema import FeatureSchema
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate, Reconstruction


#: The most graphs of one label and size an epoch table's proposal may hold (``group_graphs``'
#: ``merged``): two or three such graphs in an epoch of 8 Tox21 molecules are not rare.
MERGED = 3


class _DecodedRows:
    """The 2-hop check as equality: a candidate row passes when it is within ``tau`` (relative, in
    the largest coordinate) of one of the decoded ``rows``."""

    def __init__(self, rows: Tensor) -> None:
        self.rows = rows

    def passing(self, candidates: Tensor, tau: float) -> tuple[Tensor, Tensor]:
        gaps = torch.cat([((c.unsqueeze(1) - self.rows.unsqueeze(0)).abs().amax(2)).min(1).values
                          for c in candidates.split(4096)]) if len(candidates) else candidates.new_zeros(0)
        scale = self.rows.abs().max()
        keep = torch.nonzero(gaps <= tau * scale).flatten()
        return keep, gaps[keep] / scale


def node_types(rows: Tensor, copies: list[int], schema: FeatureSchema) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(types [T, F], type of each row [m], degree of each type [T], count of each type [T])``
    from the decoded rows' feature parts, snapped to the schema's values."""
    x = schema.encode(schema.decode(rows[:, :schema.width])).to(torch.float64)
    types, of_row = torch.unique(x, dim=0, return_inverse=True)
    count = torch.zeros(len(types), dtype=torch.long).index_add_(0, of_row, torch.tensor(copies))
    return types, of_row, schema.degrees(types), count


def imprinted_one_hop(model, types: Tensor, deg: Tensor, count: Tensor, rows: Tensor,
                      of_row: Tensor) -> tuple[StarLayer, OneHopBlocks]:
    """Every 1-hop block of the graph's types that a node of its centre's type could hold (see
    the module's docstring); all of them when the second layer is not a bias-free GCN."""
    layer1 = StarLayer(model, 0, types)
    entries = []
    for t in range(len(types)):
        d = int(deg[t])
        allowed = [u for u in range(len(types)) if int(deg[u]) > 0]
        for multiset in itertools.combinations_with_replacement(allowed, d):
            c = Counter(multiset)
            if all(c[u] <= int(count[u]) - (u == t) for u in c):
                entries.append((t, multiset))
    if not entries:
        return layer1, OneHopBlocks.empty()
    width = max(max(len(m) for _, m in entries), 1)
    centre = torch.tensor([t for t, _ in entries])
    nbrs = torch.zeros(len(entries), width, dtype=torch.long)
    mask = torch.zeros(len(entries), width, dtype=torch.bool)
    for i, (_, m) in enumerate(entries):
        nbrs[i, :len(m)], mask[i, :len(m)] = torch.tensor(m, dtype=torch.long), True
    states = layer1(centre, nbrs, mask, deg[centre], deg[nbrs])
    snapped = types[of_row]
    noise = (rows[:, :types.shape[1]] - snapped).abs().amax(1) / snapped.abs().amax(1).clamp_min(1e-12)
    aggregated = _aggregated_inputs(model, rows, noise)
    if aggregated is not None:  # the centre's own term lies below some node of its type's sum
        sums, error = aggregated
        own = states / (deg[centre] + 1).to(states.dtype).unsqueeze(1)
        keep = torch.zeros(len(entries), dtype=torch.bool)
        for t in centre.unique().tolist():
            mine, theirs, slack = centre == t, sums[of_row == t], error[of_row == t]
            if len(theirs):
                below = (own[mine].unsqueeze(1) <= theirs.unsqueeze(0) + slack.unsqueeze(0)).all(2).any(1)
                keep[torch.nonzero(mine).flatten()[below]] = True
        centre, nbrs, mask, states = centre[keep], nbrs[keep], mask[keep], states[keep]
    return layer1, OneHopBlocks(centre, nbrs, mask, states, torch.zeros(len(centre), dtype=torch.float64),
                                candidates=len(entries))


def _aggregated_inputs(model, rows: Tensor, noise: Tensor) -> tuple[Tensor, Tensor] | None:
    """:math:`h_v W_2^{+\\top}`, each node's sum of layer-1 states, for a bias-free GCN second layer
    without an activation after it, with its error bound ``[m, 1]``; else None.

    The pseudo-inverse magnifies the client's float32 rounding (a fixed relative slack dropped the
    true blocks of 20 of 51 Tox21 graphs). A row's ``noise`` (its decoded features' relative
    distance to their snapped values: the states are decoded by the same division) estimates its
    states' error; through ``P`` that is about ``noise * max|h_v| * max_j |P_:j|_2`` (all of 541
    decoded rows within 2.6 times it, 99% within 1.8), and the bound is 5 times that."""
    conv = model.convs[-1]
    if model.conv_name != "gcn" or len(model.convs) != 2 or getattr(conv, "bias", None) is not None \
            or not isinstance(model.acts[-1], torch.nn.Identity):
        return None
    hidden = conv.lin.weight.shape[0]
    inverse = torch.as_tensor(aggregation_inverse(conv.lin.weight.detach().numpy()))
    states = rows[:, -hidden:]
    error = 5.0 * noise.clamp_min(1e-7).unsqueeze(1) * states.abs().amax(1, keepdim=True) \
        * float(inverse.norm(dim=0).max())
    return states @ inverse, error


def state_distance(model, types: Tensor, rows: Tensor, copies: list[int], *,
                   part: bool = False, nodes: int | None = None) -> Callable[[PartialGraph], float]:
    """The search's score: 0 when a graph's node rows, through ``model``, are the decoded rows with
    their copies (with ``part``, with at most their copies: one component of the graph, of
    ``nodes`` nodes when given); the largest relative gap of a node's row to its nearest decoded
    one otherwise, and above 1 for a graph of another size or other copies."""
    total, want = sum(copies), torch.tensor(copies)
    size = total if nodes is None else nodes

    def score(graph: PartialGraph) -> float:
        if graph.num_nodes > size or (graph.num_nodes < size and (not part or nodes is not None)):
            return 1.0 + abs(graph.num_nodes - size) / size
        nearest, gaps = _nearest_rows(model, types, rows, graph)
        used = torch.bincount(nearest, minlength=len(copies))
        if not (bool((used <= want).all()) if part else torch.equal(used, want)):
            return 1.0 + float(gaps.max())
        return float(gaps.max())

    return score


def _nearest_rows(model, types: Tensor, rows: Tensor, graph: PartialGraph) -> tuple[Tensor, Tensor]:
    """Each node's nearest decoded row and its gap to it, relative to the rows' largest entry."""
    edges = graph.edges()
    index = torch.tensor(edges + [(w, u) for u, w in edges], dtype=torch.long).view(-1, 2).T
    x = types[list(graph.types)]
    with torch.no_grad():
        z = check_input(model, x, model.node_embeddings(x, index))
    gaps, nearest = ((z.unsqueeze(1) - rows.unsqueeze(0)).abs().amax(2) / rows.abs().max()).min(1)
    return nearest, gaps


def rebuild(model, schema: FeatureSchema, rows: Tensor, copies: list[int], params, *,
            expired: Callable[[], bool], tol: float = 1e-3, max_two_hop: int = 100_000,
            union_seconds: float = 10.0, graphs: int = 1) -> tuple[SearchResult | None, dict]:
    """The graph whose node rows are ``rows`` with ``copies``, by GRAIN's blocks and search.

    GRAIN builds one connected graph. When its search ends without one (and in time), the rows are
    read as a disjoint union, as a salt's molecule is in Tox21: each node without neighbours is a
    component of its own, and each search in turn builds a component whose rows are among those
    left (:func:`state_distance` with ``part``).

    Args:
        model (GraphClassifier): the model the rows were computed on (float64).
        schema (FeatureSchema): the node features (the degree block gives each type's degree).
        rows (Tensor): the graph's distinct readout rows ``[m, D]``.
        copies (list[int]): each row's copies.
        params (GRAIN.Params): the search's limits and ring rule.
        expired (Callable[[], bool]): the time limit.
        tol (float, optional): relative tolerance of a row's equality. (default: ``1e-3``)
        max_two_hop (int, optional): the most 2-hop candidates glued (below the search's own
            ``max_two_hop_candidates``): rows decoded with more rounding loosen the 1-hop bound,
            and the gluings grow past a million in minutes; the batch-16 diagnostic's two graphs
            that did were not rebuilt within 60 s either. (default: ``100_000``)
        union_seconds (float, optional): the most time the reading as a disjoint union may take:
            a connected graph whose search failed fails it too, after one search per window of
            start blocks (the Tox21 salts of the batches of 16 were read within a batch's 5 s).
            (default: ``10.0``)
        graphs (int, optional): the connected graphs of equal size the rows hold (a merged
            proposal of :func:`~fedgraph_sim.crafting.imprint_reading.group_graphs`): read as
            their union at once, every component of that size. (default: ``1``)

    Returns:
        ``(the search's result or None, counts of the stages)``.
    """
    types, of_row, deg, count = node_types(rows, copies, schema)
    layer1, one_hop = imprinted_one_hop(model, types, deg, count, rows, of_row)
    info = {"types": len(types), "one_hop_candidates": one_hop.candidates, "one_hop_kept": len(one_hop)}
    blocks: list = []
    if len(one_hop):
        blocks, checked, truncated = two_hop_blocks(model, layer1, one_hop, deg, types, _DecodedRows(rows),
                                                    tau=tol,
                                                    max_candidates=min(params.max_two_hop_candidates, max_two_hop),
                                                    expired=expired)
        info.update(two_hop_candidates=checked, two_hop_kept=len(blocks), two_hop_truncated=truncated)
    # the union of ``graphs`` connected graphs of one size: components of that size only (a 2-layer
    # GCN gives a 5-ring the states of a 6-ring, so a smaller component could match too)
    nodes = sum(copies) // graphs if graphs > 1 else None
    found = None if nodes else _connected(model, types, of_row, rows, copies, blocks, deg, params, expired, tol,
                                          part=False)
    if found is not None and (found.exact or found.timed_out):
        return found, info
    # the rows as a disjoint union: isolated nodes first, then one component per search, within
    # union_seconds: a connected graph whose search failed would otherwise search again per window
    stop = time.monotonic() + union_seconds

    def spent() -> bool:
        return expired() or time.monotonic() > stop

    left, parts = list(copies), []
    for r, t in enumerate(of_row.tolist()):
        if int(deg[t]) == 0:
            parts += [PartialGraph((t,), (frozenset(),))] * left[r]
            left[r] = 0
    while sum(left) and not spent():
        part = _connected(model, types, of_row, rows, left, blocks, deg, params, spent, tol, part=True,
                          nodes=nodes)
        if part is None or not part.exact:
            return found, info
        parts.append(part.graph)
        used = torch.bincount(_nearest_rows(model, types, rows, part.graph)[0], minlength=len(left))
        left = [k - int(u) for k, u in zip(left, used)]
    if sum(left):
        return found, info
    union = _disjoint_union(parts)
    distance = state_distance(model, types, rows, copies)(union)
    info["components"] = len(parts)
    return SearchResult(union, distance, distance < tol, 0, len(parts), False), info


def _connected(model, types: Tensor, of_row: Tensor, rows: Tensor, copies: list[int], blocks, deg, params, expired,
               tol: float, *, part: bool, nodes: int | None = None) -> SearchResult | None:
    """One connected graph whose rows are ``rows`` with ``copies`` (with ``part``, among them):
    a single block that holds it whole, else GRAIN's search; None without a block to start from.
    With ``part`` the search starts, ``start_blocks`` at a time, from every block whose centre's
    type has nodes left, until one is exact: the first starts may build a component already taken."""
    score = state_distance(model, types, rows, copies, part=part, nodes=nodes)
    if not blocks:
        return None
    for block in blocks:  # the whole graph within two hops of one node
        graph = PartialGraph.from_block(block)
        if not graph.dangling(deg) and (distance := score(graph)) < tol:
            return SearchResult(graph, distance, True, 0, 1, False)
    budget = SearchBudget.of(params, max_depth=20, max_nodes=sum(copies) + 4)
    if not part:
        return search([blocks], deg, score, budget=budget, exact_tol=tol, min_ring=params.min_ring, expired=expired)
    left = {int(t) for t, k in zip(of_row.tolist(), copies) if k > 0}
    starts = [b for b in blocks if b.centre in left and PartialGraph.from_block(b).dangling(deg)]
    result = None
    for i in range(0, len(starts), params.start_blocks):
        window = {id(b) for b in starts[i:i + params.start_blocks]}
        result = search([blocks], deg, score, budget=budget, exact_tol=tol, min_ring=params.min_ring,
                        expired=expired, skip_start=lambda b: id(b) not in window)
        if result.exact or result.timed_out:
            break
    return result


def split_union(graph: PartialGraph, m: int) -> list[PartialGraph] | None:
    """``graph`` as ``m`` connected graphs of equal size, or None when it is not that; with ``m = 1``
    the graph itself, a salt's components together. A union with more components is not split: a
    graph of half the size has twice the per-node weight, so two copies of its rows look like one
    graph of the size asked for (and a salt would need its ions assigned), and which reading holds
    cannot be told from the rows.

    Args:
        graph (PartialGraph): the union the search rebuilt.
        m (int): the graphs it holds.
    """
    if m == 1:
        return [graph]
    g = nx.Graph()
    g.add_nodes_from(range(graph.num_nodes))
    g.add_edges_from(graph.edges())
    components = [sorted(c) for c in nx.connected_components(g)]
    if len(components) != m or len({len(c) for c in components}) != 1:
        return None
    pieces = []
    for nodes in components:
        index = {v: k for k, v in enumerate(nodes)}
        pieces.append(PartialGraph(tuple(graph.types[v] for v in nodes),
                                   tuple(frozenset(index[u] for u in graph.adj[v]) for v in nodes)))
    return pieces


def _disjoint_union(parts: list[PartialGraph]) -> PartialGraph:
    types: list[int] = []
    adj: list[frozenset[int]] = []
    for p in parts:
        offset = len(types)
        types += p.types
        adj += [frozenset(w + offset for w in nb) for nb in p.adj]
    return PartialGraph(tuple(types), tuple(adj))


def read_imprinted_batch(update: ObservedUpdate, knowledge: AttackerKnowledge, params,
                         ctx: AttackContext) -> list[Reconstruction]:
    """An ``imprinted_nodes`` round's reply: its node rows peeled, grouped into graphs by their
    weights, and each graph rebuilt from its rows (an equal share of the time left each). A graph
    whose search ends without an exact one adds its best graph; one with no block adds none."""
    net = knowledge.build_model(update.global_weights, dtype=torch.float64)
    imprints = read_imprints(update, knowledge.schema, tol=1e-2)
    sizes = knowledge.node_counts  # the threat's node-count hint, when granted: what sizes a graph may have
    epoch = epoch_table(update.crafted)
    # an epoch's reply is read as one gradient of all its graphs (its pseudo-gradient's mean over the steps)
    # an epoch table tells graphs apart by label and size only: those sharing both come as one union
    graphs, left = group_graphs(imprints, net, knowledge.loss, update.num_graphs, range(knowledge.num_classes),
                                sizes=None if sizes is None else set(sizes),
                                check_tol=EPOCH_CHECK_TOL if epoch else None, merged=MERGED if epoch else 1)
    counts = dict(crafted=update.crafted.crafting, imprint_cells=imprints.cells, imprint_undecoded=imprints.undecoded,
                  imprint_rows=len(imprints.rows), imprint_graphs=len(graphs), imprint_rows_left=len(left))
    graphs = sorted(graphs, key=lambda g: sum(g.copies))[: update.num_graphs]  # the smallest first: the fastest
    recs = []
    for i, graph in enumerate(graphs):
        deadline = time.monotonic() + max(0.0, ctx.budget.deadline - time.monotonic()) / (len(graphs) - i)
        rows = imprints.rows[graph.rows]
        result, info = rebuild(net, knowledge.schema, rows, graph.copies, params,
                               expired=lambda: time.monotonic() > deadline, graphs=graph.graphs)
        if result is None or result.graph is None:
            continue
        pieces = split_union(result.graph, graph.graphs)
        if pieces is None:  # not the union of that many graphs of one size: not read
            continue
        types, _, _, _ = node_types(rows, graph.copies, knowledge.schema)
        label = graph.labels[0] if len(graph.labels) == 1 else None  # under bce every label fits
        for piece in pieces:
            adj = torch.zeros(piece.num_nodes, piece.num_nodes)
            for u, w in piece.edges():
                adj[u, w] = adj[w, u] = 1.0
            recs.append(Reconstruction(x=types[list(piece.types)].float(), adj=adj, num_nodes=piece.num_nodes,
                                       label=label, info={**counts, **info, "exact": int(result.exact),
                                                          "state_distance": result.distance,
                                                          "timed_out": int(result.timed_out),
                                                          "imprint_merged": graph.graphs}))
    if not recs:
        raise AttackFailed(f"no graph rebuilt from the imprinted rows ({len(imprints.rows)} rows, "
                           f"{len(graphs)} graphs grouped)", info=counts)
    return recs
