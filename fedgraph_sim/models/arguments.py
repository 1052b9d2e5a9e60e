"""The graph classifier's arguments: their valid values and the one check of them.

:class:`~fedgraph_sim.models.classifier.GraphClassifier` trusts its arguments, as PyG's layers do;
:func:`check_arguments` refuses a set it cannot take before it is built, naming the argument
(``pool: unknown pool 'median'; valid: sum, mean, max, flatten``), and
:func:`~fedgraph_sim.models.classifier.build_model` puts the config's section in front
(``model.pool: ...``).
"""

from __future__ import annotations

from typing import Any

from fedgraph_sim import registry

TASKS = ("graph", "node")
POOLS = ("sum", "mean", "max", "flatten")
READOUTS = ("linear", "mlp")
PLACEMENTS = ("after_pool", "per_node")
READOUT_INPUTS = ("last", "concat_input")
ACTIVATION_NAMES = ("relu", "elu", "gelu", "sigmoid")


class ArgumentError(ValueError):
    """A classifier argument it cannot take: ``"<argument>: <reason>"``."""


def _require(condition: bool, argument: str, reason: str) -> None:
    if not condition:
        raise ArgumentError(f"{argument}: {reason}")


def check_arguments(arguments: dict[str, Any]) -> None:
    """Raise :class:`ArgumentError` for the first argument the classifier cannot take.

    Args:
        arguments: every argument of ``GraphClassifier(in_channels, num_classes, ...)`` by name,
            defaults included (``inspect.Signature.bind`` then ``apply_defaults``).
    """
    a = arguments
    _require(a["task"] in TASKS, "task", f"unknown task '{a['task']}'; valid: {', '.join(TASKS)}")
    conv_type = registry.models.get(a["conv"], key="conv")
    for name in ("layers", "hidden", "in_channels"):
        _require(a[name] >= 1, name, f"must be >= 1 (got {a[name]})")
    # one output is a regression head (data.task_type: regression, trained with train.loss: mse)
    _require(a["num_classes"] >= 1, "num_classes", f"must be >= 1 (got {a['num_classes']})")
    pool, flatten_nodes = a["pool"], a["flatten_nodes"]
    _require(pool in POOLS, "pool", f"unknown pool '{pool}'; valid: {', '.join(POOLS)}")
    _require((pool == "flatten") == (flatten_nodes is not None), "flatten_nodes",
             "the rows of the flatten readout, needed with pool: flatten and only then")
    _require(flatten_nodes is None or flatten_nodes >= 1, "flatten_nodes", f"must be >= 1 (got {flatten_nodes})")
    _require(pool != "flatten" or a["readout_placement"] == "after_pool", "readout_placement",
             "pool: flatten has no per-node readout (the readout sees every node row at once)")
    _require(a["readout"] in READOUTS, "readout", f"unknown readout '{a['readout']}'; valid: {', '.join(READOUTS)}")
    _require(a["readout_placement"] in PLACEMENTS, "readout_placement",
             f"unknown placement '{a['readout_placement']}'; valid: {', '.join(PLACEMENTS)}")
    _require(a["readout_input"] in READOUT_INPUTS, "readout_input",
             f"unknown readout input '{a['readout_input']}'; valid: {', '.join(READOUT_INPUTS)}")
    _require(a["activation"] in ACTIVATION_NAMES, "activation",
             f"unknown activation '{a['activation']}'; valid: {', '.join(ACTIVATION_NAMES)}")
    _require(a["heads"] >= 1, "heads", f"must be >= 1 (got {a['heads']})")
    _require(conv_type.multi_head or (a["heads"] == 1 and not a["residual"]), "heads",
             f"heads and residual apply to attention layers only (conv '{a['conv']}')")
    _require(a["conv"] == "gin" or not a["train_eps"], "train_eps", f"applies to conv: gin only (conv '{a['conv']}')")
    widths = a["readout_hidden"]
    _require(widths is None or all(isinstance(w, int) and w >= 1 for w in widths), "readout_hidden",
             f"must be a list of widths >= 1 (got {widths})")
    _require(a["readout"] == "mlp" or widths is None, "readout_hidden", "applies to readout: mlp only")
