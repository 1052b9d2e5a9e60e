import copy

import pytest
import torch

from attacks.grain.embed import StarLayer, check_input, check_weight, checked_weights
from fedgraph_sim.data.degree import degrees_of
from tests.unit.grain_cases import SMILES, molecule, neighbours, victim


@pytest.mark.parametrize("kind", ["gcn", "gat", "gin_sum", "sage_mean", "gcn_mean"])
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
    checked = model.get_parameter(check_weight(model.conv_name, 2) if len(model.convs) > 2 else "classifier.0.weight")
    assert rows.shape[1] == checked.shape[1]


@pytest.mark.parametrize("kind", ["gcn", "gin_sum", "sage_mean", "gcn_mean"])
@pytest.mark.parametrize("smiles", ["CC(C)Cc1ccc(cc1)C(C)C(=O)O", "CC(=O)Oc1ccccc1C(=O)O"])
def test_every_checked_gradient_spans_exactly_the_rows_its_check_reads(kind, smiles):
    """Node rows, 1-hop and 2-hop rows (as the stars compute them from the true neighbourhoods)
    lie in the row space of their checked weight's gradient, and span all of it below a pooled
    model's top layer. For a pooled GIN
    the 2-hop rows are layer 2's MLP hidden rows: at layer 3, the top of a summed model, nodes
    whose units switch alike share a gradient row and the rank falls short of the 2-hop states
    (ibuprofen: 11 of 12)."""
    g, _ = molecule(smiles)
    model = copy.deepcopy(victim(kind)).double()
    x = g.x.double()
    nbrs, deg = neighbours(g), degrees_of(g)
    index = torch.zeros(g.num_nodes, max(len(n) for n in nbrs), dtype=torch.long)
    mask = torch.zeros_like(index, dtype=torch.bool)
    for v, n in enumerate(nbrs):
        index[v, :len(n)], mask[v, :len(n)] = torch.tensor(n), True
    centre = torch.arange(g.num_nodes)
    layer1 = StarLayer(model, 0, x)
    one = layer1.rows(centre, index, mask, deg, deg[index])
    two = StarLayer(model, 1, layer1.states(one)).rows(centre, index, mask, deg, deg[index])
    loss = torch.nn.functional.cross_entropy(model(x, g.edge_index), torch.tensor([1]))
    for name, rows in zip(checked_weights(model), (x, one, check_input(model, x, two))):
        grad = torch.autograd.grad(loss, model.get_parameter(name), retain_graph=True)[0]
        rows = torch.unique(rows, dim=0)
        basis = torch.linalg.svd(rows)[2][: torch.linalg.matrix_rank(rows)]
        assert torch.allclose(grad @ basis.T @ basis, grad, atol=1e-10), name  # in the span
        top = name.startswith(f"convs.{len(model.convs) - 1}.") and model.readout_placement != "per_node"
        if not top:  # and all of it; at a pooled top layer (SAGE, GCN) it may fall short (aspirin, SAGE: 11 of 12)
            assert torch.linalg.matrix_rank(grad, atol=1e-9) == basis.size(0), name


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
