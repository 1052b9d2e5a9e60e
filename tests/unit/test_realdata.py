"""Loader counts on the real raw files (run in CI, where .ci/run sets FEDGRAPH_DATA_ROOT)."""

import pytest

from fedgraph_sim.data import available_datasets, load_dataset
from fedgraph_sim.errors import ConfigError

# (name, graphs PyG gives, feature width, classes)
TU = [("MUTAG", 188, 7, 2), ("PTC_MR", 344, 18, 2), ("AIDS", 2000, 38, 2),
      ("ENZYMES", 600, 3, 6), ("PROTEINS", 1113, 3, 2)]
MOLECULENET = [("Tox21", 7823), ("ClinTox", 1480), ("BBBP", 2039)]


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch, data_root, offline):
    """Process raw files from scratch, with every network connection refused."""
    monkeypatch.setenv("FEDGRAPH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.slow
@pytest.mark.parametrize("name, graphs, width, classes", TU)
def test_tu_counts_offline(fresh_cache, name, graphs, width, classes):
    data = load_dataset(name)
    assert (len(data), data.num_features, data.num_classes) == (graphs, width, classes)
    assert all(g.x.sum(1).eq(1).all() for g in data.graphs[:20])  # one-hot node labels
    assert (fresh_cache / "tu" / name / "processed").is_dir()


def test_first_processing_prints_nothing(fresh_cache, monkeypatch, capfd):
    """PyG's Processing.../Done! lines (silent under pytest, so pretend not to be) stay off the
    terminal: they go to the log."""
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    load_dataset("MUTAG")
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
    assert (fresh_cache / "tu" / "MUTAG" / "processed").is_dir()  # it did process


@pytest.mark.slow
@pytest.mark.parametrize("name, graphs", MOLECULENET)
def test_moleculenet_counts_offline(fresh_cache, name, graphs):
    data = load_dataset(name)
    assert data.meta["pyg_graphs"] == graphs
    # First task, NaN labels dropped.
    assert len(data) == graphs - data.meta["dropped_missing_label"]
    assert data.num_features == 177 and data.schema.type_block == "atomic_num"
    g = data.graphs[0]
    blocks = data.schema.slices()
    assert all(g.x[:, s].sum(1).eq(1).all() for s in blocks.values())
    assert g.smiles


def test_moleculenet_task_by_name(data_root, offline):
    data = load_dataset("ClinTox", task="CT_TOX")
    assert data.meta["task"] == "CT_TOX"
    with pytest.raises(ConfigError, match="data.task: 'nope' is not a task of ClinTox; valid: 0..1 or"):
        load_dataset("ClinTox", task="nope")


def test_data_root_is_never_written(data_root, offline, tmp_path, monkeypatch):
    before = sorted(p.relative_to(data_root) for p in (data_root / "tu" / "MUTAG").rglob("*"))
    monkeypatch.setenv("FEDGRAPH_CACHE", str(tmp_path))
    load_dataset("MUTAG")
    after = sorted(p.relative_to(data_root) for p in (data_root / "tu" / "MUTAG").rglob("*"))
    assert before == after


def test_available_lists_real_datasets(data_root):
    names = available_datasets()
    for name in ("synthetic", "MUTAG", "PTC_MR", "AIDS", "ENZYMES", "PROTEINS", "Tox21", "BBBP"):
        assert name in names


def test_max_nodes_on_proteins(data_root):
    data = load_dataset("PROTEINS", max_nodes=100)
    assert data.meta["dropped_by_max_nodes"] > 0
    assert max(g.num_nodes for g in data.graphs) <= 100


def test_missing_dataset_names_the_data_root(tmp_path, monkeypatch, offline):
    monkeypatch.setenv("FEDGRAPH_DATA_ROOT", str(tmp_path / "empty"))
    monkeypatch.setenv("FEDGRAPH_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ConfigError, match=r"FEDGRAPH_DATA_ROOT=.*has no tu/MUTAG/raw/.*<root>/tu/<NAME>/raw/"):
        load_dataset("MUTAG")


def test_freesolv_keeps_its_real_targets_under_regression(data_root, offline):
    binarised = load_dataset("FreeSolv")
    real = load_dataset("FreeSolv", task_type="regression")
    assert (binarised.num_classes, real.num_classes, real.task_type) == (2, 1, "regression")
    assert real[0].y.dtype.is_floating_point and len(real) == len(binarised) == 642
    # the strata of the splits and the partition: above the median target or not, as binarised
    assert (real.labels == binarised.labels).all()
    with pytest.raises(ConfigError, match="data.task_type: ClinTox has class labels"):
        load_dataset("ClinTox", task_type="regression")
    with pytest.raises(ConfigError, match="data.task_type: MUTAG has class labels"):
        load_dataset("MUTAG", task_type="regression")


def test_tu_node_labels_are_named_as_the_datasets_readme_says(data_root):
    """MUTAG's and PTC_MR's READMEs name their node labels (atoms); PROTEINS' does not."""
    assert load_dataset("MUTAG").schema.blocks[0].names == ("C", "N", "O", "F", "I", "Cl", "Br")
    assert load_dataset("PTC_MR").schema.blocks[0].names[:4] == ("In", "P", "O", "N")
    assert load_dataset("PROTEINS").schema.blocks[0].names is None
