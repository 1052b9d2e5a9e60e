import dataclasses

import pytest
import torch

from attacks.base import AttackContext, AttackFailed, Budget
from attacks.grain import GRAIN
from attacks.grain.batch import BatchAssembler, Peeling, canonical, unexplained_first
from attacks.grain.blocks import Block
from attacks.grain.build import PartialGraph
from attacks.grain.scorer import GradientScorer
from clients.training import mean_gradient
from fedgraph_sim.evaluation.batch import batch_assignment
from fedgraph_sim.metrics.gsm import gsm
from tests.unit.grain_cases import dense_adj, molecule, observed, victim


def batch_update(smiles: list[str], kind: str = "gcn"):
    """What the server sees when a client trains one FedSGD step on the batch ``smiles``."""
    graphs = [molecule(s)[0] for s in smiles]
    grads, _ = mean_gradient(victim(kind), graphs, "bce")
    update, knowledge = observed(smiles[0], kind)
    update = dataclasses.replace(update, returned={k: v.numpy() for k, v in grads.items()},
                                 num_examples=len(graphs), batch_size=len(graphs))
    return update, knowledge, graphs


def as_partial(g, offset: int) -> PartialGraph:
    """Graph ``g`` whose node ``v`` has the type ``offset + v`` (its row among the scorer's)."""
    adj = [set() for _ in range(g.num_nodes)]
    for u, w in g.edge_index.T.tolist():
        adj[u].add(w)
    return PartialGraph(tuple(range(offset, offset + g.num_nodes)), tuple(frozenset(a) for a in adj))


def attack(smiles: list[str], **params):
    update, knowledge, graphs = batch_update(smiles)
    recs = GRAIN(batches=True, **params).reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(60)))
    schema = knowledge.schema
    order = batch_assignment(recs, graphs, schema)
    scores = [gsm(recs[j].x, recs[j].adj, g.x, dense_adj(g), schema) for j, g in zip(order, graphs)]
    return recs, [recs[j] for j in order], scores, graphs


@pytest.mark.parametrize("smiles", [["CCO", "Cc1ccccc1"], ["CCO", "OCC(O)CO", "Cc1ccccc1", "C1CCNCC1"]])
def test_batches_of_small_molecules_are_recovered_exactly(smiles):
    recs, assigned, scores, graphs = attack(smiles)
    assert len(recs) == len(smiles)
    assert all(r.info["exact"] == 1 and r.info["gradient_distance"] < 1e-6 for r in recs)
    assert [s["full_iso"] for s in scores] == [1.0] * len(smiles)
    assert [r.label for r in assigned] == [int(g.y) for g in graphs]


def test_a_batch_of_two_equal_molecules_is_one_graph_twice():
    recs, _, scores, _ = attack(["OCC(O)CO", "OCC(O)CO"])
    assert len(recs) == 2 and recs[0].info["exact"] == 1
    assert [s["full_iso"] for s in scores] == [1.0, 1.0]


def test_batches_are_not_applicable_in_paper_mode_and_at_the_width():
    update, knowledge, _ = batch_update(["CCO", "c1ccncc1"])
    assert "needs one graph; the update was computed on 2" in GRAIN().not_applicable(update, knowledge)
    assert GRAIN(batches=True).not_applicable(update, knowledge) is None
    # layers 8 wide, and 13 + 11 atoms of many kinds: the layer-1 gradient has full rank
    narrow = dataclasses.replace(knowledge, model=dict(knowledge.model, hidden=8, readout_hidden=[8, 8]))
    torch.manual_seed(0)
    model = narrow.build_model()
    graphs = [molecule(s)[0] for s in ("CC(=O)Oc1ccccc1C(=O)O", "Cc1ccc(cc1)S(=O)(=O)N")]
    grads, _ = mean_gradient(model, graphs, "bce")
    wide = dataclasses.replace(update, global_weights={k: v.detach().numpy() for k, v in model.state_dict().items()},
                               returned={k: v.numpy() for k, v in grads.items()})
    reason = GRAIN(batches=True).not_applicable(wide, narrow)
    assert reason == ("the batch's layer-1 gradient has full rank 8: its 2 graphs may hold as many nodes "
                      "as the layer is wide")


