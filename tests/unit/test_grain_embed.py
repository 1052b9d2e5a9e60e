import copy

import pytest
import torch

from attacks.grain.embed import StarLayer, check_input
from fedgraph_sim.data.degree import degrees_of
from tests.unit.grain_cases import SMILES, molecule, neighbours, victim


@pytest.mark.parametrize("kind", ["gcn", "gat"])
@pytest.mark.parametrize("smiles", SMILES[3:6])
def test_star_states_equal_the_models_node_states(kind, smiles):
    """Thm 5.3: the centre of a node's true 1- and 2-hop trees has exactly the node's state."""
    g, _ = molecule(smiles)
    model = copy.deepcopy(victim(kind)).double()
    x = g.x.double()
    with torch.no_grad():
        h1 = model.acts[0](model.convs[0](x, g.edge_index))
        h2 = model.acts[1](model.convs[1](h1, g.edge_index))
    nbrs, deg = neighbours(g), degrees_of(g)
    width = max(len(n) for n in nbrs)
    index = torch.zeros(g.num_nodes, width, dtype=torch.long)
    mask = torch.zeros(g.num_nodes, width, dtype=torch.bool)
    for v, n in enumerate(nbrs):
        index[v, :len(n)], mask[v, :len(n)] = torch.tensor(n), True
    centre = torch.arange(g.num_nodes)
    one = StarLayer(model, 0, x)(centre, index, mask, deg, deg[index])
    two = StarLayer(model, 1, h1)(centre, index, mask, deg, deg[index])
    assert torch.allclose(one, h1, atol=1e-10)
    assert torch.allclose(two, h2, atol=1e-10)
    rows = check_input(model, x, two)
    assert rows.shape[1] == model.classifier[0].in_features


def test_gcn_weights_come_from_degree_features_not_the_star():
    """A leaf neighbour of degree 3 in the graph weighs 1/sqrt((d_c+1)(3+1)) even though the star
    shows it with one edge."""
    g, _ = molecule("CCN(CC)CC")
    model = copy.deepcopy(victim("gcn")).double()
    layer = StarLayer(model, 0, g.x.double())
    centre, nbr = torch.tensor([0]), torch.tensor([[1]])
    mask = torch.ones(1, 1, dtype=torch.bool)
    a = layer(centre, nbr, mask, torch.tensor([1]), torch.tensor([[1]]))
    b = layer(centre, nbr, mask, torch.tensor([1]), torch.tensor([[3]]))
    assert not torch.allclose(a, b)
