import copy

import torch

from attacks.grain.coefficients import block_z_scores, readout_jacobians
from clients.training import mean_gradient
from tests.unit.grain_cases import molecule, victim


def readout_inputs(model, graphs) -> torch.Tensor:
    """Every node's readout input ``[x_v || h_v]`` (float64), as the per-node readout sees it."""
    rows = []
    for g in graphs:
        x = g.x.to(torch.float64)
        rows.append(model._readout_rows(x, model.node_embeddings(x, g.edge_index)))
    return torch.cat(rows).detach()


def test_rows_of_the_batch_carry_weight_and_combinations_of_them_do_not():
    """The readout's gradient of a FedSGD batch is a sum of one rank-one term per node: the
    batch's own rows get coefficients far from zero, rows in their span that no node has (what a
    span check cannot reject) get none."""
    graphs = [molecule(s)[0] for s in ("CCO", "OCC(O)CO", "Cc1ccccc1")]
    model = victim("gcn")
    grads, _ = mean_gradient(model, graphs, "bce")
    model = copy.deepcopy(model).to(torch.float64)  # the victim is shared with other tests
    true = torch.unique(readout_inputs(model, graphs), dim=0)
    mix = torch.Generator().manual_seed(0)
    false = torch.rand(6, true.size(0), generator=mix, dtype=torch.float64) @ true / true.size(0)
    z, residual = block_z_scores(model, torch.cat([true, false]), grads["classifier.0.weight"])
    assert z[: true.size(0)].min() > 1000 > z[true.size(0):].max() and residual < 1e-5
    # without two of the batch's rows the fit cannot explain the gradient, and says so
    _, residual = block_z_scores(model, torch.cat([true[2:], false]), grads["classifier.0.weight"])
    assert residual > 1e-3


def test_the_jacobians_are_the_readouts_gradients_at_each_row():
    model = copy.deepcopy(victim("gcn")).to(torch.float64)
    rows = readout_inputs(model, [molecule("CCO")[0]])
    jac = readout_jacobians(model, rows)
    pre = (rows[:1] @ model.classifier[0].weight.T + model.classifier[0].bias).detach().requires_grad_()
    out = model.classifier[1:](pre)
    torch.autograd.backward(out[0, 1])
    assert jac.shape == (out.size(1), rows.size(0), pre.size(1))
    assert torch.allclose(jac[1, 0], pre.grad[0])