def test_the_fit_picks_the_batch_among_distractors():
    """Candidates: the two members and two graphs outside the batch; the fit puts weight one on
    each member, with its label, and the replayed batch is exact."""
    update, knowledge, graphs = batch_update(["CCO", "OCC(O)CO"])
    rows = torch.cat([g.x for g in graphs] + [molecule("C1CCNCC1")[0].x])
    model = knowledge.build_model(update.global_weights, dtype=torch.float64)
    scorer = GradientScorer(model, update.gradient, rows, "bce", 2)
    ethanol, glycerol = as_partial(graphs[0], 0), as_partial(graphs[1], 3)
    piperidine = as_partial(molecule("C1CCNCC1")[0], 9)
    fit = BatchAssembler(scorer, 2, exact_tol=1e-6)
    for g in (piperidine, ethanol, PartialGraph(ethanol.types[:2], (frozenset({1}), frozenset({0})))):
        fit.add(g)
    assert not fit.exact
    fit.add(glycerol)
    distance, members = fit.best
    assert fit.exact and distance < 1e-6
    assert sorted((g.num_nodes, y) for g, y in members) == sorted((g.num_nodes, int(g.y)) for g in graphs)
    assert len(fit.graphs) == 4 and fit.add(ethanol) == distance  # seen: nothing recomputed


def test_canonical_keys_ignore_node_order_and_tell_molecules_apart():
    path = PartialGraph((0, 1, 2), (frozenset({1}), frozenset({0, 2}), frozenset({1})))
    relabelled = PartialGraph((2, 1, 0), (frozenset({1}), frozenset({0, 2}), frozenset({1})))
    other = PartialGraph((1, 0, 2), (frozenset({1}), frozenset({0, 2}), frozenset({1})))
    assert canonical(path) == canonical(relabelled) != canonical(other)


def test_the_next_search_starts_where_the_batch_is_unexplained():
    built = PartialGraph((0, 1, 2), (frozenset({1}), frozenset({0, 2}), frozenset({1})))
    explained = Block(1, ((0, ()), (2, ())))
    same_centre = Block(1, ((0, ()), (0, ())))
    new_type = Block(5, ((1, (0,)),))
    assert unexplained_first([explained, same_centre, new_type], [built]) == [new_type, same_centre, explained]


def test_the_secure_aggregate_of_two_clients_is_a_batch_of_two():
    """Behind secure aggregation the server sees the example-weighted mean of the clients' FedSGD
    gradients: for GRAIN, one batch of every client's graphs."""
    from server.strategy import secure_aggregate

    smiles = ["CCO", "Cc1ccccc1"]
    updates = [dataclasses.replace(observed(s)[0], client_key=k) for k, s in enumerate(smiles)]
    aggregate = secure_aggregate(updates)
    assert aggregate.observed == "secure_aggregate" and aggregate.num_examples == 2
    knowledge = observed(smiles[0])[1]
    recs = GRAIN(batches=True).reconstruct(aggregate, knowledge, AttackContext(seed=0, budget=Budget(60)))
    graphs = [molecule(s)[0] for s in smiles]
    order = batch_assignment(recs, graphs, knowledge.schema)
    assert all(r.info["exact"] == 1 for r in recs)
    assert [gsm(recs[j].x, recs[j].adj, g.x, dense_adj(g), knowledge.schema)["full_iso"]
            for j, g in zip(order, graphs)] == [1.0, 1.0]


