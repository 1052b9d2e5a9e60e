import copy

import pytest
import torch

from attacks.grain.blocks import Block, concat_one_hop, is_complete, one_hop_blocks, structure_filter, two_hop_blocks
from attacks.grain.embed import StarLayer
from attacks.grain.nodes import propose_nodes
from attacks.grain.spancheck import RowSpace
from tests.unit.grain_cases import molecule, neighbours, observed, victim

NEVER = lambda: False  # noqa: E731


def true_blocks(smiles: str, kind: str = "gcn"):
    """T0, T1*, T2* of the attack, and the molecule's own 1- and 2-hop blocks in T0 types."""
    update, knowledge = observed(smiles, kind)
    g, schema = molecule(smiles)
    grad = update.gradient
    nodes = propose_nodes(schema, grad["convs.0.lin.weight"], tol=1e-7, tau=1e-3,
                          group_size=10_000, abort_size=2_000_000)
    deg = schema.degrees(nodes.x.float())
    index = {tuple(r): i for i, r in enumerate(nodes.categories.tolist())}
    types = [index[tuple(r)] for r in schema.decode(g.x).tolist()]
    model = copy.deepcopy(victim(kind)).double()
    layer1 = StarLayer(model, 0, nodes.x)
    t1 = one_hop_blocks(layer1, deg, RowSpace(grad["convs.1.lin.weight"], 1e-7), tau=1e-2,
                        max_combinations=1e8, expired=NEVER)
    t2, _, _ = two_hop_blocks(model, layer1, t1, deg, nodes.x, RowSpace(grad["classifier.0.weight"], 1e-8),
                              tau=1e-2, max_candidates=10 ** 6, expired=NEVER)
    order = lambda ts: tuple(sorted(ts, key=lambda t: (-int(deg[t]), t)))  # noqa: E731
    nbrs = neighbours(g)
    ones = {(types[v], order(types[u] for u in nbrs[v])) for v in range(g.num_nodes)}
    twos = set()
    for v in range(g.num_nodes):
        slots = [(types[u], order(types[w] for w in nbrs[u] if w != v) if deg[types[u]] > 1 else ())
                 for u in nbrs[v]]
        twos.add((types[v], tuple(sorted(slots, key=lambda s: (-int(deg[s[0]]), s[0], s[1])))))
    return deg, t1, t2, ones, twos


