"""Reading an ``imprinted_nodes`` round: peeling gives every node's readout row exactly, and the
weights group the rows into the batch's graphs."""

import numpy as np

from fedgraph_sim.crafting.imprint_reading import group_graphs, read_imprints
from fedgraph_sim.crafting.imprinted_nodes import crafted_model
from tests.unit.test_imprinted_nodes import GRAIN_GCN, _nearest, _round


def test_peeling_gives_every_distinct_row_exactly():
    update, schema, truth, _, _ = _round()
    imprints = read_imprints(update, schema, tol=1e-2)
    distinct = np.unique(np.round(truth, 5), axis=0)
    assert len(imprints.rows) == len(distinct) and imprints.undecoded == 0
    found = {_nearest(truth, row.numpy())[0] for row in imprints.rows}
    assert all(_nearest(truth, row.numpy())[1] < 1e-3 for row in imprints.rows)
    assert len({tuple(np.round(truth[i], 5)) for i in found}) == len(distinct)  # each once
    assert bool((imprints.weights > 0).all())  # bce: every logit carries the sum


def test_the_weights_group_rows_into_the_true_graphs():
    update, schema, truth, owner, sent = _round()
    imprints = read_imprints(update, schema, tol=1e-2)
    graphs, _ = group_graphs(imprints, crafted_model(GRAIN_GCN, sent), "bce", 3, [0, 1])
    assert graphs
    taken = np.zeros(len(imprints.rows))
    for graph in graphs:  # the graphs' shares of a row, over every pass, add up to at most its weight
        for r, k in zip(graph.rows, graph.copies):
            taken[r] += k * graph.weight
    assert (taken <= imprints.weights.numpy() * (1 + 1e-3)).all()
    for graph in graphs:  # the rows and copies of one victim, all of them
        rows = [_nearest(truth, imprints.rows[i].numpy())[0] for i in graph.rows]
        victims = {int(owner[r]) for r in rows}
        assert len(victims) == 1
        victim = victims.pop()
        mine = sorted(tuple(np.round(truth[r], 4)) for r, k in zip(rows, graph.copies) for _ in range(k))
        assert mine == sorted(tuple(np.round(t, 4)) for t in truth[owner == victim])