def test_a_member_is_recognised_by_the_rank_it_takes_out_and_a_stranger_is_not():
    """Removing a member's gradient, with its label, lowers the readout gradient's rank; a graph
    outside the batch, or a member already removed, is not recognised; once every member is
    removed nothing of the gradient is left."""
    smiles = ["CCO", "OCC(O)CO", "Cc1ccccc1"]
    update, knowledge, graphs = batch_update(smiles)
    stranger = molecule("C1CCNCC1")[0]
    rows = torch.cat([g.x for g in graphs] + [stranger.x])
    model = knowledge.build_model(update.global_weights, dtype=torch.float64)
    scorer = GradientScorer(model, update.gradient, rows, "bce", 2)
    names = ["convs.0.lin.weight", "convs.1.lin.weight", f"{model.first_readout_name}.weight"]
    peeling = Peeling(scorer, 3, list(zip(names, (1e-7, 1e-7, 1e-8))))
    before = list(peeling.ranks)

    offsets = [0, 3, 9, 16]
    ethanol, glycerol, toluene, piperidine = [as_partial(g, o) for g, o in zip(graphs + [stranger], offsets)]
    assert peeling.test(piperidine) is None
    label, _ = peeling.test(glycerol)
    assert label == int(graphs[1].y) and peeling.left == 2 and peeling.ranks[-1] < before[-1]
    assert peeling.test(glycerol) is None  # it was in the batch once
    assert peeling.test(ethanol) is not None and peeling.test(toluene) is not None
    assert peeling.left == 0 and [y for _, y in peeling.members] == [int(graphs[i].y) for i in (1, 0, 2)]
    total = update.gradient[names[2]].abs().sum().item() * 3
    assert peeling.gradient(names[2]).abs().sum().item() < 1e-6 * total


def test_a_batch_read_short_of_its_size_is_filled_so_every_graph_is_scored():
    """One member recognised and the rest not fitted: the reading still holds ``B`` graphs, the
    candidate the fit weighs most filling the gap."""
    update, knowledge, graphs = batch_update(["CCO", "OCC(O)CO"])
    stranger = molecule("C1CCNCC1")[0]
    rows = torch.cat([g.x for g in graphs] + [stranger.x])
    model = knowledge.build_model(update.global_weights, dtype=torch.float64)
    scorer = GradientScorer(model, update.gradient, rows, "bce", 2)
    ethanol, piperidine = as_partial(graphs[0], 0), as_partial(stranger, 9)
    fit = BatchAssembler(scorer, 2, exact_tol=1e-6)
    y = int(graphs[0].y)
    fit.fix(ethanol, y, scorer.label_gradients(ethanol.types, ethanol.edges())[y])
    assert len(fit.best[1]) == 1 and not fit.exact
    fit.add(piperidine)
    assert len(fit.best[1]) == 1  # glycerol is not among the candidates: the fit weighs piperidine below 0.5
    distance, members = fit.reading()
    assert [g.num_nodes for g, _ in members] == [3, 6] and distance == fit.best[0]


def test_a_cut_enumeration_resumes_when_the_search_ends_early(monkeypatch):
    """A batch whose 1-hop enumeration the time limit cuts after its first chunks (here: by a
    count of chunks, not the clock) has too few blocks to build it and fails; with [ext]
    resume_one_hop the enumeration goes on once the search ends with time left, and the batch is
    rebuilt exactly."""
    import attacks.grain.attack as grain_attack
    from attacks.grain.blocks import OneHopEnumeration

    made = grain_attack.witnessed_enumeration

    def cut_first(*args, **kwargs) -> OneHopEnumeration:
        enumeration = made(*args, **kwargs)
        take = enumeration.take
        ticks = iter(range(2))
        enumeration.take = lambda expired: (take(lambda: next(ticks, None) is None)
                                            if enumeration.candidates == 0 else take(expired))
        return enumeration

    monkeypatch.setattr(grain_attack, "witnessed_enumeration", cut_first)
    smiles = ["CCO", "Cc1ccccc1"]
    with pytest.raises(AttackFailed, match="no 2-hop block"):  # the blocks of degree 1 alone
        attack(smiles)
    recs, _, scores, _ = attack(smiles, resume_one_hop=True)
    assert recs[0].info["one_hop_kept"] > 0 and recs[0].info["one_hop_resumed"] > 0 and recs[0].info["exact"] == 1
    assert [s["full_iso"] for s in scores] == [1.0, 1.0]


def test_resuming_the_enumeration_needs_batches():
    from fedgraph_sim.errors import ConfigError

    with pytest.raises(ConfigError, match="resume_one_hop.*batches"):
        GRAIN(resume_one_hop=True)
