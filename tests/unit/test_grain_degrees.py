import pytest
import torch

from attacks.base import AttackContext, Budget, build_attack
from attacks.grain.degrees import degree_types, one_hop_blocks_of_unknown_degree
from attacks.grain.embed import StarLayer, checked_weights
from attacks.grain.spancheck import RowSpace
from fedgraph_sim.metrics.gsm import gsm
from tests.unit.grain_cases import MODELS, dense_adj, observed_plain, plain_molecule

PYG_GIN = MODELS["gin_sum"]


def one_hop(smiles: str, model: dict):
    update, knowledge = observed_plain(smiles, model)
    net = knowledge.build_model(update.global_weights, dtype=torch.float64)
    rows = torch.eye(4, dtype=torch.float64)  # every atom type: T0 need not be right for this check
    types = degree_types(rows, max_degree=4)
    space = RowSpace(update.gradient[checked_weights(net)[1]], 1e-7)
    blocks = one_hop_blocks_of_unknown_degree(StarLayer(net, 0, types.x), types.deg, space, rows=types.row, tau=1e-2,
                                              degree_free=net.conv_name != "gcn", max_combinations=1e8,
                                              expired=lambda: False)
    named = {(_name(types, int(blocks.centre[i])), tuple(sorted(_name(types, t) for t in blocks.neighbours(i))))
             for i in range(len(blocks))}
    return types, named


def _name(types, t: int) -> str:
    return f"{'CNOS'[int(types.row[t])]}{int(types.deg[t])}"


@pytest.mark.parametrize("model", [PYG_GIN, MODELS["sage_mean"], MODELS["gcn_mean"]])
def test_ethanols_types_pass_with_their_degrees(model):
    """C-C-O: the 1-hop blocks that pass hold every atom with its degree, neighbours included
    (C1 next to C2, C2 between C1 and O1, O1 next to C2), among others the check cannot tell
    apart on three rows: GIN-0 sums a centre with its neighbours, so (C; O) is (O; C), and a
    mean over neighbours of one type does not count them."""
    types, named = one_hop("CCO", model)
    assert {("C1", ("C2",)), ("C2", ("C1", "O1")), ("O1", ("C2",))} <= named
    if model["conv"] == "gin":  # a C between two carbons is not ethanol's (a mean cannot tell)
        assert ("C2", ("C1", "C1")) not in named
    assert types.x.shape == (4 * 5, 4) and types.deg.tolist()[:5] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("smiles", ["CCO", "OCC(O)CO", "CCN(CC)CC", "c1ccncc1", "CC(=O)Oc1ccccc1C(=O)O"])
def test_a_pooled_gin_without_degree_features_gives_its_graph_back(smiles):
    """(Toluene is left out: all carbon, one T0 row, and 228 2-hop blocks pass its rank-4 check;
    whether the search finds it in time turns on the float32 gradient's summation order.)"""
    update, knowledge = observed_plain(smiles, PYG_GIN)
    (rec,) = build_attack("grain@ext").reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(60)))
    g, schema = plain_molecule(smiles)
    assert rec.info["exact"] == 1
    assert gsm(rec.x, rec.adj, g.x, dense_adj(g), schema)["full_iso"] == 1.0


def test_paper_mode_needs_the_degree_block_and_says_which_option_reads_without_it():
    update, knowledge = observed_plain("CCO", {**MODELS["gcn"], "conv_bias": True})
    assert "unknown_degrees=true" in build_attack("grain").not_applicable(update, knowledge)
    assert build_attack("grain", {"unknown_degrees": True}).not_applicable(update, knowledge) is None


def test_a_max_degree_below_one_is_refused_with_its_key():
    from fedgraph_sim.errors import ConfigError

    with pytest.raises(ConfigError, match=r"attack.params.grain.max_degree: must be >= 1"):
        build_attack("grain@ext", {"max_degree": 0})