@pytest.mark.parametrize("kind", ["gcn", "gat"])
@pytest.mark.parametrize("smiles", ["CC(=O)Oc1ccccc1C(=O)O", "CC(C)Cc1ccc(cc1)C(C)C(=O)O", "C1CCNCC1"])
def test_every_true_block_passes_its_span_check(kind, smiles):
    deg, t1, t2, ones, twos = true_blocks(smiles, kind)
    found_ones = {(int(t1.centre[i]), t1.neighbours(i)) for i in range(len(t1))}
    assert ones <= found_ones
    assert len(found_ones) <= max(10, t1.candidates // 10)  # the check filters
    found_twos = {(b.centre, b.slots) for b in t2}
    assert twos <= found_twos
    passing, everything = structure_filter(t2, deg)
    assert twos <= {(b.centre, b.slots) for b in passing}  # true blocks cover each other
    assert len(everything) == len(t2) and all(a.score <= b.score for a, b in zip(passing, passing[1:]))


def test_complete_block_is_the_whole_graph():
    deg = torch.tensor([2, 1])
    assert is_complete(Block(0, ((0, (1,)), (1, ()))), deg)
    assert not is_complete(Block(0, ((0, (0,)), (1, ()))), deg)


def test_structure_filter_drops_a_block_nothing_covers():
    """Butane as leaf (0) - link (1) - link - leaf: its two blocks cover each other; a block whose
    link neighbour would need a (link; link, link) block nowhere in the set is dropped."""
    deg = torch.tensor([1, 2])
    leaf = Block(0, ((1, (1,)),), 0.1)
    inner = Block(1, ((1, (0,)), (0, ())), 0.2)
    orphan = Block(1, ((1, (1,)), (0, ())), 0.05)
    passing, everything = structure_filter([leaf, inner, orphan], deg)
    assert {(b.centre, b.slots) for b in passing} == {(leaf.centre, leaf.slots), (inner.centre, inner.slots)}
    assert everything[-1].slots == orphan.slots and everything[-1].score == float("inf")
    scores = {b.slots: b.score for b in passing}
    assert scores[inner.slots] == pytest.approx(0.2 + 0.1 + 0.1)  # itself, then the leaf block twice


def batch_of_three():
    """Three molecules in one FedSGD gradient: the graphs, schema, T0, its degrees, layer 1 over
    T0 and layer 2's span."""
    from clients.training import mean_gradient

    smiles = ["CC(=O)Oc1ccccc1C(=O)O", "CCN(CC)CC", "C1CCNCC1"]
    graphs = [molecule(s)[0] for s in smiles]
    schema = molecule(smiles[0])[1]
    grads, _ = mean_gradient(victim("gcn"), graphs, "bce")
    grads = {k: v.double() for k, v in grads.items()}
    nodes = propose_nodes(schema, grads["convs.0.lin.weight"], tol=1e-7, tau=1e-3, group_size=10_000,
                          abort_size=2_000_000)
    deg = schema.degrees(nodes.x.float())
    layer1 = StarLayer(copy.deepcopy(victim("gcn")).double(), 0, nodes.x)
    return graphs, schema, nodes, deg, layer1, RowSpace(grads["convs.1.lin.weight"], 1e-7)


def test_a_batch_finds_its_high_degree_blocks_among_witnessed_neighbours():
    """Three molecules in one gradient: T0 holds types of every degree that no molecule has. The
    witnessed enumeration finds the full one's blocks of degree <= 2, and of its blocks of higher
    degree those whose neighbours are all witnessed, every true block among them, checking a
    fraction of the candidates."""
    from attacks.grain.blocks import witnessed_one_hop_blocks

    graphs, schema, nodes, deg, layer1, space = batch_of_three()
    index = {tuple(r): i for i, r in enumerate(nodes.categories.tolist())}
    full = one_hop_blocks(layer1, deg, space, tau=1e-2, max_combinations=float("inf"), expired=NEVER)
    witnessed = witnessed_one_hop_blocks(layer1, deg, space, tau=1e-2, max_combinations=1e8, expired=NEVER)
    as_set = lambda t1: {(int(t1.centre[i]), t1.neighbours(i)) for i in range(len(t1))}  # noqa: E731
    low = lambda blocks: {b for b in blocks if int(deg[b[0]]) <= 2}  # noqa: E731
    assert low(as_set(witnessed)) == low(as_set(full)) and as_set(witnessed) < as_set(full)
    assert witnessed.candidates < full.candidates / 3
    order = lambda ts: tuple(sorted(ts, key=lambda t: (-int(deg[t]), t)))  # noqa: E731
    for g in graphs:
        types = [index[tuple(r)] for r in schema.decode(g.x).tolist()]
        nbrs = neighbours(g)
        assert {(types[v], order(types[u] for u in nbrs[v])) for v in range(g.num_nodes)} <= as_set(witnessed)
    true_types = {index[tuple(r)] for g in graphs for r in schema.decode(g.x).tolist()}
    assert len(nodes.x) > len(true_types)  # the union's span admits types no molecule has


def test_restricted_enumerations_take_only_what_they_are_given():
    deg, t1, _, _, _ = true_blocks("CC(=O)Oc1ccccc1C(=O)O")
    update, knowledge = observed("CC(=O)Oc1ccccc1C(=O)O")
    g, schema = molecule("CC(=O)Oc1ccccc1C(=O)O")
    nodes = propose_nodes(schema, update.gradient["convs.0.lin.weight"], tol=1e-7, tau=1e-3,
                          group_size=10_000, abort_size=2_000_000)
    layer1 = StarLayer(copy.deepcopy(victim("gcn")).double(), 0, nodes.x)
    space = RowSpace(update.gradient["convs.1.lin.weight"], 1e-7)
    some = {int(t) for t in t1.nbrs[0][t1.mask[0]]}
    kw = dict(tau=1e-2, max_combinations=1e8, expired=NEVER)
    only = one_hop_blocks(layer1, deg, space, degrees={2}, neighbours=some, including={min(some)}, **kw)
    assert all(int(deg[c]) == 2 for c in only.centre)
    assert all(set(only.neighbours(i)) <= some and min(some) in only.neighbours(i) for i in range(len(only)))
    everything = {(int(t1.centre[i]), t1.neighbours(i)) for i in range(len(t1))}
    assert {(int(only.centre[i]), only.neighbours(i)) for i in range(len(only))} == {
        b for b in everything if int(deg[b[0]]) == 2 and set(b[1]) <= some and min(some) in b[1]}


def test_the_coordinate_screen_finds_the_same_blocks_as_the_exact_check():
    """Three molecules in one gradient (a T0 of many types): the enumeration screened on a few
    coordinates of layer 1's output returns the blocks that checking every candidate exactly does."""
    from attacks.grain.blocks import _coordinate_screen

    _, _, _, deg, layer1, space = batch_of_three()
    assert _coordinate_screen(layer1, space) is not None
    kw = dict(tau=1e-2, max_combinations=float("inf"), expired=NEVER, degrees={1, 2})
    screened = one_hop_blocks(layer1, deg, space, **kw)
    exact = one_hop_blocks(layer1, deg, space, screen=False, **kw)
    as_set = lambda t1: {(int(t1.centre[i]), t1.neighbours(i)) for i in range(len(t1))}  # noqa: E731
    assert len(screened) > 0 and as_set(screened) == as_set(exact)
    assert screened.candidates == exact.candidates


def test_joining_blocks_with_an_empty_set_keeps_the_blocks():
    """An enumeration that finds nothing returns placeholder widths (a frontier cell of noisy
    batches crashed joining one to the blocks found before)."""
    update, knowledge = observed("CCO")
    g, schema = molecule("CCO")
    grad = update.gradient
    nodes = propose_nodes(schema, grad["convs.0.lin.weight"], tol=1e-7, tau=1e-3, group_size=10_000,
                          abort_size=2_000_000)
    layer1 = StarLayer(copy.deepcopy(victim("gcn")).double(), 0, nodes.x)
    space = RowSpace(grad["convs.1.lin.weight"], 1e-7)
    kw = dict(tau=1e-2, max_combinations=1e8, expired=NEVER)
    found = one_hop_blocks(layer1, schema.degrees(nodes.x.float()), space, **kw)
    none = one_hop_blocks(layer1, schema.degrees(nodes.x.float()), space, degrees={99}, **kw)
    assert len(found) > 0 and len(none) == 0
    for joined in (concat_one_hop(found, none), concat_one_hop(none, found)):
        assert len(joined) == len(found) and torch.equal(joined.states, found.states)
        assert joined.candidates == found.candidates + none.candidates


def test_the_witnessed_order_finds_a_batchs_blocks_before_the_unwitnessed_multisets(monkeypatch):
    """Three molecules in one gradient: followed from the leaves, every true 1-hop block is found
    before the degree-2 multisets with no witnessed type are enumerated (what a time limit cuts
    first), and with no limit the blocks are the plain order's, in as many candidates."""
    import attacks.grain.blocks as blocks
    from attacks.grain.blocks import witnessed_one_hop_blocks

    graphs, schema, nodes, deg, layer1, space = batch_of_three()
    as_set = lambda t1: {(int(t1.centre[i]), t1.neighbours(i)) for i in range(len(t1))}  # noqa: E731
    kw = dict(tau=1e-2, max_combinations=1e8, expired=NEVER)
    plain = witnessed_one_hop_blocks(layer1, deg, space, witnessed_first=False, **kw)
    calls = []
    enumerate_ = blocks.one_hop_parts

    def recorded(*args, **kwargs):  # each enumeration's arguments and the blocks it found
        found = []
        calls.append((kwargs, found))
        for part in enumerate_(*args, **kwargs):
            found.append(part)
            yield part

    monkeypatch.setattr(blocks, "one_hop_parts", recorded)
    first = witnessed_one_hop_blocks(layer1, deg, space, **kw)
    calls = [(k, concat_one_hop(*found)) for k, found in calls]
    assert as_set(first) == as_set(plain) and first.candidates == plain.candidates
    last_unwitnessed = max(i for i, (k, _) in enumerate(calls) if k["degrees"] == {2} and k.get("including") is None)
    before = set().union(*(as_set(found) for _, found in calls[:last_unwitnessed]))
    index = {tuple(r): i for i, r in enumerate(nodes.categories.tolist())}
    order = lambda ts: tuple(sorted(ts, key=lambda t: (-int(deg[t]), t)))  # noqa: E731
    for g in graphs:
        types = [index[tuple(r)] for r in schema.decode(g.x).tolist()]
        nbrs = neighbours(g)
        assert {(types[v], order(types[u] for u in nbrs[v])) for v in range(g.num_nodes)} <= before
    assert calls[last_unwitnessed][1].candidates > first.candidates / 4  # a share of the work, deferred


def test_a_paused_enumeration_resumes_where_it_stopped():
    """A batch's witnessed enumeration cut by a time limit every few chunks and resumed each time
    finds the blocks of one uninterrupted run, once each, after as many candidates."""
    from attacks.grain.blocks import witnessed_enumeration, witnessed_one_hop_blocks

    _, _, _, deg, layer1, space = batch_of_three()
    kw = dict(tau=1e-2, max_combinations=1e8)
    whole = witnessed_one_hop_blocks(layer1, deg, space, expired=NEVER, **kw)
    enumeration, takes, pieces = witnessed_enumeration(layer1, deg, space, **kw), 0, []
    while not enumeration.exhausted:
        ticks = iter(range(3))  # three chunks, then the limit
        pieces.append(enumeration.take(lambda: next(ticks, None) is None))
        takes += 1
    resumed = concat_one_hop(*pieces)
    as_list = lambda t1: sorted((int(t1.centre[i]), t1.neighbours(i)) for i in range(len(t1)))  # noqa: E731
    assert takes > 10 and as_list(resumed) == as_list(whole) and len(whole) > 0
    assert resumed.candidates == whole.candidates == enumeration.candidates
    assert len(enumeration.take(NEVER)) == 0  # nothing left
