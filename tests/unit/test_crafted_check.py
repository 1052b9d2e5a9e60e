"""``crafted_check``: a client refuses a round whose model is mostly dead on its own batch."""

import copy

import pytest
import torch

from clients.defenses import build_defenses
from clients.defenses.base import ClientTurn
from clients.defenses.crafted_check import CraftedCheck, dead_fraction, scale_factors
from clients.training import mean_gradient
from fedgraph_sim.crafting import crafting
from fedgraph_sim.errors import ConfigError
from tests.unit.grain_cases import GCN, molecule, victim

TURN = ClientTurn(partition_size=4, batch_size=1, local_steps=1, rounds=1, round=1)


def _turn(check: CraftedCheck, model, graph):
    check.begin(TURN, None)
    with check.training(model, torch.Generator()):
        grads, _ = mean_gradient(model.train(), [graph], "bce")
    return check.apply(grads, torch.Generator()), check.report()


def _crafted(name: str, clients: int, slot: int):
    """GRAIN's GCN victim as the crafting ``name`` sends it to client ``slot`` of ``clients``."""
    model = victim("gcn")
    honest = {k: v.numpy() for k, v in model.state_dict().items()}
    _, parts = crafting(name).craft(honest, GCN, clients, seed=0)
    crafted = type(model)(140, 2, **GCN)
    crafted.load_state_dict({k: torch.from_numpy(v) for k, v in parts[slot].items()})
    return crafted


def test_dead_fraction_counts_units_zero_on_every_row():
    output = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    assert dead_fraction(output) == pytest.approx(1 / 3)


def test_the_honest_model_passes_and_its_update_is_unchanged():
    graph, _ = molecule("CC(=O)Oc1ccccc1C(=O)O")
    model = copy.deepcopy(victim("gcn"))  # trained here: not the shared copy
    update, report = _turn(CraftedCheck(), model, graph)
    assert report["crafted-flag"] == 0.0 and report["dead-fraction"] < 0.5
    honest, _ = mean_gradient(model, [graph], "bce")
    assert all(torch.equal(update[k], honest[k]) for k in honest)


def test_a_separated_clients_round_is_refused_with_a_zero_update():
    graph, _ = molecule("CC(=O)Oc1ccccc1C(=O)O")
    crafted = _crafted("separated_clients", clients=8, slot=3)
    update, report = _turn(CraftedCheck(), crafted, graph)
    assert report["crafted-flag"] == 1.0 and report["dead-fraction"] >= 7 / 8
    assert all(not v.any() for v in update.values())
    flagged, report = _turn(CraftedCheck(action="flag"), crafted, graph)  # reported, not refused
    assert report["crafted-flag"] == 1.0 and any(v.any() for v in flagged.values())


def test_bad_settings_are_one_line():
    with pytest.raises(ConfigError, match=r"^defenses\.0\.action: unknown value 'drop'; valid: refuse, flag$"):
        build_defenses([{"name": "crafted_check", "action": "drop"}])
    with pytest.raises(ConfigError, match=r"^defenses\.0\.dead: must be in"):
        build_defenses([{"name": "crafted_check", "dead": 2}])


def test_two_clients_are_caught_by_their_zeroed_units_not_by_dead_ones():
    graph, _ = molecule("CC(=O)Oc1ccccc1C(=O)O")
    model, crafted = victim("gcn"), _crafted("separated_clients", clients=2, slot=0)
    _, report = _turn(CraftedCheck(zero=1.0 - 1e-9), crafted, graph)  # the zero count off: dead units alone
    assert report["zero-fraction"] == 0.5 and report["crafted-flag"] == 0.0
    _, report = _turn(CraftedCheck(), crafted, graph)
    assert report["crafted-flag"] == 1.0
    _, report = _turn(CraftedCheck(), model, graph)
    assert report["zero-fraction"] == 0.0


def test_an_honest_initialisation_stands_at_scale_one_and_the_run_stream_is_untouched():
    model = victim("gcn")
    torch.manual_seed(7)
    factors = scale_factors(model)
    after = torch.rand(3)
    torch.manual_seed(7)
    assert torch.equal(after, torch.rand(3))  # the reference's draws left the global stream alone
    assert set(factors) == {"convs.0.lin", "convs.1.lin", "classifier.0", "classifier.2", "classifier.4"}
    assert max(factors.values()) < 1.05


