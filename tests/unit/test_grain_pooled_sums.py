"""The counts and sums of a sum-pooled GIN's last layer, read from one FedSGD gradient, and the bound
they put on partial graphs ([ext] pooled_sums)."""

import dataclasses

import numpy as np
import pytest
import torch

from attacks.grain.build import PartialGraph
from attacks.grain.pooled_sums import pooled_sums
from tests.unit.grain_cases import molecule, neighbours, observed

ASPIRIN = "CC(=O)Oc1ccccc1C(=O)O"


def read(smiles: str = ASPIRIN, kind: str = "gin_sum"):
    update, knowledge = observed(smiles, kind)
    model = knowledge.build_model(update.global_weights, dtype=torch.float64)
    g, _ = molecule(smiles)
    rows = torch.unique(g.x.to(torch.float64), dim=0)
    return pooled_sums(model, update.gradient, rows), g, rows


def as_partial(g, rows) -> tuple[PartialGraph, list[int]]:
    types = [int((rows == g.x[v].to(torch.float64)).all(1).nonzero()[0]) for v in range(g.num_nodes)]
    adj = neighbours(g)
    return PartialGraph(tuple(types), tuple(frozenset(a) for a in adj)), [len(a) for a in adj]


def degrees_of(graph, degrees, rows) -> list[int]:
    deg = [0] * rows.size(0)
    for t, d in zip(graph.types, degrees):
        deg[t] = d
    return deg


@pytest.mark.parametrize("kind", ["gin_sum", "gcn"])
def test_the_counts_are_the_nodes_that_switch_each_unit_on(kind):
    """Hand-checkable: the truth's own masks, counted per unit, are what the gradient reads (GRAIN's
    victim pools its per-node logits by their mean: the node count is read too)."""
    (bound, reason), g, rows = read(kind=kind)
    assert reason == "" and bound is not None
    graph, degrees = as_partial(g, rows)
    a, mask = bound.forward(list(graph.types), graph.edges(), degrees_of(graph, degrees, rows))
    np.testing.assert_array_equal(mask[:, bound.units].sum(0), bound.counts)
    np.testing.assert_allclose(mask[:, bound.units].T.astype(float) @ a, bound.sums, atol=float(bound.tol.max()))


@pytest.mark.parametrize("kind", ["gin_sum", "gcn"])
def test_the_truth_and_its_parts_are_admitted_a_heavier_graph_is_not(kind):
    (bound, _), g, rows = read(kind=kind)
    graph, degrees = as_partial(g, rows)
    deg = degrees_of(graph, degrees, rows)
    assert len(bound.final_nodes(graph, deg)) == g.num_nodes and bound.admits(graph, deg)
    # the same molecule twice over: every node final, every count doubled
    n = graph.num_nodes
    twice = PartialGraph(graph.types * 2, graph.adj + tuple(frozenset(w + n for w in a) for a in graph.adj))
    assert not bound.admits(twice, deg)


def test_a_node_with_an_incomplete_neighbourhood_is_not_final():
    (bound, _), g, rows = read()
    graph, degrees = as_partial(g, rows)
    deg = degrees_of(graph, degrees, rows)
    v = next(v for v, d in enumerate(degrees) if d >= 2)  # cut one of v's edges: v and all within 2 hops of it
    w = min(graph.adj[v])
    adj = list(graph.adj)
    adj[v], adj[w] = adj[v] - {w}, adj[w] - {v}
    cut = PartialGraph(graph.types, tuple(adj))
    final = set(bound.final_nodes(cut, deg))
    assert v not in final and w not in final and len(final) < g.num_nodes


@pytest.mark.parametrize("kind, reason", [
    ("gcn_mean", "needs a sum-pooled GIN or a GCN with a per-node readout"),
    ("sage_mean", "needs a sum-pooled GIN or a GCN with a per-node readout"),
    ("gat", "needs a sum-pooled GIN or a GCN with a per-node readout"),
])
def test_other_models_say_why_not(kind, reason):
    (bound, why), _, _ = read(kind=kind)
    assert bound is None and reason in why


def test_an_update_that_is_not_one_graphs_gradient_is_refused():
    """A mean over two graphs' gradients mixes their output gradients: the counts are not integers."""
    update, knowledge = observed(ASPIRIN, "gin_sum")
    other, _ = observed("c1ccncc1", "gin_sum")
    mixed = dataclasses.replace(update, returned={k: (v + other.returned[k]) / 2 for k, v in update.returned.items()})
    model = knowledge.build_model(update.global_weights, dtype=torch.float64)
    bound, why = pooled_sums(model, mixed.gradient, torch.eye(3, 140, dtype=torch.float64))
    assert bound is None and "not integers" in why


@pytest.mark.parametrize("kind", ["gin_sum", "gcn"])
def test_the_bound_finds_aspirin_with_grain_ext(kind):
    from attacks.base import AttackContext, Budget, build_attack
    update, knowledge = observed(ASPIRIN, kind)
    (rec,) = build_attack("grain@ext", {"pooled_sums": True}).reconstruct(
        update, knowledge, AttackContext(seed=0, budget=Budget(60)))
    assert rec.info["exact"] == 1 and rec.info["pooled_sums_checked"] > 0 and "pooled_sums" not in rec.info
