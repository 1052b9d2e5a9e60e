"""Building blocks: 1-hop blocks T1*, 2-hop blocks T2*, and the structure filter (GRAIN,
Drencheva et al., ICLR 2025, Sec. 5 and Alg. 2, 3 and 7).

An ``l``-hop block is the ``l``-hop computation tree of a centre node. Node types are indices into
T0, each with its degree feature ``deg[t]``. A 1-hop block is a centre type and the multiset of its
``deg[c]`` neighbour types; a 2-hop block adds, under every neighbour of degree > 1 (a "dangling"
neighbour), the other neighbours of a compatible 1-hop block centred there. Each candidate's centre
state is span-checked against the next layer's weight gradient: layer 2's for 1-hop blocks, the
readout's (or layer 3's) for 2-hop blocks.

Blocks are canonical: neighbours sorted by (degree descending, type), so equal blocks are equal
tuples and duplicates collapse. A tree is enough even for rings: the centre's state depends only
on its computation tree, cycles are closed later by merging nodes (``build.py``).
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterator

import torch
from torch import Tensor

from attacks.grain.embed import StarLayer, check_input
from attacks.grain.spancheck import CoordinateScreen, RowSpace


@dataclass(frozen=True)
class Block:
    """A 2-hop block: ``centre`` type, and per neighbour slot its type and its children's types
    (its neighbours other than the centre; empty for degree-1 neighbours). ``distance`` is the
    span-check residual; ``score`` the structure filter's (lower is better)."""

    centre: int
    slots: tuple[tuple[int, tuple[int, ...]], ...]
    distance: float = 0.0
    score: float = 0.0

    @property
    def neighbour_types(self) -> tuple[int, ...]:
        return tuple(t for t, _ in self.slots)


@dataclass
class OneHopBlocks:
    """T1*: ``centre [K]``, neighbour types ``nbrs [K, D]`` (``mask`` marks real ones), their
    layer-1 centre ``states [K, F1]`` and span distances."""

    centre: Tensor
    nbrs: Tensor
    mask: Tensor
    states: Tensor
    distance: Tensor
    candidates: int = 0

    @classmethod
    def empty(cls, candidates: int = 0) -> "OneHopBlocks":
        """No block (placeholder widths of 1), after ``candidates`` were checked."""
        return cls(torch.zeros(0, dtype=torch.long), torch.zeros(0, 1, dtype=torch.long),
                   torch.zeros(0, 1, dtype=torch.bool), torch.zeros(0, 1, dtype=torch.float64),
                   torch.zeros(0, dtype=torch.float64), candidates)

    def __len__(self) -> int:
        return self.centre.numel()

    def neighbours(self, i: int) -> tuple[int, ...]:
        return tuple(self.nbrs[i][self.mask[i]].tolist())

    def types(self) -> set[int]:
        """The types these blocks witness: their centres and neighbours."""
        return set(self.centre.tolist()) | set(self.nbrs[self.mask].tolist())

    def passing(self, space: RowSpace, tau: float) -> "OneHopBlocks":
        """The blocks whose states pass the span check on ``space`` (a smaller span than the one
        they were found on: what is left of a batch once members are removed)."""
        keep, distance = space.passing(self.states, tau)
        return OneHopBlocks(self.centre[keep], self.nbrs[keep], self.mask[keep], self.states[keep],
                            distance, self.candidates)


@dataclass
class Stage:
    """Counts and seconds of one stage, for the attack's per-graph info."""

    candidates: int = 0
    kept: int = 0
    seconds: float = 0.0
    note: str = ""
    extra: dict = field(default_factory=dict)


def canonical_order(deg: Tensor) -> list[int]:
    """Type ids sorted by (degree descending, id): the order neighbours are listed in."""
    return sorted(range(deg.numel()), key=lambda t: (-int(deg[t]), t))


def _padded(rows: list[tuple[int, ...]], width: int) -> tuple[Tensor, Tensor]:
    nbrs = torch.zeros(len(rows), max(width, 1), dtype=torch.long)
    mask = torch.zeros(len(rows), max(width, 1), dtype=torch.bool)
    for i, r in enumerate(rows):
        nbrs[i, :len(r)] = torch.tensor(r, dtype=torch.long)
        mask[i, :len(r)] = True
    return nbrs, mask


