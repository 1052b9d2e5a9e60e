r"""[ext] ``unknown_degrees``: GRAIN without a degree block in the node features (TU graphs as PyG
loads them: one-hot node labels only).

GRAIN reads every node's degree from its features: a 1-hop block of a centre of degree ``d`` is a
multiset of ``d`` neighbour types, and GCN's normalisation weighs each neighbour by its degree.
Without the block, a node *type* becomes a pair ``(row, d)`` of a T0 row and a degree
``d <= max_degree``, so every later stage (2-hop gluing, the structure filter, the search) runs
unchanged on these pairs. Which pairs exist is read from the layer-2 span check:

- GAT, GIN and GraphSAGE: a centre's 1-hop state depends on its neighbours' rows, not on their
  degrees, so the centre of degree ``d`` is enumerated with every multiset of ``d`` T0 rows (one
  representative pair per row); the pairs that centre a passing block exist, and each block's
  neighbours are then given every degree an existing pair of their row has. The 2-hop check tells
  those apart: a neighbour's degree changes the centre's 2-hop state.
- GCN: ``w_cj = ((d_c + 1)(d_j + 1))^{-1/2}`` needs each neighbour's degree, so the multisets run
  over all pairs (``|T0| max_degree`` types instead of ``|T0|``).

Then, until nothing changes, a block whose neighbour is a pair no block is centred on is dropped
(every node of the graph centres its own 1-hop block).

Args of :func:`degree_types`: the T0 rows and ``max_degree`` (a prior on the schema, like a
valence: 4 for organic molecules).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch
from torch import Tensor

from attacks.grain.blocks import OneHopBlocks, canonical_order, one_hop_blocks


@dataclass
class DegreeTypes:
    """Node types as ``(row, degree)`` pairs: ``x [K, F]`` their rows, ``deg [K]`` their degrees
    (0 to ``max_degree``), ``row [K]`` the T0 row each repeats."""

    x: Tensor
    deg: Tensor
    row: Tensor


def degree_types(x: Tensor, max_degree: int) -> DegreeTypes:
    """Every T0 row with every degree from 0 (an isolated node) to ``max_degree``."""
    row = torch.arange(x.size(0)).repeat_interleave(max_degree + 1)
    return DegreeTypes(x[row], torch.arange(max_degree + 1).repeat(x.size(0)), row)


def one_hop_blocks_of_unknown_degree(layer1, deg: Tensor, space, *, rows: Tensor, degree_free: bool,
                                     **kwargs) -> OneHopBlocks:
    """T1* over ``(row, degree)`` types (``layer1`` evaluated on their rows, ``deg`` and ``rows``
    of :class:`DegreeTypes`), as the module says; ``kwargs`` go to
    :func:`~attacks.grain.blocks.one_hop_blocks`."""
    if not degree_free:
        return _closed(one_hop_blocks(layer1, deg, space, **kwargs))
    leaves = torch.nonzero(deg == 1).flatten()  # one representative per row
    found = one_hop_blocks(layer1, deg, space, neighbours=set(leaves.tolist()), **kwargs)
    return _closed(_with_neighbour_degrees(found, deg, rows))


def _with_neighbour_degrees(found: OneHopBlocks, deg: Tensor, rows: Tensor) -> OneHopBlocks:
    """Each block once per assignment of existing degrees to its neighbours (same state)."""
    existing = sorted(set(found.centre.tolist()))
    by_row: dict[int, list[int]] = {}
    for t in existing:
        by_row.setdefault(int(rows[t]), []).append(t)
    order = {t: i for i, t in enumerate(canonical_order(deg))}
    seen, kept = set(), []
    for i in range(len(found)):
        c = int(found.centre[i])
        options = [by_row.get(int(rows[t]), []) for t in found.neighbours(i)]
        for pick in itertools.product(*options):
            key = (c, tuple(sorted(pick, key=order.__getitem__)))
            if key not in seen:
                seen.add(key)
                kept.append((i, key))
    return _blocks(found, kept)


def _closed(blocks: OneHopBlocks) -> OneHopBlocks:
    """Drop blocks with a neighbour type that centres no block, until none is dropped."""
    rows = [(i, (int(blocks.centre[i]), blocks.neighbours(i))) for i in range(len(blocks))]
    while True:
        centres = {c for _, (c, _) in rows}
        kept = [(i, key) for i, key in rows if all(t in centres for t in key[1])]
        if len(kept) == len(rows):
            return _blocks(blocks, kept)
        rows = kept


def _blocks(source: OneHopBlocks, kept: list[tuple[int, tuple[int, tuple[int, ...]]]]) -> OneHopBlocks:
    """``source``'s rows ``i`` with centre and neighbours ``key``, as an :class:`OneHopBlocks`."""
    if not kept:
        return OneHopBlocks.empty(source.candidates)
    width = max(1, max(len(nbrs) for _, (_, nbrs) in kept))
    nbrs = torch.zeros(len(kept), width, dtype=torch.long)
    mask = torch.zeros(len(kept), width, dtype=torch.bool)
    for k, (_, (_, n)) in enumerate(kept):
        nbrs[k, :len(n)], mask[k, :len(n)] = torch.tensor(n, dtype=torch.long), True
    index = torch.tensor([i for i, _ in kept])
    centre = torch.tensor([c for _, (c, _) in kept])
    return OneHopBlocks(centre, nbrs, mask, source.states[index], source.distance[index], source.candidates)
