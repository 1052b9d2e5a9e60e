"""Reading a node's star from its aggregated GCN input: degree, neighbours by degree, and the
values each column allows; a mixture of two rows reads as none."""

import numpy as np
import torch

from fedgraph_sim.crafting.aggregate_reading import read_star
from fedgraph_sim.crafting.imprinted_aggregates import aggregated_rows
from tests.unit.grain_cases import molecule


def test_ethanols_middle_carbon_reads_as_its_star():
    """CCO: the middle carbon has degree 2 and neighbours of degrees 1 (the methyl C) and 1 (O),
    so its degree column 2 holds 1/3 and column 1 holds 2/sqrt(2 * 3)."""
    g, schema = molecule("CCO")
    rows = aggregated_rows(g.x, g.edge_index)
    star = read_star(rows[1].numpy(), schema)
    assert star is not None and (star.d, star.n) == (2, {1: 2})
    degree = schema.slices()[schema.degree_block]
    expected = np.zeros(degree.stop - degree.start)
    expected[2], expected[1] = 1 / 3, 2 / np.sqrt(6)
    assert np.allclose(star.a[degree], expected, atol=1e-6)
    carbon = schema.slices()[schema.type_block].start + list(schema.block(schema.type_block).values).index(6)
    # the centre's C (1/3 * sqrt 3) and the methyl C (1/sqrt 2): both readings of the C column
    assert (1, (0, 1, 0, 0, 0, 0, 0)) in star.options[carbon]


def test_every_true_row_reads_and_a_mixture_of_two_does_not():
    g, schema = molecule("CC(=O)Oc1ccccc1C(=O)O")
    rows = aggregated_rows(g.x, g.edge_index)
    assert all(read_star(r.numpy(), schema) is not None for r in rows)
    degrees = schema.degrees(g.x.double())
    u, v = int(torch.nonzero(degrees == 1)[0]), int(torch.nonzero(degrees == 3)[0])
    assert read_star(((rows[u] + 2 * rows[v]) / 3).numpy(), schema) is None