def _multisets(allowed: Tensor, k: int):
    """Every multiset of ``k`` types from ``allowed`` (sorted tuples), in chunks by first type."""
    if k == 1:
        yield allowed[:, None]
        return
    for p in range(allowed.numel()):
        rest = allowed[p:]
        tails = torch.combinations(rest, r=k - 1, with_replacement=True) if k > 2 else rest[:, None]
        yield torch.cat([allowed[p].expand(tails.size(0), 1), tails], 1)


def _gcn_sums(layer1: StarLayer, deg: Tensor) -> Tensor:
    """Per type, its layer-1 projection over ``sqrt(deg + 1)`` (float32): a GCN centre's
    pre-activation is ``(Q_c + sum_j Q_j) / sqrt(deg_c + 1)``, so the neighbour sums of a chunk of
    multisets serve every centre of that degree."""
    return (layer1.proj / (deg.to(layer1.proj.dtype) + 1).sqrt()[:, None]).float()


def _coordinate_screen(layer1: StarLayer, space: RowSpace) -> CoordinateScreen | None:
    """The screen on a few coordinates, where it is sound: an activation no larger than its input
    in magnitude (so a row's norm is at most its pre-activation's, at most the sum of its terms'
    norms) and a span it can test (``CoordinateScreen.usable``)."""
    act = layer1.act
    shrinks = isinstance(act, (torch.nn.ReLU, torch.nn.GELU, torch.nn.Identity)) or (
        isinstance(act, torch.nn.ELU) and act.alpha <= 1)
    screen = CoordinateScreen(space) if shrinks else None
    return screen if screen is not None and screen.usable else None


def one_hop_blocks(layer1: StarLayer, deg: Tensor, space: RowSpace, *, tau: float,
                   max_combinations: float, expired: Callable[[], bool], screen: bool = True,
                   centres_together: bool = True, coordinates: bool = True, degrees: set[int] | None = None,
                   neighbours: set[int] | None = None, including: set[int] | None = None) -> OneHopBlocks:
    """Every centre type with every multiset of ``deg[c]`` neighbour types (neighbours of degree
    0 excluded), span-checked at layer 2. A degree whose ``|T0|^k`` exceeds ``max_combinations``
    is skipped, as the official code does. For GCN, candidates are screened in float32 from
    shared neighbour sums (``RowSpace.plausible``) and the survivors checked exactly (``screen``
    off: every candidate checked exactly, the same result, slower; for benchmarks), all centres of
    a degree at once on each chunk of neighbour multisets (``centres_together`` off: one centre
    at a time, the same result; for benchmarks). Before that screen, where it is sound, a
    candidate is screened on a few coordinates of its layer-1 state (``CoordinateScreen``;
    ``coordinates`` off: every coordinate, the same result, slower; for benchmarks).
    ``degrees`` and ``neighbours`` restrict the enumeration to those centre degrees and neighbour
    types (``|T0|`` then counts the neighbour types allowed);
    ``including`` to the multisets holding at least one of those types."""
    return OneHopEnumeration(one_hop_parts(
        layer1, deg, space, tau=tau, max_combinations=max_combinations, screen=screen,
        centres_together=centres_together, coordinates=coordinates, degrees=degrees, neighbours=neighbours,
        including=including)).take(expired)


