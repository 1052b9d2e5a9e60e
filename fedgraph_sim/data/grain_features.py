"""GRAIN's molecule node features (Drencheva et al., ICLR 2025, App. C; official code
``insait-institute/GRAIN``): 8 RDKit atom properties, one-hot encoded into 140 slots, then every
column standardised with the dataset's own mean and std (columns of zero std become 0).

=====================  =====  ==================================================================
block                  width  values
=====================  =====  ==================================================================
atomic_num             52     the elements of the paper's three molecule sets
formal_charge          6      -2 .. 3
degree                 7      0 .. 6 heavy-atom neighbours (the degree feature GRAIN reads)
chirality              3      RDKit ChiralType 0 (unspecified), 1 (CW), 2 (CCW)
num_hs                 6      0, 1, 2, 3, 4, 6 (total H count)
mass                   57     RDKit atomic mass / 100 (isotopes included, e.g. 0.02014 for D)
is_aromatic            2      0, 1
hybridization          7      0 unspecified, 1 S, 2 SP, 3 SP2, 4 SP3, 5 SP3D, 6 SP3D2
=====================  =====  ==================================================================

A molecule with a property outside these value sets (another element, charge or isotope) is
dropped and counted in the dataset's metadata, as the official code asserts on them.
"""

from __future__ import annotations

import functools

import torch
from torch_geometric.data import Data

from fedgraph_sim.data.schema import FeatureBlock, FeatureSchema
from fedgraph_sim.errors import ConfigError

ATOMIC_NUMBERS = (1, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 19, 20, 22, 23, 24, 25, 26, 27,
                  28, 29, 30, 32, 33, 34, 35, 38, 40, 42, 43, 46, 47, 48, 49, 50, 51, 53, 56, 60, 64,
                  66, 70, 78, 79, 80, 81, 82, 83)
MASSES = (0.01008, 0.020141, 0.06941, 0.09012, 0.10812, 0.12011, 0.14007, 0.15999, 0.18998, 0.2299,
          0.24305, 0.26982, 0.28086, 0.30974, 0.319739, 0.32067, 0.35453, 0.39098, 0.40078, 0.47867,
          0.50944, 0.51996, 0.54938, 0.55845, 0.58693, 0.58933, 0.63546, 0.6539, 0.7261, 0.74922,
          0.7896, 0.79904, 0.8762, 0.91224, 0.9594, 0.989063, 1.0642, 1.07868, 1.12412, 1.14818,
          1.18711, 1.2176, 1.229056, 1.26904, 1.309061, 1.37328, 1.4424, 1.5725, 1.625, 1.7304,
          1.95078, 1.96967, 2.0059, 2.009708, 2.04383, 2.072, 2.0898)
MASS_TOLERANCE = 1e-4

BLOCKS = (
    FeatureBlock("atomic_num", ATOMIC_NUMBERS),
    FeatureBlock("formal_charge", (-2, -1, 0, 1, 2, 3)),
    FeatureBlock("degree", (0, 1, 2, 3, 4, 5, 6)),
    FeatureBlock("chirality", (0, 1, 2)),
    FeatureBlock("num_hs", (0, 1, 2, 3, 4, 6)),
    FeatureBlock("mass", MASSES),
    FeatureBlock("is_aromatic", (0, 1)),
    FeatureBlock("hybridization", (0, 1, 2, 3, 4, 5, 6)),
)
_HYBRIDIZATION = {"UNSPECIFIED": 0, "S": 1, "SP": 2, "SP2": 3, "SP3": 4, "SP3D": 5, "SP3D2": 6}


@functools.lru_cache(maxsize=None)  # a dataset has a few dozen distinct masses in 10^5 atoms
def _mass_index(mass: float) -> int:
    best = min(range(len(MASSES)), key=lambda i: abs(MASSES[i] - mass))
    if abs(MASSES[best] - mass) > MASS_TOLERANCE:
        raise KeyError(mass)
    return best


def atom_categories(mol) -> torch.Tensor | None:
    """``[n, 8]`` value indices of a molecule's heavy atoms, or None if one is outside the schema.

    Args:
        mol (rdkit.Chem.Mol): the molecule (hydrogens implicit).
    """
    rows = []
    try:
        for atom in mol.GetAtoms():
            rows.append([
                ATOMIC_NUMBERS.index(atom.GetAtomicNum()),
                BLOCKS[1].values.index(atom.GetFormalCharge()),
                BLOCKS[2].values.index(atom.GetDegree()),
                BLOCKS[3].values.index(int(atom.GetChiralTag())),
                BLOCKS[4].values.index(atom.GetTotalNumHs()),
                _mass_index(atom.GetMass() / 100),
                int(atom.GetIsAromatic()),
                _HYBRIDIZATION[str(atom.GetHybridization())],
            ])
    except (ValueError, KeyError):
        return None
    return torch.tensor(rows, dtype=torch.long)


def grain_molecules(graphs: list[Data]) -> tuple[list[Data], FeatureSchema, int]:
    """Re-featurise PyG molecule graphs (they carry ``smiles``; RDKit keeps PyG's atom order):
    ``(graphs with standardised 140-wide x, the schema with its statistics, dropped count)``.

    Args:
        graphs (list[Data]): molecule graphs with ``smiles``. One whose SMILES does not parse, has
            another atom count or an atom outside the value sets is dropped and counted.

    Raises:
        ConfigError: when every molecule is dropped (there are no atoms to standardise with).
    """
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    plain = FeatureSchema(BLOCKS, type_block="atomic_num", degree_block="degree")
    kept, categories, dropped = [], [], 0
    for g in graphs:
        mol = Chem.MolFromSmiles(g.smiles)
        cats = None if mol is None or mol.GetNumAtoms() != g.num_nodes else atom_categories(mol)
        if cats is None:
            dropped += 1
            continue
        kept.append(g)
        categories.append(cats)
    if not kept:  # no atom to take the statistics of: every column's mean would be NaN
        raise ConfigError(f"data.features: GRAIN's features keep none of the {len(graphs)} molecules (each has an "
                          "unreadable SMILES or an atom outside GRAIN's value sets); valid: pyg")
    # one-hot and standardised for all atoms at once (elementwise, so per molecule the same values)
    stacked = plain.onehot(torch.cat(categories))
    mean, std = stacked.mean(0), stacked.std(0)
    schema = FeatureSchema(BLOCKS, type_block="atomic_num", degree_block="degree",
                           mean=tuple(mean.tolist()), std=tuple(std.nan_to_num(0.0).tolist()))
    out = []
    for g, x in zip(kept, schema.standardize(stacked).split([len(c) for c in categories])):
        h = g.clone()
        h.x = x.clone()  # its own storage: a view would pickle (and keep alive) every atom's features
        out.append(h)
    return out, schema, dropped
