from attacks.grain import GRAIN
from attacks.grain.blocks import Block
from attacks.grain.build import (FixedNeighbourhoods, PartialGraph, SearchBudget, glue, has_short_ring, may_be_a_cover,
                                 merge, ring_closures, search)

# Types: 0 = aromatic CH (degree 2), 1 = methyl (degree 1), 2 = aromatic C bearing it (degree 3).
DEG = [2, 1, 3]
CH_BLOCK = Block(0, ((0, (0,)), (0, (0,))))  # an aromatic CH between two CH
TOLUENE_C = Block(2, ((0, (0,)), (0, (0,)), (1, ())))
CH_NEXT_TO_C = Block(0, ((2, (0, 1)), (0, (0,))))
NEAR = Block(0, ((0, (2,)), (0, (0,))))  # a CH whose neighbour CH touches the substituted C


def budget(**overrides) -> SearchBudget:
    """The attack's own limits (its parameters' defaults) for a search of depth 7 and 20 nodes."""
    return SearchBudget.of(GRAIN.Params(**overrides), max_depth=7, max_nodes=20)


def ring(graph: PartialGraph) -> bool:
    return sorted(len(a) for a in graph.adj) == [1] + [2] * 5 + [3] if graph.num_nodes == 7 else False


def test_a_block_is_a_tree_and_its_second_hop_nodes_dangle():
    g = PartialGraph.from_block(TOLUENE_C)
    assert g.num_nodes == 6 and g.types == (2, 0, 0, 0, 0, 1)
    assert g.dangling(DEG) == [2, 4]  # the two second-hop CH need one more neighbour
    assert not g.over_degree(DEG) and len(g.edges()) == 5


def test_glue_matches_known_neighbours_and_adds_the_rest():
    g = PartialGraph.from_block(TOLUENE_C)
    out = glue(g, 2, NEAR, DEG)  # node 2: CH whose known neighbour (node 1) touches the C
    assert len(out) == 1
    glued, added = out[0]
    assert glued.num_nodes == 8 and added == [6, 7]  # the unmatched CH and its CH child
    assert glued.adj[2] == {1, 6} and glued.adj[6] == {2, 7}
    assert glue(g, 2, CH_BLOCK, DEG) == []  # node 1's other neighbour is the C, not a CH
    assert glue(g, 2, TOLUENE_C, DEG) == []  # wrong centre type


def test_ring_closure_merges_at_distance_and_rejects_small_rings():
    g = PartialGraph.from_block(TOLUENE_C)
    glued, added = glue(g, 2, NEAR, DEG)[0]
    variants = ring_closures(glued, added, DEG, min_ring=5, first=False, deadline=float("inf"))
    assert variants[-1] == glued  # the unmerged graph comes last
    closed = [v for v in variants if ring(v)]
    assert len(closed) == 1 and closed[0].dangling(DEG) == []  # toluene
    assert all(not has_short_ring(v.adj, 5) for v in variants)
    square = merge(PartialGraph((0,) * 5, tuple(frozenset(a) for a in ({1}, {0, 2}, {1, 3}, {2, 4}, {3}))), [(0, 4)])
    assert has_short_ring(square.adj, 5) and not has_short_ring(square.adj, 4)


def test_ring_closure_stops_when_the_attack_budget_is_spent():
    g = PartialGraph.from_block(TOLUENE_C)
    glued, added = glue(g, 2, NEAR, DEG)[0]
    calls = []

    def expired() -> bool:
        calls.append(1)
        return True

    assert ring_closures(glued, added, DEG, min_ring=5, first=False, deadline=float("inf"),
                         expired=expired) == [glued]  # no merge set enumerated: the unmerged graph only
    assert len(calls) == 1  # the recursion unwound at its first step


def test_search_finds_the_graph_the_scorer_accepts():
    seen = []

    def score(g: PartialGraph) -> float:
        seen.append(g.num_nodes)
        return 0.0 if ring(g) else 1.0

    result = search([[TOLUENE_C, NEAR, CH_NEXT_TO_C, CH_BLOCK]], DEG, score, budget=budget(), exact_tol=1e-6,
                    min_ring=5, expired=lambda: False)
    assert result.exact and ring(result.graph) and result.evaluations == len(seen)


def test_search_stops_when_the_budget_expires():
    result = search([[TOLUENE_C, NEAR, CH_BLOCK]], DEG, lambda g: 1.0,
                    budget=budget(), exact_tol=1e-6, min_ring=5,
                    expired=lambda: True)
    assert result.timed_out and not result.exact


def test_covers_are_recognised():
    path = PartialGraph((0, 0, 0), (frozenset({1}), frozenset({0, 2}), frozenset({1})))
    assert not may_be_a_cover(path)  # two ends and one middle
    hexagon = PartialGraph((0,) * 6, tuple(frozenset({(i - 1) % 6, (i + 1) % 6}) for i in range(6)))
    assert may_be_a_cover(hexagon)
    toluene = merge(glue(PartialGraph.from_block(TOLUENE_C), 2, NEAR, DEG)[0][0], [(4, 7)])
    assert ring(toluene) and not may_be_a_cover(toluene)


def test_subtrees_below_one_evaluation_are_not_walked():
    # With one evaluation per seed every seed's children get a share below one: the paper's
    # search can score nothing below the seeds, so it does not walk there; score_complete does.
    blocks = [[TOLUENE_C, NEAR, CH_NEXT_TO_C, CH_BLOCK]]
    kw = dict(exact_tol=1e-6, min_ring=5, expired=lambda: False)
    paper = search(blocks, DEG, lambda g: 1.0, budget=budget(grad_evals=1), **kw)
    walked = search(blocks, DEG, lambda g: 1.0,
                    budget=budget(grad_evals=1, score_complete=True), **kw)
    assert paper.steps <= 3 * 6 and paper.evaluations <= paper.steps  # the seeds only
    assert walked.steps > 10 * paper.steps and walked.evaluations > 10 * paper.evaluations


def test_fixed_neighbourhoods_admit_what_the_blocks_describe_and_nothing_else():
    methyl = Block(1, ((2, (0, 0)),))
    blocks = [TOLUENE_C, NEAR, CH_NEXT_TO_C, CH_BLOCK, methyl]
    ring_adj = [{1, 5, 6}, {0, 2}, {1, 3}, {2, 4}, {3, 5}, {4, 0}, {0}]
    toluene = PartialGraph((2, 0, 0, 0, 0, 0, 1), tuple(frozenset(a) for a in ring_adj))
    assert FixedNeighbourhoods(blocks)(toluene)
    # the para CH's neighbourhood (two CH whose other neighbours are CH) is not among the blocks
    assert not FixedNeighbourhoods([b for b in blocks if b != CH_BLOCK])(toluene)
    # nothing is fixed yet, but no block centred at a CH has two substituted-C neighbours: a dead end
    dead_end = PartialGraph.from_block(Block(0, ((2, ()), (2, ()))))
    assert dead_end.dangling(DEG) and not FixedNeighbourhoods(blocks)(dead_end)
    assert FixedNeighbourhoods(blocks)(PartialGraph.from_block(TOLUENE_C))
