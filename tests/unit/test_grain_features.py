import pytest
import torch
from torch_geometric.utils import from_smiles

from fedgraph_sim.data import load_dataset, make_synthetic
from fedgraph_sim.data.degree import degrees_of, with_degree_block
from fedgraph_sim.data.grain_features import BLOCKS, grain_molecules
from fedgraph_sim.errors import ConfigError

SMILES = ["CCO", "c1ccncc1", "CC(=O)[O-].[Na+]", "[2H]C([2H])([2H])Cl", "C[Xe]C"]


def graphs():
    out = []
    for i, s in enumerate(SMILES):
        g = from_smiles(s)
        g.graph_id = i
        out.append(g)
    return out


def test_grain_features_are_140_standardized_slots_with_the_heavy_atom_degree():
    kept, schema, dropped = grain_molecules(graphs())
    assert schema.width == 140 == sum(b.width for b in BLOCKS)
    assert dropped == 1 and [g.smiles for g in kept] == SMILES[:4]  # xenon is outside the schema
    ethanol, pyridine, acetate, deuterated = kept
    assert schema.degrees(ethanol.x).tolist() == [1, 2, 1]
    assert torch.equal(schema.degrees(pyridine.x), degrees_of(pyridine))
    assert schema.degrees(acetate.x).tolist()[-1] == 0  # the sodium ion stands alone
    cats = schema.decode(torch.cat([g.x for g in kept]))
    elements = [BLOCKS[0].values[i] for i in cats[:, 0].tolist()]
    assert elements[:3] == [6, 6, 8] and 7 in elements and 11 in elements
    masses = [BLOCKS[5].values[i] for i in schema.decode(deuterated.x)[:, 5].tolist()]
    assert masses.count(0.020141) == 3 and 0.35453 in masses  # isotopic H atoms are nodes of their own
    aromatic = schema.decode(pyridine.x)[:, 6]
    assert aromatic.tolist() == [1] * 6
    x = torch.cat([g.x for g in kept])
    assert torch.allclose(x.mean(0), torch.zeros(140), atol=1e-5)  # the statistics are this data's
    assert (x.std(0) == 0).sum() >= 100  # unused values stay 0


def test_each_molecule_owns_its_features():
    """Featurised together, stored apart: a graph sent to an attack worker pickles its own atoms only."""
    kept, _, _ = grain_molecules(graphs())
    storages = {g.x.untyped_storage().data_ptr() for g in kept}
    assert len(storages) == len(kept)
    assert all(g.x.untyped_storage().nbytes() == g.x.numel() * g.x.element_size() for g in kept)


def test_grain_features_that_keep_no_molecule_are_one_line():
    """Standardising with no atom would give every column a NaN mean."""
    with pytest.raises(ConfigError, match=r"^data.features: GRAIN's features keep none of the 1 molecules .*; "
                                          r"valid: pyg$"):
        grain_molecules(graphs()[-1:])  # xenon only


def test_degree_block_on_synthetic():
    data = with_degree_block(make_synthetic(num_graphs=20, seed=1))
    assert data.schema.degree_block == "degree" and data.schema.width == 4 + len(data.schema.block("degree").values)
    for g in data.graphs:
        assert torch.equal(data.schema.degrees(g.x), degrees_of(g))
    with pytest.raises(ConfigError, match="already has the degree block"):
        with_degree_block(data)


def test_load_dataset_options():
    data = load_dataset("synthetic", degree_feature=True, num_graphs=40)
    assert len(data) == 40 and data.schema.degree_block == "degree"
    with pytest.raises(ConfigError, match="data.features: not an option of dataset synthetic"):
        load_dataset("synthetic", features="grain")


def test_subset_is_the_federation_and_the_holdout_lies_outside_it():
    from fedgraph_sim.config import load_config
    from fedgraph_sim.scenario import build_scenario

    config = load_config(None, ["data.dataset=synthetic", "data.subset=30", "data.options={num_graphs: 80}",
                                "federation.num_clients=2", "aux.fraction=0.25"])
    scenario = build_scenario(config)
    victims = set(int(i) for c in scenario.clients for i in c)
    again = set(int(i) for c in build_scenario(config).clients for i in c)
    assert len(victims) == 30 and victims == again
    assert not victims & set(scenario.aux.tolist()) and len(scenario.aux) == round(0.25 * 50)


@pytest.mark.realdata
def test_tox21_grain_features(data_root):
    data = load_dataset("Tox21", task="SR-p53", features="grain")
    assert data.num_features == 140 and len(data) == 6767
    assert data.meta["dropped_outside_schema"] == 0
    assert all(torch.equal(data.schema.degrees(g.x), degrees_of(g)) for g in data.graphs)
    mutag = load_dataset("MUTAG", degree_feature=True)
    assert mutag.num_features == 7 + 5 and mutag.schema.block("degree").values == (0, 1, 2, 3, 4)
    with pytest.raises(ConfigError, match="data.features: unknown node features 'x'"):
        load_dataset("BBBP", features="x")
