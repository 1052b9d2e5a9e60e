r"""Ranking where the gap closes (our extension, [ext] ``rank_closed``, with ``noise_aware``).

A defense's noise of per-entry level :math:`\sigma` hides every direction of a weight gradient
whose singular value falls under the noise's edge (``noise.py``). Once the signal's weakest
directions sink there, the kept span :math:`\hat S` is smaller than the span :math:`S` of the
layer's true input rows, and a true row :math:`z` leaves the residual of its part on the lost
directions,

.. math::
    \lVert (I - \hat Q^\top \hat Q)\, z \rVert \le \lVert (I - Q^\top Q)\, z \rVert
    + \lVert P_{S \ominus \hat S}\, z \rVert ,

whose first term is 0 for a true row and the second grows as directions are lost: the threshold,
set for the noise alone, filters true rows out. A wrong candidate leaves the first term too, so
true rows still tend to lie *nearer* the kept span than wrong ones. TIGER (Kalikman, Petrov,
Dimitrov, Vechev, "TIGER: Inverting Transformer Gradients via Embedding-Subspace Distance
Optimization", arXiv 2606.18312) replaces DAGER's membership test, brittle under DP noise, by
minimising candidate embeddings' distance to the subspace; over GRAIN's discrete candidates the
same principle is a ranking by that distance. Here every node type that centres no passing block
keeps its ``k`` candidates of smallest residual, ranked after every passing block, and the search
and the replayed gradient decide. The attacker uses nothing but the update: which types lack a
block is read from the passing blocks.

What ranking cannot give back: the order is only as good as the kept directions. When a lost
direction is the one that told two candidates apart, the true one can rank far down (on a
sulfonamide at :math:`\sigma = 3 \cdot 10^{-6}`, layer 2 keeps 6 directions for 7 distinct 1-hop
blocks; three true blocks rank first for their centre, one 25th of 286), and a node type whose
layer-1 row left the span (the gap closing at layer 1) is not in T0 at all, so no block is centred
at it.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from attacks.grain.blocks import OneHopBlocks, _multisets, _padded, canonical_order, concat_one_hop
from attacks.grain.embed import StarLayer
from attacks.grain.spancheck import RowSpace


def unexplained_centres(deg: Tensor, one_hop: OneHopBlocks) -> list[int]:
    """The node types (of degree > 0) that centre no block in ``one_hop``, lowest degree first
    (the fewest candidates: a budget cut leaves the costliest unranked)."""
    have = set(one_hop.centre.tolist())
    types = [t for t in range(deg.numel()) if int(deg[t]) > 0 and t not in have]
    return sorted(types, key=lambda t: (int(deg[t]), t))


def nearest_one_hop(layer1: StarLayer, deg: Tensor, space: RowSpace, centres: list[int], k: int, *,
                    max_combinations: float, expired: Callable[[], bool], chunk: int = 65536,
                    neighbours: set[int] | None = None) -> OneHopBlocks:
    """Per type in ``centres``, the ``k`` 1-hop blocks whose layer-1 state has the smallest
    residual on ``space`` (every multiset of ``deg[c]`` neighbour types, of ``neighbours`` only
    when given; a centre whose ``|T0|^deg[c]`` exceeds ``max_combinations`` is skipped, as in
    ``blocks.one_hop_blocks``, ``|T0|`` counting the neighbour types allowed), as far as
    ``expired`` allows. ``distance`` is the residual."""
    order = torch.tensor(canonical_order(deg))
    allowed = order[deg[order] > 0]
    if neighbours is not None:
        allowed = allowed[torch.tensor([int(t) in neighbours for t in allowed], dtype=torch.bool)]
    types = deg.numel() if neighbours is None else allowed.numel()
    found = OneHopBlocks.empty()
    for c in centres:
        degree = int(deg[c])
        if types ** degree > max_combinations or allowed.numel() == 0:
            continue
        best_n, best_s, best_r, total = [], [], [], 0
        for combos in _multisets(allowed, degree):
            if expired():
                break
            for part in torch.split(combos, chunk):
                if expired():
                    break
                centre = torch.full((part.size(0),), c, dtype=torch.long)
                states = layer1(centre, part, torch.ones_like(part, dtype=torch.bool), deg[centre], deg[part])
                residual, _ = space.residual(states)
                best_n.append(part)
                best_s.append(states)
                best_r.append(residual)
                total += part.size(0)
                if sum(r.numel() for r in best_r) > 4 * k + chunk:  # keep only the running k best
                    best_n, best_s, best_r = _top(best_n, best_s, best_r, k)
        if not best_r:
            continue
        (nbrs,), (states,), (residual,) = _top(best_n, best_s, best_r, k)
        rows = [tuple(r) for r in nbrs.tolist()]
        padded, mask = _padded(rows, degree)
        ranked = OneHopBlocks(torch.full((len(rows),), c, dtype=torch.long), padded, mask, states, residual, total)
        found = concat_one_hop(found, ranked)
    return found


def nearest_witnessed(layer1: StarLayer, deg: Tensor, space: RowSpace, one_hop: OneHopBlocks, k: int, *,
                      max_combinations: float, expired: Callable[[], bool]) -> OneHopBlocks:
    """[ext] ``rank_witnessed``, for a batch's update under an allowance (a FedAvg epoch's
    rounding): every *witnessed* type (a centre or neighbour of a passing block,
    ``blocks.witnessed_one_hop_blocks``) keeps its ``k`` candidates nearest the span over witnessed
    neighbour types, those that did not pass. The rounding hides the weakest directions of the
    1-hop check, and a true block with weight on them fails the threshold while its types are
    witnessed by the blocks that pass; by the principle above it still ranks near the top of its
    centre's candidates. Restricting neighbours to the witnessed types keeps the enumeration to
    ``|W|^deg`` per centre, ``|W|`` the witnessed types, far fewer than T0's."""
    have = {(int(one_hop.centre[i]), one_hop.neighbours(i)) for i in range(len(one_hop))}
    witnessed = one_hop.types()
    centres = sorted((t for t in witnessed if int(deg[t]) > 0), key=lambda t: (int(deg[t]), t))
    ranked = nearest_one_hop(layer1, deg, space, centres, k, max_combinations=max_combinations, expired=expired,
                             neighbours=witnessed)
    new = torch.tensor([(int(ranked.centre[i]), ranked.neighbours(i)) not in have for i in range(len(ranked))],
                       dtype=torch.bool)
    return OneHopBlocks(ranked.centre[new], ranked.nbrs[new], ranked.mask[new], ranked.states[new],
                        ranked.distance[new], ranked.candidates)


def _top(nbrs: list[Tensor], states: list[Tensor], residuals: list[Tensor], k: int):
    n, s, r = torch.cat(nbrs), torch.cat(states), torch.cat(residuals)
    keep = torch.argsort(r)[:k]
    return [n[keep]], [s[keep]], [r[keep]]
