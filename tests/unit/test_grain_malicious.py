"""GRAIN behind a malicious server: the secure aggregate of a ``separated_clients`` round is read
member by member, each as an honest one-molecule gradient of the narrow model."""

from attacks.base import AttackContext, Budget
from attacks.grain.attack import GRAIN
from tests.unit.grain_cases import dense_adj
from tests.unit.test_separated_clients import GRAIN_GCN, _aggregate

WIDE = dict(GRAIN_GCN, hidden=120, readout_hidden=[120, 32])  # 40 channels per member


def test_every_member_of_the_aggregate_is_rebuilt_exactly():
    graphs, update, knowledge = _aggregate(WIDE)
    recs = GRAIN().reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(120)))
    assert len(recs) == len(graphs)
    for rec, graph in zip(recs, graphs):  # in member order
        assert rec.info["exact"] == 1 and rec.info["crafted"] == "separated_clients"
        assert rec.num_nodes == graph.num_nodes
        assert sorted(dense_adj(graph).sum(0).tolist()) == sorted(rec.adj.sum(0).tolist())


def test_paper_mode_applies_to_the_crafted_aggregate_and_other_attacks_say_they_do_not_read_it():
    from attacks.dlg import DLG

    _, update, knowledge = _aggregate(WIDE)
    assert GRAIN().not_applicable(update, knowledge) is None  # each member is one graph's gradient
    reason = DLG().not_applicable(update, knowledge)
    assert "crafted this round's weights (separated_clients" in reason and "honest updates only" in reason


def test_a_member_that_fails_leaves_the_others(monkeypatch):
    from attacks.base import AttackFailed

    graphs, update, knowledge = _aggregate(WIDE)
    real = GRAIN.reconstruct
    calls = []

    def failing_first(self, member, narrow, ctx):
        calls.append(member.client_key)
        if member.crafted is None and member.client_key == 0:
            raise AttackFailed("no 1-hop block passed the layer-2 span check")
        return real(self, member, narrow, ctx)

    monkeypatch.setattr(GRAIN, "reconstruct", failing_first)
    recs = GRAIN().reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(120)))
    assert len(recs) == len(graphs) - 1
    assert all(r.info["members_failed"] == 1 and "client 0: no 1-hop block" in r.info["member_failures"]
               for r in recs)
