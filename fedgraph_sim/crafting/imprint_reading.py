r"""Reading an ``imprinted_nodes`` round (:mod:`fedgraph_sim.crafting.imprinted_nodes`): the table
peeled into node rows (:func:`read_imprints`, the peeling decoder of Goodrich and Mitzenmacher,
"Invertible Bloom Lookup Tables", Allerton 2011), and the rows grouped into graphs by their loss
weights (:func:`group_graphs`).

A decoded row :math:`z` carries the weight :math:`w = k\, c_g`, with :math:`k` its copies in graph
:math:`g` and :math:`c_g` the graph's per-node loss derivative; the crafted model's logits on any
set of rows predict :math:`c_g`, which decides whether a proposed set of rows and copies is a
graph. An attack reads these (``attacks/grain/imprinted.py``); the server never does.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from fedgraph_sim.crafting.imprinted_nodes import aggregation_inverse
from fedgraph_sim.data.schema import FeatureSchema
from fedgraph_sim.models import classification_loss
from fedgraph_sim.threat import CraftedRound, ObservedUpdate

#: ``group_graphs``' check tolerance on an ``epoch`` table: an epoch's later steps see a last layer
#: that earlier steps moved by 1e-4 to 1e-3 of its norm (chosen with the scales, on the same 16 molecules).
EPOCH_CHECK_TOL = 3e-3


def epoch_table(crafted: CraftedRound) -> bool:
    """Whether ``crafted`` is an ``epoch`` table (``ImprintedNodes(epoch=True)``): its plan names
    the redundant state columns its statistics are read on.

    Args:
        crafted (CraftedRound): an ``imprinted_nodes`` round.
    """
    return crafted.plan.get("redundant") is not None


@dataclass
class NodeImprints:
    """What :func:`read_imprints` decodes: distinct readout ``rows [M, D]``, each with its loss
    ``weights [M]`` (summed over its copies in the batch), and the cells the peeling left
    ``undecoded`` out of ``cells`` holding nodes."""

    rows: Tensor
    weights: Tensor
    cells: int
    undecoded: int


def read_imprints(update: ObservedUpdate, schema: FeatureSchema | None = None, *, tol: float = 1e-3,
                  confirm: int = 1, valid: Callable[[Tensor], bool] | None = None) -> NodeImprints:
    """Peel the table of an ``imprinted_nodes`` round's reply: every cell that holds one distinct
    row gives it, and it leaves its cells in the other groups.

    A cell's row is taken only when its input features decode to valid values of ``schema``
    (when given: the readout input starts with them), its statistic lies in the cell's own
    interval, and its cell in every other group holds nodes; mixtures mostly fail one of these.
    An ``epoch`` table's cell weights come from the features instead of the bias (whose update a
    float32 reply rounds away): ``std * S = B (onehot - mean)`` on a pure cell.

    Args:
        update (ObservedUpdate): one reply (or a secure aggregate) of an ``imprinted_nodes`` or
            ``imprinted_aggregates`` round.
        schema (FeatureSchema, optional): the node features, to check a row's first columns; an
            ``epoch`` table needs them standardized. (default: :obj:`None`)
        tol (float, optional): the relative tolerance of those checks and of an empty cell.
            (default: ``1e-3``)
        confirm (int, optional): the fewest groups whose cells must agree on a row for it to be
            taken; the reader tries every level from all groups down to this one, surest first.
            (default: ``1``)
        valid (Callable[[Tensor], bool], optional): whether a row is one the table can hold, in
            place of the ``schema`` check of its first columns (an aggregated row is no one-hot
            row: ``aggregate_reading.read_star``). (default: :obj:`None`)

    Raises:
        ValueError: an ``epoch`` table without a standardized ``schema``.
    """
    crafted = update.crafted
    groups, bins = int(crafted.plan["groups"]), int(crafted.plan["bins"])
    used = groups * bins
    w_name, b_name = _table_names(crafted)
    weight = torch.as_tensor(np.asarray(crafted.base[w_name], np.float64))[:used]
    cut = -torch.as_tensor(np.asarray(crafted.base[b_name], np.float64))[:used].view(groups, bins)
    directions = weight.view(groups, bins, -1)[:, 0]
    grad_w = update.gradient[w_name][:used].view(groups, bins, -1)
    grad_b = update.gradient[b_name][:used].view(groups, bins)
    # a cell: the difference of consecutive units (the last unit alone is the top cell)
    cell_s = grad_w - torch.cat([grad_w[:, 1:], torch.zeros_like(grad_w[:, :1])], 1)
    cell_b = grad_b - torch.cat([grad_b[:, 1:], torch.zeros_like(grad_b[:, :1])], 1)
    redundant = crafted.plan.get("redundant")
    if redundant is None:
        empty = tol * cell_b.abs().max().clamp_min(1e-300) * 1e-2
        size = cell_b.abs  # what an occupied cell holds above ``empty``

        def cell_weight(g: int, j: int) -> Tensor | None:
            return cell_b[g, j].clone() if cell_b[g, j].abs() > empty else None

        def row(S: Tensor, b: Tensor) -> Tensor:
            return S / b
    else:
        if schema is None or not schema.standardized:
            raise ValueError("an epoch table's cells are weighed by their standardized features; give their schema")
        coef = torch.tensor(redundant["coef"], dtype=torch.float64)
        start, keep = int(redundant["start"]), int(redundant["keep"])
        empty = tol * float(cell_s[..., :keep].abs().max()) * 1e-2

        def size() -> Tensor:
            return cell_s[..., :keep].abs().amax(2)

        def cell_weight(g: int, j: int) -> Tensor | None:
            if float(cell_s[g, j, :keep].abs().max()) <= empty:
                return None
            b, residual = _feature_weight(cell_s[g, j], schema)
            return torch.tensor(b, dtype=torch.float64) if residual <= tol and b != 0 else None

        def row(S: Tensor, b: Tensor) -> Tensor:
            z = S / b
            z[keep:] = coef @ z[start:keep]  # the redundant columns, whose own weights float32 rounded
            return z
    occupied = int((size() > empty).sum())
    view = _positive_view(crafted, schema) if crafted.plan.get("positive") else None
    rows, weights = [], []
    level = groups
    while level >= confirm:
        # the surest rows first: those whose cells agree in the most groups; a weaker level is
        # tried only once no row of a surer one is left, and one taken row sends it back up
        taken = False
        for g, j in torch.nonzero(size() > empty).tolist():
            b = cell_weight(g, j)  # the cell is emptied below
            if b is None:
                continue  # emptied earlier in this sweep, or (epoch) not one row
            z = row(cell_s[g, j], b)
            where = _cells(z, directions, cut)
            if where[g] != j:
                continue
            if bool((size()[torch.arange(groups), where] <= empty).any()):
                continue
            found = [cell_weight(g2, int(j2)) for g2, j2 in enumerate(where.tolist())]
            agree = sum(b2 is not None and float((row(cell_s[g2, where[g2]], b2) - z).abs().max())
                        <= tol * float(z.abs().max()) for g2, b2 in enumerate(found))
            if agree < level:
                continue
            if valid is not None and not valid(z):
                continue
            if valid is None and schema is not None and not _valid_features(z[:schema.width], schema, tol):
                continue
            if view is not None:  # no cell may be left with a negative count or state
                rest = view(cell_s[torch.arange(groups), where] - b * z, cell_b[torch.arange(groups), where] - b)
                if float(rest.min()) < -tol * float(view((b * z).unsqueeze(0), b.view(1)).abs().max()):
                    continue
            rows.append(z)
            weights.append(b)
            for g2, j2 in enumerate(where.tolist()):
                cell_s[g2, j2] -= b * z
                cell_b[g2, j2] -= b
            taken = True
            if level < groups:
                break
        level = groups if taken else level - 1
    undecoded = int((size() > empty).sum())
    if not rows:
        return NodeImprints(torch.zeros(0, weight.size(1), dtype=torch.float64), torch.zeros(0, dtype=torch.float64),
                            occupied, undecoded)
    return NodeImprints(torch.stack(rows), torch.stack(weights), occupied, undecoded)


def _table_names(crafted: CraftedRound) -> tuple[str, str]:
    """The table layer's weight and bias names: the per-node readout's first layer, or the GCN
    layer ``plan["table"]`` names (``imprinted_aggregates``)."""
    table = crafted.plan.get("table")
    return ("classifier.0.weight", "classifier.0.bias") if table is None else (f"{table}.lin.weight", f"{table}.bias")


def _feature_weight(S: Tensor, schema: FeatureSchema) -> tuple[float, float]:
    """``(B, residual)``: the weight of a cell holding one distinct row from its standardized one-hot
    columns alone, ``std * S = B (onehot - mean)``, the hot column per block being the one whose
    sign differs; the residual (relative to ``B``) is near zero only for such a cell."""
    mean, std = (torch.tensor(v, dtype=torch.float64) for v in (schema.mean, schema.std))
    live = std > 0
    v = S[:schema.width] * std
    best = (0.0, float("inf"))
    for sign in (1.0, -1.0):  # B's sign: the hot columns carry it, the others its opposite
        onehot = torch.zeros_like(v)
        for cols in schema.slices().values():
            onehot[cols.start + int((sign * v[cols]).argmax())] = 1.0
        d = (onehot - mean)[live]
        b = float((v[live] * d).sum() / (d * d).sum())
        residual = float((v[live] - b * d).abs().max()) / max(abs(b), 1e-300)
        best = min(best, (b, residual), key=lambda pair: pair[1])
    return best


def _positive_view(crafted: CraftedRound, schema: FeatureSchema | None):
    """``view(S [k, D], B [k]) -> [k, *]``: what no cell of positive weights can have negative,
    the counts of each feature value (``schema``'s one-hot columns, when given) and the last
    layer's aggregated inputs (``plan["states"]``)."""
    width = crafted.base["classifier.0.weight"].shape[1]
    parts = []
    if schema is not None and schema.standardized:
        mean, std = (torch.tensor(v, dtype=torch.float64) for v in (schema.mean, schema.std))
        live = std > 0
        parts.append(lambda S, B: (S[:, :schema.width] * std + B.unsqueeze(1) * mean)[:, live])
    elif schema is not None:
        parts.append(lambda S, B: S[:, :schema.width])
    if crafted.plan.get("states"):
        weights = {k: crafted.base[k] for k in crafted.base if k.startswith("convs.")}
        last = max(int(k.split(".")[1]) for k in weights)
        P = torch.as_tensor(aggregation_inverse(weights[f"convs.{last}.lin.weight"]))
        parts.append(lambda S, B: S[:, width - P.shape[0]:] @ P)
    if not parts:
        return None
    return lambda S, B: torch.cat([f(S, B) for f in parts], 1)


def _cells(z: Tensor, directions: Tensor, cut: Tensor) -> Tensor:
    """The cell of row ``z`` in every group: the last threshold its statistic exceeds."""
    stat = directions @ z
    return (torch.searchsorted(cut, stat.unsqueeze(1), right=False).squeeze(1) - 1).clamp_min(0)


def _valid_features(x: Tensor, schema: FeatureSchema, tol: float) -> bool:
    encoded = schema.encode(schema.decode(x.unsqueeze(0))).to(x.dtype)[0]
    return bool((encoded - x).abs().max() <= tol * max(1.0, float(x.abs().max())))


@dataclass
class ImprintedGraph:
    """A graph :func:`group_graphs` proposes: indices into the decoded rows (a row several graphs
    share is in each), each row's copies in this graph, the labels whose predicted weight matched,
    the graph's per-node weight ``c``, and how many graphs of that label and size it holds (their
    disjoint union, under ``group_graphs``' ``merged``)."""

    rows: list[int]
    copies: list[int]
    labels: tuple[int, ...]
    weight: float
    graphs: int = 1


def group_graphs(imprints: NodeImprints, net, loss: str, batch_size: int, labels: Sequence[int], *,
                 sizes: Sequence[int] | None = None, max_copies: int = 12, shared_copies: int = 4,
                 tol: float = 3e-4, check_tol: float | None = None,
                 merged: int = 1) -> tuple[list[ImprintedGraph], list[int]]:
    r"""Group decoded rows into graphs by their weights.

    Rows whose weights are whole multiples of one base weight ``c`` form a cluster. A row that
    several graphs share carries the sum of their weights, :math:`\sum_g k_g c_g`: it is offered
    to the clusters whose bases decompose it (two or three of them, ``k_g <= shared_copies``). A
    cluster, with the fewest of its offered rows that pass, is accepted as a graph when the crafted
    model's loss on those rows (with those copies, pooled as the model pools) gives every node the
    weight ``c`` for some label: the check that decides, since it depends on every row and copy of
    the graph. The likeliest decomposition of each shared row is offered first; a cluster still
    without a graph is then offered every decomposition and the rows that form a cluster of their
    own and joined no graph, with any number of copies their weight allows (a row shared by more
    graphs than three). Each accepted graph's share then leaves the rows it took, and the rows
    with weight left are grouped again, until a pass accepts no graph: a row shared by four graphs
    decomposes once two of them are taken (48 to 51 of 96 Tox21 graphs grouped exactly).

    Args:
        imprints (NodeImprints): the decoded rows.
        net (GraphClassifier): the crafted model (float64), whose readout gives a row's logit.
        loss (str): the training loss (``train.loss``).
        batch_size (int): the graphs of the batch (the loss is their mean).
        labels (Sequence[int]): the labels to try.
        sizes (Sequence[int], optional): the node counts a graph may have (the threat's node-count
            hint), or None for any. (default: :obj:`None`)
        max_copies (int, optional): the most copies of one row in a graph. (default: ``12``)
        shared_copies (int, optional): the most copies of a shared row in one of its graphs.
            (default: ``4``)
        tol (float, optional): relative tolerance of a multiple and of the check: about 1.5 times
            the largest spread of one graph's weight over its rows that a float32 client's batch
            of 16 Tox21 molecules showed (2.1e-4). (default: ``3e-4``)
        check_tol (float, optional): the check's own tolerance, when wider: a FedAvg epoch's
            later steps see a last layer that earlier steps moved, by 1e-4 to 1e-3 of its norm
            under an ``epoch`` table. (default: ``tol``)
        merged (int, optional): the most graphs one proposal may hold. Graphs of one label and
            node count whose pooled logits are equal share their per-node weight ``c``, so their
            rows form one cluster; with ``merged = m`` a cluster of :math:`m n` node copies that
            fails as one graph is checked as :math:`m` graphs of :math:`n` (each node's weight is
            then :math:`m` times the one graph's), and proposed as their disjoint union. An
            ``epoch`` table's tiny logit spread makes such clusters common. (default: ``1``)

    Returns:
        ``(graphs, rows left)``: the accepted graphs and the rows none took.
    """
    w = imprints.weights.numpy()
    residual, graphs = w.copy(), []
    floor = 0.25 * float(np.abs(w).min()) if len(w) else 0.0  # below any graph's weight
    while True:  # the accepted graphs' shares leave the rows they share; the rest is grouped again
        live = [r for r in range(len(w)) if residual[r] > floor]
        new = _group_pass(imprints.rows, residual, live, net, loss, batch_size, labels, sizes, max_copies,
                          shared_copies, tol, check_tol or tol, merged)
        if not new:
            break
        for graph in new:
            for r, k in zip(graph.rows, graph.copies):
                residual[r] -= k * graph.weight
        graphs += new
    taken = {r for g in graphs for r in g.rows}
    return graphs, [r for r in range(len(w)) if r not in taken]


def _group_pass(rows: Tensor, w: np.ndarray, live: list[int], net, loss: str, batch_size: int, labels, sizes,
                max_copies: int, shared_copies: int, tol: float, check_tol: float,
                merged: int = 1) -> list[ImprintedGraph]:
    """One pass of :func:`group_graphs` over the ``live`` rows, with weights ``w``."""
    clusters = [(c, [live[i] for i in idx], copies) for c, idx, copies in _clusters(w[live], max_copies, tol)]
    bases = np.array([c for c, _, _ in clusters])
    offers: dict[int, list[list[tuple[int, int]]]] = {i: [[], []] for i in range(len(clusters))}
    for row in live:  # cluster -> [(row, copies) of the likeliest decomposition, of the others]
        for rank, parts in enumerate(_decompositions(w[row], bases, shared_copies, tol)):
            for cluster, copies in parts:
                offers[cluster][min(rank, 1)].append((row, copies))

    def complete(i: int, extra: list[tuple[int, int]], most: int) -> ImprintedGraph | None:
        """Cluster ``i`` with the fewest of ``extra`` (at most ``most``) that pass the loss check."""
        c, own_rows, copies = clusters[i]
        own = list(zip(own_rows, copies))
        extra = [(r, k) for r, k in dict.fromkeys(extra) if r not in own_rows]
        for m, size in itertools.product(range(1, merged + 1), range(min(most, len(extra)) + 1)):
            for chosen in itertools.combinations(extra, size):  # one graph first, then m of total / m nodes
                members = own + list(chosen)
                if len({r for r, _ in members}) < len(members):
                    continue  # one row offered twice
                total = sum(k for _, k in members)
                if total % m or (sizes is not None and total // m not in sizes):
                    continue
                matched = _matching_labels(rows[[r for r, _ in members]], [k for _, k in members], c,
                                           net, loss, batch_size, labels, check_tol, graphs=m)
                if matched:
                    return ImprintedGraph([r for r, _ in members], [k for _, k in members], matched, float(c),
                                          graphs=m)
        return None

    found: dict[int, ImprintedGraph] = {}
    for i in range(len(clusters)):  # the likeliest decompositions of the shared rows first
        if (graph := complete(i, offers[i][0][:10], 10)) is not None:
            found[i] = graph
    taken = {r for g in found.values() for r in g.rows}
    # a row shared by more graphs than a decomposition covers is a cluster of its own that no graph took
    alone = [members[0] for _, members, _ in clusters if len(members) == 1 and members[0] not in taken]
    for i in range(len(clusters)):  # then any decomposition, and those rows
        if i in found:
            continue
        c = clusters[i][0]
        wider = [(r, k) for r in alone for k in range(1, shared_copies + 1) if k * c < w[r] * (1 + tol)]
        if (graph := complete(i, (offers[i][0] + offers[i][1] + wider)[:20], 3)) is not None:
            found[i] = graph
    return [found[i] for i in sorted(found)]


def _clusters(w: np.ndarray, max_copies: int, tol: float) -> list[tuple[float, list[int], list[int]]]:
    """``(base, rows, copies)``: from the smallest weight up, the rows left that are whole multiples
    of it."""
    left = sorted(range(len(w)), key=lambda i: abs(w[i]))
    out = []
    while left:
        c = w[left[0]]
        ratio = w[left] / c
        copies = np.rint(ratio)
        take = (np.abs(ratio - copies) <= tol * np.maximum(1.0, copies)) & (copies >= 1) & (copies <= max_copies)
        take[0] = True
        out.append((float(c), [left[i] for i in np.nonzero(take)[0]], [int(copies[i]) for i in np.nonzero(take)[0]]))
        left = [left[i] for i in np.nonzero(~take)[0]]
    return out


def _decompositions(weight: float, bases: np.ndarray, most: int, tol: float) -> list[list[tuple[int, int]]]:
    r"""Every way to write ``weight`` as :math:`\sum k_i c_i` over two or three distinct bases,
    ``1 <= k_i <= most``, within ``tol``."""
    out = []
    multiples = [(i, k, k * c) for i, c in enumerate(bases) for k in range(1, most + 1) if abs(k * c) < abs(weight)]
    for n in (2, 3):
        for combo in itertools.combinations(multiples, n):
            gap = abs(sum(v for _, _, v in combo) - weight)
            if len({i for i, _, _ in combo}) == n and gap <= tol * abs(weight):
                out.append((n, gap, [(i, k) for i, k, _ in combo]))
    return [parts for _, _, parts in sorted(out, key=lambda o: o[:2])]  # the fewest graphs, then the closest


def _matching_labels(rows: Tensor, copies: list[int], c: float, net, loss: str, batch_size: int,
                     labels: Sequence[int], tol: float, graphs: int = 1) -> tuple[int, ...]:
    """The labels for which the crafted model's loss gives every node of this graph the weight
    ``c`` (the derivative at its readout's first unit); under ``bce`` the crafting makes that
    derivative the same for every label. With ``graphs = m`` the rows are checked as ``m`` graphs
    of equal size and pooled logit (the rows' pooled one): each node's weight is ``m`` times what
    one graph of all of them would give it."""
    counts = torch.tensor(copies, dtype=torch.float64)
    shift = torch.zeros(len(copies), dtype=torch.float64, requires_grad=True)
    first = net.classifier[0](rows)
    first = torch.cat([first[:, :1] + shift.unsqueeze(1), first[:, 1:]], 1)
    pooled = (counts.unsqueeze(1) * net.classifier[1:](first)).sum(0, keepdim=True)
    if net.pool == "mean":
        pooled = pooled / counts.sum()
    out = []
    for label in labels:
        value = classification_loss(pooled, torch.tensor([label]), loss) / batch_size
        (grad,) = torch.autograd.grad(value, shift, retain_graph=True)
        if bool(((graphs * grad / counts - c).abs() <= tol * abs(c)).all()):  # each copy's own derivative
            out.append(int(label))
    return tuple(out)
