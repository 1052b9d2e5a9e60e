"""The papers' victims as presets (``fedgraph_sim.models.presets``): each module names its paper
and builds its classifier; a preset replaces the model section it is laid over, and keys beside
it override it."""

import pytest

from fedgraph_sim.config import load_config
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.models import GraphClassifier, build_model
from fedgraph_sim.models.presets import presets
from tests.unit.grain_cases import GAT, GCN


def test_every_preset_names_its_paper_and_builds():
    assert {"graphdlg_gcn", "grain_gcn", "grain_gat", "fedgig_gcn", "glg_sage", "pyg_gin"} <= set(presets())
    for name, module in presets().items():
        assert module.__doc__ and module.PAPER, name
        options = dict(module.OPTIONS, flatten_nodes=8) if module.OPTIONS.get("pool") == "flatten" else module.OPTIONS
        assert isinstance(GraphClassifier(7, 2, **options), GraphClassifier)


def test_grains_presets_are_the_models_its_tests_attack():
    assert presets()["grain_gcn"].OPTIONS == {**GCN, "layers": 2}
    assert presets()["grain_gat"].OPTIONS == {**GAT, "layers": 2}


def test_a_preset_replaces_the_default_model_and_keys_beside_it_override():
    config = load_config(None, ["model.preset=grain_gcn"])  # over the packaged default's GCN of width 16
    assert (config.model.hidden, config.model.readout_placement, config.model.conv_bias) == (300, "per_node", False)
    config = load_config(None, ["model={preset: glg_sage, flatten_nodes: 28}"])
    assert (config.model.conv, config.model.activation, config.model.flatten_nodes) == ("sage", "sigmoid", 28)
    config = load_config(None, ["model.preset=pyg_gin", "model.hidden=32"])
    assert (config.model.conv, config.model.hidden, config.model.preset) == ("gin", 32, "pyg_gin")
    model = build_model(config.model, 7, 2)
    assert model.convs[0].nn[0].out_features == 32


def test_an_unknown_preset_is_one_line_with_the_choices():
    with pytest.raises(ConfigError, match=r"^model.preset: unknown preset 'gcn'; valid: fedgig_gcn, glg_sage"):
        load_config(None, ["model.preset=gcn"])


def test_the_configuration_docs_list_every_preset():
    from pathlib import Path
    docs = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    line = next(text for text in docs.splitlines() if text.startswith("| `model` | `preset`"))
    assert [name for name in sorted(presets()) if name not in line] == []