def one_hop_parts(layer1: StarLayer, deg: Tensor, space: RowSpace, *, tau: float, max_combinations: float,
                  screen: bool = True, centres_together: bool = True, coordinates: bool = True,
                  degrees: set[int] | None = None, neighbours: set[int] | None = None,
                  including: set[int] | None = None) -> Iterator[OneHopBlocks]:
    """:func:`one_hop_blocks` one chunk of neighbour multisets at a time: the blocks each chunk
    passes, with its count of candidates (a time limit stops between chunks)."""
    order = torch.tensor(canonical_order(deg))
    allowed = order[deg[order] > 0]
    if neighbours is not None:
        allowed = allowed[torch.tensor([int(t) in neighbours for t in allowed], dtype=torch.bool)]
    types = deg.numel() if neighbours is None else allowed.numel()
    q = _gcn_sums(layer1, deg) if layer1.kind == "gcn" and screen else None
    bias = None if layer1.bias is None else layer1.bias.detach().float()
    few = _coordinate_screen(layer1, space) if q is not None and coordinates else None
    if few is not None:  # a few coordinates first, and the norm bound of the whole row
        q_some, norms = q[:, few.index], q.norm(dim=1)
        bias_some = None if bias is None else bias[few.index]
        bias_norm = 0.0 if bias is None else float(bias.norm())
    for k in sorted({int(d) for d in deg.tolist() if d > 0 and (degrees is None or d in degrees)}):
        if types ** k > max_combinations or allowed.numel() == 0:
            continue
        of_degree = torch.nonzero(deg == k).flatten().tolist()
        for combos in _multisets(allowed, k):
            if including is not None:
                combos = combos[torch.isin(combos, torch.tensor(sorted(including))).any(1)]
                if combos.numel() == 0:
                    continue
            sums = q[combos].sum(1) if q is not None else None
            if few is not None:
                sums_some, norm_sums = q_some[combos].sum(1), norms[combos].sum(1)
            step = max(1, 65536 // combos.size(0)) if centres_together else 1  # centres screened together
            kept_c, kept_n, kept_s, kept_d, total = [], [], [], [], 0
            for first in range(0, len(of_degree), step):
                group = torch.tensor(of_degree[first:first + step])
                total += group.numel() * combos.size(0)
                if sums is not None and few is not None:
                    scale = (deg[group].float() + 1).sqrt()
                    some = (q_some[group][:, None] + sums_some[None]) / scale[:, None, None]
                    some = some if bias_some is None else some + bias_some
                    bound = (norms[group][:, None] + norm_sums[None]) / scale[:, None] + bias_norm
                    hits = few.plausible(layer1.act(some).reshape(-1, some.size(-1)), bound.reshape(-1), tau)
                    at, of = hits // combos.size(0), hits % combos.size(0)  # centre in group, multiset
                    centre, nbrs = group[at], combos[of]
                    pre = (q[centre] + sums[of]) / scale[at, None]
                    pre = pre if bias is None else pre + bias
                    hits = space.plausible(layer1.act(pre), tau)
                    centre, nbrs = centre[hits], nbrs[hits]
                elif sums is not None:  # GCN: a cheap float32 screen first, every centre at once
                    pre = (q[group][:, None] + sums[None]) / (deg[group].float() + 1).sqrt()[:, None, None]
                    pre = pre if bias is None else pre + bias
                    hits = space.plausible(layer1.act(pre).reshape(-1, pre.size(-1)), tau)
                    centre, nbrs = group[hits // combos.size(0)], combos[hits % combos.size(0)]
                else:
                    centre = group.repeat_interleave(combos.size(0))
                    nbrs = combos.repeat(group.numel(), 1)
                if centre.numel() == 0:
                    continue
                rows = layer1.rows(centre, nbrs, torch.ones_like(nbrs, dtype=torch.bool), deg[centre], deg[nbrs])
                keep, dist = space.passing(rows, tau)
                kept_c.append(centre[keep])
                kept_n.append(nbrs[keep])
                kept_s.append(layer1.states(rows[keep]))
                kept_d.append(dist)
            if not kept_c:
                yield OneHopBlocks.empty(total)
                continue
            nbrs = torch.cat(kept_n)
            yield OneHopBlocks(torch.cat(kept_c), nbrs, torch.ones_like(nbrs, dtype=torch.bool), torch.cat(kept_s),
                               torch.cat(kept_d), total)


def witnessed_one_hop_blocks(layer1: StarLayer, deg: Tensor, space: RowSpace, *, tau: float,
                             max_combinations: float, expired: Callable[[], bool],
                             screen: bool = True, coordinates: bool = True,
                             witnessed_first: bool = True) -> OneHopBlocks:
    """T1* for a batch (our extension, with GRAIN's ``batches``): the union of several graphs'
    node rows spans one-hot combinations no graph has, so T0 holds every value of a block (the
    degree above all) for many types, and ``|T0|^3`` or ``|T0|^4`` neighbour multisets are out of
    reach. Centres of degree 1 and 2 take every neighbour type; every type in a passing block is
    then *witnessed*, and centres of degree 3 and more take neighbours among the witnessed types
    only, until no new type is witnessed. A true centre is found whenever its neighbours' types are
    witnessed, which holds for every atom next to an atom of degree <= 2, and then for theirs (a
    graph with no node of degree <= 2 is missed).

    The order is chosen so that a time limit cuts the least likely blocks
    (``witnessed_first``): degree-1 centres first, then degree-2 centres with at least one
    witnessed neighbour, the higher degrees on the witnessed types, and so on while new types are
    witnessed (a chain or ring of the batch is followed from its leaves); the degree-2 multisets
    with no witnessed type come last. When nothing expires the blocks are the same as in the
    plain order (degrees 1 and 2 in full, then the higher ones), which ``witnessed_first`` off
    keeps (for benchmarks); only the order differs, and with it which blocks a time limit leaves."""
    return witnessed_enumeration(layer1, deg, space, tau=tau, max_combinations=max_combinations, screen=screen,
                                 coordinates=coordinates, witnessed_first=witnessed_first).take(expired)


def witnessed_enumeration(layer1: StarLayer, deg: Tensor, space: RowSpace, *, tau: float, max_combinations: float,
                          screen: bool = True, coordinates: bool = True,
                          witnessed_first: bool = True) -> "OneHopEnumeration":
    """:func:`witnessed_one_hop_blocks` as an enumeration that a time limit pauses, to resume later."""
    return OneHopEnumeration(_witnessed_parts(layer1, deg, space, tau=tau, max_combinations=max_combinations,
                                              screen=screen, coordinates=coordinates,
                                              witnessed_first=witnessed_first))


def _witnessed_parts(layer1: StarLayer, deg: Tensor, space: RowSpace, *, tau: float, max_combinations: float,
                     screen: bool, coordinates: bool, witnessed_first: bool) -> Iterator[OneHopBlocks]:
    def enumerate_(degrees: set[int], limit: float, **restrict):  # yields its parts, returns them joined
        parts = []
        for part in one_hop_parts(layer1, deg, space, tau=tau, max_combinations=limit, screen=screen,
                                  coordinates=coordinates, degrees=degrees, **restrict):
            parts.append(part)
            yield part
        return concat_one_hop(*parts)

    present = set(deg.unique().tolist())
    high = {d for d in present if d > 2}
    if not witnessed_first:
        blocks = yield from enumerate_({d for d in present if 0 < d <= 2}, float("inf"))
        yield from _witnessed_closure(blocks.types(), None, high, enumerate_, max_combinations)
        return
    everything = set(range(deg.numel()))
    witnessed = (yield from enumerate_({1}, float("inf"))).types() if 1 in present else set()
    done, high_done = set(), set()
    while witnessed - done:  # degree 2 around newly witnessed types, then the higher degrees on them
        new = witnessed - done
        if 2 in present:  # multisets holding a new type and no type enumerated around before
            witnessed |= (yield from enumerate_({2}, float("inf"), neighbours=everything - done,
                                                including=new)).types()
        done |= new
        if high and witnessed - high_done:
            fresh = witnessed - high_done
            more = yield from enumerate_(high, max_combinations, neighbours=set(witnessed),
                                         including=fresh if high_done else None)
            high_done = set(witnessed)
            witnessed |= more.types()
    if 2 in present:  # the rest of degree 2: no witnessed neighbour
        witnessed |= (yield from enumerate_({2}, float("inf"), neighbours=everything - done)).types()
    if high and witnessed - high_done:
        yield from _witnessed_closure(witnessed, high_done or None, high, enumerate_, max_combinations)


def _witnessed_closure(witnessed: set[int], enumerated: set[int] | None, high: set[int], enumerate_,
                       max_combinations: float) -> Iterator[OneHopBlocks]:
    """Centres of degree ``high`` on witnessed neighbour types until no new type is witnessed;
    ``enumerated``: the witnessed types whose multisets were already checked (None: none)."""
    new = None if enumerated is None else witnessed - enumerated
    while high:  # each round only the multisets with a newly witnessed type
        more = yield from enumerate_(high, max_combinations, neighbours=set(witnessed), including=new)
        new = more.types() - witnessed
        if not new:
            break
        witnessed |= new


class OneHopEnumeration:
    """A 1-hop enumeration that a time limit pauses rather than ends: :meth:`take` checks chunks
    of candidates until ``expired`` and returns the blocks they passed; a later :meth:`take`
    goes on from the next chunk. ``exhausted`` once every candidate has been checked.

    Args:
        parts: the enumeration's chunks (:func:`one_hop_parts`), each the blocks it passed.
    """

    def __init__(self, parts: Iterator[OneHopBlocks]) -> None:
        self._parts = parts
        self.exhausted = False
        self.candidates = 0  # checked so far, over every take

    def take(self, expired: Callable[[], bool]) -> OneHopBlocks:
        found = []
        while not self.exhausted and not expired():
            part = next(self._parts, None)
            if part is None:
                self.exhausted = True
            else:
                found.append(part)
                self.candidates += part.candidates
        return concat_one_hop(*found)


def concat_one_hop(*parts: OneHopBlocks) -> OneHopBlocks:
    """The blocks of ``parts`` in order, neighbours padded to the widest; candidates summed."""
    candidates = sum(p.candidates for p in parts)
    kept = [p for p in parts if len(p)]  # an empty set's tensors have placeholder widths (OneHopBlocks.empty)
    if not kept:
        return OneHopBlocks.empty(candidates)
    width = max(p.nbrs.size(1) for p in kept)

    def pad(t: Tensor, fill) -> Tensor:
        return torch.nn.functional.pad(t, (0, width - t.size(1)), value=fill)

    return OneHopBlocks(torch.cat([p.centre for p in kept]), torch.cat([pad(p.nbrs, 0) for p in kept]),
                        torch.cat([pad(p.mask, False) for p in kept]), torch.cat([p.states for p in kept]),
                        torch.cat([p.distance for p in kept]), candidates)


def _gluings(one_hop: OneHopBlocks, i: int, deg: Tensor, by_centre: dict[int, list[int]],
             nbr_sets: list[Counter]):
    """Every 2-hop tree around 1-hop block ``i``: per neighbour slot ``(type, children, source)``,
    ``source`` the 1-hop block glued there (centred at the neighbour, holding block ``i``'s centre
    among its neighbours) or None for a degree-1 neighbour. Blocks glued onto neighbours of one
    type form a multiset."""
    c, nbrs = int(one_hop.centre[i]), one_hop.neighbours(i)
    groups = sorted(Counter(t for t in nbrs if deg[t] > 1).items())
    choices = [list(itertools.combinations_with_replacement(
        [j for j in by_centre.get(t, []) if nbr_sets[j][c] > 0], count)) for t, count in groups]
    for pick in itertools.product(*choices):
        by_type = {t: list(group) for (t, _), group in zip(groups, pick)}
        slots = []
        for t in nbrs:
            if deg[t] > 1:
                j = by_type[t].pop(0)
                rest = nbr_sets[j].copy()
                rest[c] -= 1
                slots.append((t, tuple(sorted(rest.elements(), key=lambda s: (-int(deg[s]), s))), j))
            else:
                slots.append((t, (), None))
        yield slots


def two_hop_blocks(model, layer1: StarLayer, one_hop: OneHopBlocks, deg: Tensor, x0: Tensor,
                   space: RowSpace, *, tau: float, max_candidates: int,
                   expired: Callable[[], bool], inputs: dict | None = None,
                   nearest: int = 0) -> tuple[list[Block], int, bool]:
    """Glue compatible 1-hop blocks onto every dangling neighbour of each 1-hop block (Alg. 3),
    embed the centres through layer 2 and span-check them; returns ``(T2*, candidates checked,
    truncated)``. ``inputs``, when given, receives each passing block's checked row, by
    ``(centre, slots)``. ``nearest`` > 0 ([ext] ``rank_closed``, ``ranking.py``): a centre type
    that no passing block has keeps its ``nearest`` candidates of smallest residual, ranked after
    the passing blocks (their distance: the largest passing block's plus their residual)."""
    by_centre: dict[int, list[int]] = defaultdict(list)
    nbr_sets = [Counter(one_hop.neighbours(i)) for i in range(len(one_hop))]
    for i in range(len(one_hop)):
        by_centre[int(one_hop.centre[i])].append(i)

    leaf_index: dict[tuple[int, int], int] = {}  # (leaf type, centre type) -> row of the leaf table
    entries: list[tuple[int, tuple[int, ...], tuple[tuple[int, tuple[int, ...]], ...]]] = []
    truncated = False
    for i in range(len(one_hop)):
        if expired() or truncated:
            break
        c = int(one_hop.centre[i])
        for slots in _gluings(one_hop, i, deg, by_centre, nbr_sets):
            # a layer-2 input per neighbour: a 1-hop block's state, or a leaf's (leaf; centre) one
            rows = tuple(j if j is not None else -1 - leaf_index.setdefault((t, c), len(leaf_index))
                         for t, _, j in slots)
            entries.append((i, rows, tuple((t, children) for t, children, _ in slots)))
            if len(entries) >= max_candidates:
                truncated = True
                break
    if not entries:
        return [], 0, truncated
    leaf_pairs = list(leaf_index)

    # Layer-2 inputs: the 1-hop blocks' states, then the leaf neighbours' (leaf; centre) states.
    if leaf_pairs:
        leaves = torch.tensor(leaf_pairs)
        ones = torch.ones(len(leaf_pairs), 1, dtype=torch.bool)
        leaf_states = layer1(leaves[:, 0], leaves[:, 1:], ones, deg[leaves[:, 0]], deg[leaves[:, 1:]])
        table = torch.cat([one_hop.states, leaf_states])
    else:
        table = one_hop.states
    offset = len(one_hop)
    width = max(len(rows) for _, rows, _ in entries)
    centre_rows = torch.tensor([i for i, _, _ in entries])
    nbr_rows = torch.zeros(len(entries), width, dtype=torch.long)
    mask = torch.zeros(len(entries), width, dtype=torch.bool)
    for k, (_, rows, _) in enumerate(entries):
        mapped = [r if r >= 0 else offset + (-1 - r) for r in rows]
        nbr_rows[k, :len(mapped)] = torch.tensor(mapped)
        mask[k, :len(mapped)] = True
    layer2 = StarLayer(model, 1, table)
    centre_types = one_hop.centre[centre_rows]
    nbr_types = torch.tensor([[t for t, _ in slots] + [0] * (width - len(slots)) for _, _, slots in entries])
    rows = layer2.rows(centre_rows, nbr_rows, mask, deg[centre_types], deg[nbr_types])
    checked_rows = check_input(model, x0[centre_types], rows)
    keep, dist = space.passing(checked_rows, tau)
    if nearest > 0 and not expired():  # where the gap closes: the nearest candidates of the centres none explains
        rest = torch.nonzero(~torch.isin(centre_types, centre_types[keep])).flatten()
        extra, residual = space.nearest(checked_rows[rest], centre_types[rest], nearest)
        offset = float(dist.max()) if dist.numel() else 0.0  # so that they rank after every passing block
        keep, dist = torch.cat([keep, rest[extra]]), torch.cat([dist, offset + residual])
    out = []
    for k, d in zip(keep.tolist(), dist.tolist()):
        _, _, slots = entries[k]
        ordered = tuple(sorted(slots, key=lambda s: (-int(deg[s[0]]), s[0], s[1])))
        out.append(Block(int(centre_types[k]), ordered, d))
        if inputs is not None:
            inputs[(out[-1].centre, ordered)] = checked_rows[k]
    return sorted(set(out), key=lambda b: (b.distance, b.centre, b.slots)), len(entries), truncated


def is_complete(block: Block, deg: Tensor) -> bool:
    """No second-hop node needs more neighbours: the whole graph lies within the block."""
    return all(int(deg[c]) == 1 for _, children in block.slots for c in children)


def structure_filter(blocks: list[Block], deg: Tensor) -> tuple[list[Block], list[Block]]:
    """GRAIN's structure filter (Alg. 7) and scores: around every non-centre node ``u`` of a block,
    the part of the block visible from ``u`` must be covered by some block centred at ``u``'s type;
    ``S_u`` is the smallest span distance among the covering blocks, ``S = sum_u S_u`` (lower is
    better). Returns ``(passing blocks, all blocks)``, each sorted by score; blocks with an
    uncovered node score +inf."""
    def multiset(types) -> tuple[int, ...]:
        return tuple(sorted(types, key=lambda s: (-int(deg[s]), s)))

    # Covers of a first-hop node: (centre, neighbour multiset, slot type, slot children).
    first: dict[tuple, float] = {}
    # Covers of a second-hop node: (centre, slot type, slot children).
    second: dict[tuple, float] = {}
    for b in blocks:
        for t, children in b.slots:
            k1 = (b.centre, b.neighbour_types, t, children)
            k2 = (b.centre, t, children)
            first[k1] = min(first.get(k1, float("inf")), b.distance)
            second[k2] = min(second.get(k2, float("inf")), b.distance)
    scored = []
    for b in blocks:
        total = 0.0
        for i, (t, children) in enumerate(b.slots):
            others = list(b.neighbour_types)
            others.pop(i)
            total += first.get((t, multiset((b.centre, *children)), b.centre, multiset(others)), float("inf"))
            for w in range(len(children)):
                siblings = list(children)
                u = siblings.pop(w)
                total += second.get((u, t, multiset((b.centre, *siblings))), float("inf"))
        scored.append(Block(b.centre, b.slots, b.distance, total))
    scored.sort(key=lambda b: (b.score, b.distance))
    return [b for b in scored if b.score < float("inf")], scored