def test_a_rescaled_round_passes_the_counts_and_is_caught_by_its_scale():
    graph, _ = molecule("CC(=O)Oc1ccccc1C(=O)O")
    crafted = _crafted("rescaled_layers", clients=8, slot=0)
    _, report = _turn(CraftedCheck(scale=0), crafted, graph)  # the counts alone: blind to a rescaling
    assert report["crafted-flag"] == 0.0 and report["scale-factor"] == 1.0
    update, report = _turn(CraftedCheck(), crafted, graph)
    # the readout's two later maps share the inverse 10**1.5: 10**0.75 each
    assert report["crafted-flag"] == 1.0 and report["scale-factor"] == pytest.approx(10 ** 0.75, rel=0.05)
    assert all(not v.any() for v in update.values())


def test_scale_below_one_is_one_line():
    with pytest.raises(ConfigError, match=r"^defenses\.0\.scale: must be 0 \(off\) or >= 1 \(got 0\.5\)$"):
        build_defenses([{"name": "crafted_check", "scale": 0.5}])


def test_the_logits_may_grow_as_training_grows_them_but_not_shrink():
    model = copy.deepcopy(victim("gcn"))
    with torch.no_grad():
        model.classifier[4].weight.mul_(3.0)  # the logits' map: training grows it
    assert scale_factors(model)["classifier.4"] == 1.0
    with torch.no_grad():
        model.classifier[4].weight.div_(9.0)
        model.classifier[2].weight.mul_(3.0)  # a hidden map grown as much is far from any honest round
    factors = scale_factors(model)
    assert factors["classifier.4"] == pytest.approx(3.0, rel=0.05)
    assert factors["classifier.2"] == pytest.approx(3.0, rel=0.05)


def test_a_map_no_reset_redraws_is_left_out_not_compared_with_itself():
    class Frozen(torch.nn.Module):  # a user's layer with a weight and no reset_parameters
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.full((3, 4), 10.0))

    model = torch.nn.Sequential(torch.nn.Linear(4, 3), Frozen(), torch.nn.Linear(3, 2))
    assert set(scale_factors(model)) == {"0", "2"}


def test_an_imprinted_nodes_round_is_refused():
    from tests.unit.test_imprinted_nodes import AUX

    graph, _ = molecule("CC(=O)Oc1ccccc1C(=O)O")
    model = victim("gcn")
    honest = {k: v.numpy() for k, v in model.state_dict().items()}
    _, parts = crafting("imprinted_nodes", [molecule(s)[0] for s in AUX], "bce").craft(honest, GCN, 1, seed=0)
    crafted = type(model)(140, 2, **GCN)
    crafted.load_state_dict({k: torch.from_numpy(v) for k, v in parts[0].items()})
    update, report = _turn(CraftedCheck(), crafted, graph)
    # the readout's later layers keep one live unit each: the rest are zeroed
    assert report["crafted-flag"] == 1.0 and report["zero-fraction"] > 0.9
    assert all(not v.any() for v in update.values())


@pytest.mark.parametrize("epoch", [False, True])
def test_an_imprinted_nodes_round_is_flagged_with_or_without_the_epoch_table(epoch):
    from fedgraph_sim.crafting.imprinted_nodes import ImprintedNodes

    graph, _ = molecule("CC(=O)Oc1ccccc1C(=O)O")
    model = victim("gcn")
    aux = [molecule(s)[0] for s in ("CCO", "c1ccccc1", "CCN(CC)CC", "O=C(O)CCC(=O)O", "Cc1ccccc1")]
    _, parts = ImprintedNodes(aux, loss="bce", epoch=epoch).craft(
        {k: v.numpy() for k, v in model.state_dict().items()}, GCN, 1, seed=0)
    crafted = type(model)(140, 2, **GCN)
    crafted.load_state_dict({k: torch.from_numpy(v) for k, v in parts[0].items()})
    _, report = _turn(CraftedCheck(action="flag"), crafted, graph)
    assert report["crafted-flag"] == 1.0


def test_an_imprinted_aggregates_round_is_flagged():
    from fedgraph_sim.crafting.imprinted_aggregates import ImprintedAggregates
    from tests.unit.test_imprinted_aggregates import POOLED_GCN

    graph, _ = molecule("CC(=O)Oc1ccccc1C(=O)O")
    torch.manual_seed(0)
    model = type(victim("gcn"))(140, 2, **POOLED_GCN)
    aux = [molecule(s)[0] for s in ("CCO", "c1ccccc1", "CCN(CC)CC", "O=C(O)CCC(=O)O", "Cc1ccccc1")]
    _, parts = ImprintedAggregates(aux, loss="bce").craft(
        {k: v.numpy() for k, v in model.state_dict().items()}, POOLED_GCN, 1, seed=0)
    crafted = type(model)(140, 2, **POOLED_GCN)
    crafted.load_state_dict({k: torch.from_numpy(v) for k, v in parts[0].items()})
    _, report = _turn(CraftedCheck(action="flag"), crafted, graph)
    assert report["crafted-flag"] == 1.0 and report["zero-fraction"] > 0.9
