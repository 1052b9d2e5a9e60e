"""The classifier's argument check: it names the classifier's own arguments, and build_model puts
the config's section in front."""

import inspect

import pytest

from fedgraph_sim.errors import ConfigError
from fedgraph_sim.models import GraphClassifier, build_model
from fedgraph_sim.models.arguments import ArgumentError, check_arguments


def arguments(**options) -> dict:
    bound = inspect.signature(GraphClassifier).bind(7, 2, **options)
    bound.apply_defaults()
    return bound.arguments


def test_the_check_names_the_classifiers_own_arguments_not_config_keys():
    check_arguments(arguments())  # the defaults are valid
    with pytest.raises(ArgumentError, match=r"^pool: unknown pool 'median'; valid: sum, mean, max, flatten$"):
        check_arguments(arguments(pool="median"))
    with pytest.raises(ArgumentError, match=r"^train_eps: applies to conv: gin only \(conv 'gcn'\)$"):
        check_arguments(arguments(train_eps=True))
    with pytest.raises(ArgumentError, match=r"^flatten_nodes: the rows of the flatten readout"):
        check_arguments(arguments(pool="flatten"))


def test_build_model_refuses_before_building_with_the_config_key():
    with pytest.raises(ConfigError, match=r"^model\.readout_hidden: applies to readout: mlp only$"):
        build_model({"readout_hidden": [8]}, 7, 2)
    with pytest.raises(ConfigError, match=r"^model\.conv: unknown model 'nope'"):
        build_model({"conv": "nope"}, 7, 2)

