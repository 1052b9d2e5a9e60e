import pytest
import torch

from attacks.base import AttackFailed
from attacks.grain import GRAIN
from attacks.grain.blocks import canonical_order, one_hop_blocks, two_hop_blocks
from attacks.grain.embed import StarLayer
from attacks.grain.noise import NoiseEstimate
from attacks.grain.nodes import propose_nodes
from attacks.grain.ranking import nearest_one_hop, unexplained_centres
from attacks.grain.spancheck import RowSpace
from fedgraph_sim.errors import ConfigError
from tests.unit.grain_cases import molecule, observed
from tests.unit.test_grain_noise import READ, attack, defended

# At 3e-6 per entry layer 2 keeps 6 directions for this molecule's 7 distinct 1-hop blocks: the gap
# has closed there, and no 1-hop block passes the noise-aware threshold.
SULFONAMIDE = "Cc1ccc(cc1)S(=O)(=O)N"


def closed_gap():
    update, knowledge = defended(SULFONAMIDE, 3e-6)
    g, schema = molecule(SULFONAMIDE)
    sigma = NoiseEstimate.of({k: update.gradient[k] for k in READ}).sigma
    model = knowledge.build_model(update.global_weights, dtype=torch.float64)
    nodes = propose_nodes(schema, update.gradient[READ[0]], tol=1e-7, tau=1e-3, group_size=10_000,
                          abort_size=2_000_000, noise=sigma)
    types = [int(torch.nonzero((nodes.x - row).abs().sum(1) < 1e-9)[0]) for row in g.x.to(torch.float64)]
    deg = schema.degrees(nodes.x.float())
    order = {t: k for k, t in enumerate(canonical_order(deg))}
    neighbours = {v: [] for v in range(g.num_nodes)}
    for a, b in g.edge_index.T.tolist():
        neighbours[a].append(b)
    truth = {(types[v], tuple(sorted((types[u] for u in neighbours[v]), key=order.get))) for v in neighbours}
    readout = (model, nodes.x, RowSpace(update.gradient[READ[2]], 1e-8, sigma))
    return StarLayer(model, 0, nodes.x), deg, RowSpace(update.gradient[READ[1]], 1e-7, sigma), truth, readout


def test_where_no_block_passes_the_true_blocks_of_low_degree_centres_rank_first():
    layer1, deg, space, truth, _ = closed_gap()
    passing = one_hop_blocks(layer1, deg, space, tau=1e-2, max_combinations=1e8, expired=lambda: False)
    assert len(passing) == 0
    centres = unexplained_centres(deg, passing)
    assert {c for c, _ in truth} <= set(centres)
    nearest = nearest_one_hop(layer1, deg, space, centres, 1, max_combinations=1e8, expired=lambda: False)
    first = {(int(c), nearest.neighbours(i)) for i, c in enumerate(nearest.centre)}
    low = {b for b in truth if int(deg[b[0]]) <= 2}
    assert low and low <= first  # the degree-1 and -2 centres' true blocks rank first
    assert nearest.candidates > len(nearest) and (nearest.distance > 1e-2).all()  # all above the threshold


def test_the_nearest_blocks_are_the_k_smallest_residuals_of_every_candidate():
    layer1, deg, space, _, _ = closed_gap()
    centre = next(t for t in range(deg.numel()) if int(deg[t]) == 2)
    top = nearest_one_hop(layer1, deg, space, [centre], 3, max_combinations=1e8, expired=lambda: False)
    every = one_hop_blocks(layer1, deg, space, tau=1e9, max_combinations=1e8, expired=lambda: False,
                           coordinates=False)
    of_centre = torch.sort(every.distance[every.centre == centre]).values
    assert torch.allclose(torch.sort(top.distance).values, of_centre[:3])


def test_two_hop_ranking_adds_at_most_k_blocks_per_centre_none_explains():
    layer1, deg, space, _, readout_case = closed_gap()
    one_hop = nearest_one_hop(layer1, deg, space, unexplained_centres(deg, one_hop_blocks(
        layer1, deg, space, tau=1e-2, max_combinations=1e8, expired=lambda: False)), 3,
        max_combinations=1e8, expired=lambda: False)
    model, x0, readout = readout_case
    kw = dict(tau=1e-2, max_candidates=2_000_000, expired=lambda: False)
    filtered, checked, _ = two_hop_blocks(model, layer1, one_hop, deg, x0, readout, **kw)
    ranked, _, _ = two_hop_blocks(model, layer1, one_hop, deg, x0, readout, nearest=2, **kw)
    explained = {b.centre for b in filtered}
    extra = [b for b in ranked if b not in filtered]
    assert set(filtered) <= set(ranked) and extra and checked > len(ranked)
    assert all(b.centre not in explained and b.distance >= 1e-2 for b in extra)
    assert max(sum(b.centre == c for b in extra) for c in {b.centre for b in extra}) <= 2
    assert ranked[:len(filtered)] == filtered  # ranked after every passing block


