import pytest
import torch

from attacks.grain.nodes import NodeSearchAborted, propose_nodes
from tests.unit.grain_cases import SMILES, molecule, observed


@pytest.mark.parametrize("smiles", SMILES)
def test_t0_holds_every_true_feature_vector(smiles):
    update, knowledge = observed(smiles)
    g, schema = molecule(smiles)
    nodes = propose_nodes(schema, update.gradient["convs.0.lin.weight"], tol=1e-7, tau=1e-3,
                          group_size=10_000, abort_size=2_000_000)
    truth = {tuple(r) for r in schema.decode(g.x).tolist()}
    found = {tuple(r) for r in nodes.categories.tolist()}
    assert truth <= found
    assert len(found) < 100  # some false positives, not the 3e7-row value space
    assert torch.allclose(nodes.x.float(), schema.encode(nodes.categories), atol=1e-6)


def test_node_search_aborts_above_its_limit():
    update, _ = observed("CCO")
    _, schema = molecule("CCO")
    with pytest.raises(NodeSearchAborted):
        propose_nodes(schema, update.gradient["convs.0.lin.weight"], tol=1e-7, tau=1e-3,
                      group_size=10_000, abort_size=100)