def test_ranking_lets_the_attack_go_on_where_filtering_stops():
    update, knowledge = defended(SULFONAMIDE, 3e-6)
    with pytest.raises(AttackFailed, match="no 1-hop block"):
        attack(update, knowledge, noise_aware=True)
    rec = attack(update, knowledge, noise_aware=True, rank_closed=3)
    assert rec.info["one_hop_ranked"] > 0 and rec.info["two_hop_kept"] > 0


def test_a_clean_gradient_is_read_as_without_ranking():
    update, knowledge = observed("c1ccncc1")
    plain, ranked = attack(update, knowledge, noise_aware=True), attack(update, knowledge, noise_aware=True,
                                                                        rank_closed=3)
    assert ranked.info["exact"] == plain.info["exact"] == 1 and "one_hop_ranked" not in ranked.info
    assert torch.equal(ranked.adj, plain.adj)


def test_ranking_needs_the_noise_aware_checks():
    with pytest.raises(ConfigError, match="rank_closed.*noise_aware"):
        GRAIN(rank_closed=3)
    with pytest.raises(ConfigError, match="rank_closed: must be a finite number >= 0"):
        GRAIN(rank_closed=-1, noise_aware=True)


def test_the_witnessed_ranking_brings_back_true_blocks_the_hidden_directions_drop():
    """Three molecules in one gradient, the two weakest directions of layer 2 hidden (as a FedAvg
    epoch's rounding hides them): 4 of the 16 true 1-hop blocks still pass, and each witnessed
    type's nearest failing candidate over witnessed neighbours brings back 2 more. Every ranked
    block is new, of witnessed types, at most k per centre, and the nearest of its centre's."""
    from attacks.grain.blocks import witnessed_one_hop_blocks
    from attacks.grain.ranking import nearest_witnessed
    from clients.training import mean_gradient
    from tests.unit.grain_cases import victim
    from tests.unit.test_grain_blocks import batch_of_three, neighbours

    graphs, schema, nodes, deg, layer1, space = batch_of_three()
    grad, _ = mean_gradient(victim("gcn"), graphs, "bce")
    hidden = RowSpace(grad["convs.1.lin.weight"], 1.0001 * float(space.singular_values[space.rank - 2]))
    assert hidden.rank == space.rank - 2
    index = {tuple(r): i for i, r in enumerate(nodes.categories.tolist())}
    order = lambda ts: tuple(sorted(ts, key=lambda t: (-int(deg[t]), t)))  # noqa: E731
    truth = set()
    for g in graphs:
        types = [index[tuple(r)] for r in schema.decode(g.x).tolist()]
        nbrs = neighbours(g)
        truth |= {(types[v], order(types[u] for u in nbrs[v])) for v in range(g.num_nodes)}
    as_set = lambda t1: {(int(t1.centre[i]), t1.neighbours(i)) for i in range(len(t1))}  # noqa: E731
    kw = dict(max_combinations=1e8, expired=lambda: False)
    passing = witnessed_one_hop_blocks(layer1, deg, hidden, tau=1e-2, **kw)
    assert len(truth) == 16 and len(as_set(passing) & truth) == 4
    ranked = nearest_witnessed(layer1, deg, hidden, passing, 1, **kw)
    assert len(as_set(ranked) & truth) == 2
    witnessed = set(passing.centre.tolist()) | set(passing.nbrs[passing.mask].tolist())
    assert not as_set(ranked) & as_set(passing)
    assert all(c in witnessed and set(n) <= witnessed for c, n in as_set(ranked))
    assert len(set(ranked.centre.tolist())) == len(ranked)  # k = 1 per centre
    for i in range(len(ranked)):  # nothing of its centre, witnessed and failing, lies nearer
        c = int(ranked.centre[i])
        every = one_hop_blocks(layer1, deg, hidden, tau=1e9, degrees={int(deg[c])}, neighbours=witnessed,
                               coordinates=False, **kw)
        rest = [float(d) for j, d in enumerate(every.distance) if int(every.centre[j]) == c
                and (c, every.neighbours(j)) not in as_set(passing)]
        assert float(ranked.distance[i]) <= min(rest) + 1e-12


def test_the_witnessed_ranking_needs_batches():
    with pytest.raises(ConfigError, match="rank_witnessed.*batches"):
        GRAIN(rank_witnessed=10)
