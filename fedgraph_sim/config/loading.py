"""Reading a run configuration: a YAML file laid over the packaged base, dotted ``key=value``
overrides (parsed as YAML), validated against the schema and the cross-field checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from fedgraph_sim.config.checks import check_cross_fields
from fedgraph_sim.config.sections import RunConfig
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.plugins import load_plugins
from fedgraph_sim.yaml_files import read_yaml

PACKAGE = Path(__file__).resolve().parents[1]
# The base every config is laid over (a file's missing keys, every sweep's and reproduction's
# base): the GraphDLG paper's victim. Packaged; experiments/configs/default.yaml links here.
DEFAULT_CONFIG = PACKAGE / "default.yaml"
# The default round, what `fedgraph-sim run` runs without --config: a victim the exact attack can
# attack. Packaged; experiments/configs/default_round.yaml links here.
DEFAULT_ROUND = PACKAGE / "default_round.yaml"


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``["federation.rounds=2", ...]`` -> ``{"federation.rounds": 2, ...}``, values parsed as YAML
    (an empty value is null); the one parser of command-line overrides.

    Args:
        items (list[str]): ``key=value`` strings, split at the first ``=``, both sides stripped.

    Raises:
        ConfigError: for an item without ``=`` or a value that is not valid YAML.
    """
    out = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"{item}: overrides are dotted key=value pairs, e.g. federation.rounds=2")
        key, raw = (part.strip() for part in item.split("=", 1))
        try:
            out[key] = yaml.safe_load(raw) if raw != "" else None
        except yaml.YAMLError as exc:
            raise ConfigError(f"{key}: the value is not valid YAML ({str(exc).splitlines()[0]})") from None
    return out


def default_tree() -> dict:
    """The packaged default config as a plain tree (the base every config file is laid over)."""
    return yaml.safe_load(DEFAULT_CONFIG.read_text())


#: Keys of the ``model`` section that name a whole model: setting one replaces the section, so the
#: keys of a config laid under it (the packaged default's GCN) do not override the model it names.
WHOLE_MODEL = ("preset", "module")


def _names_whole_model(value: Any) -> bool:
    return isinstance(value, dict) and any(value.get(k) is not None for k in WHOLE_MODEL)


def merge_tree(tree: dict, patch: dict, top: bool = True) -> dict:
    """``tree`` with ``patch`` laid over it, section by section (a new dict; lists replaced); a
    ``model`` section naming a whole model (:data:`WHOLE_MODEL`) replaces the one under it.

    Args:
        tree (dict): the config tree underneath (not modified).
        patch (dict): the tree laid over it; its values win.
        top (bool, optional): whether these are the top-level sections, where a whole-model
            ``model`` replaces the one under it. (default: :obj:`True`)
    """
    out = dict(tree)
    for key, value in patch.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        if both and top and key == "model" and _names_whole_model(value):
            both = False
        out[key] = merge_tree(out[key], value, top=False) if both else value
    return out


def set_dotted(tree: dict, dotted: dict[str, Any]) -> dict:
    """Set each ``section.key`` of ``dotted`` in ``tree`` (in place; returns it). A mapping value
    is laid over the mapping already there (``model={conv: gat}`` keeps the other model keys);
    anything else replaces it. ``model.preset`` and ``model.module`` name a whole model and
    replace the ``model`` section (set ``model.args`` after ``model.module``).

    Args:
        tree (dict): the config tree to change.
        dotted (dict[str, Any]): dotted key -> value, applied in order (e.g. from
            :func:`parse_overrides`).

    Raises:
        ConfigError: when a key's parent is a value, not a section.
    """
    for key, value in dotted.items():
        _set_dotted(tree, key, value)
    return tree


def _set_dotted(tree: dict, dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    if len(keys) == 2 and keys[0] == "model" and keys[1] in WHOLE_MODEL and value is not None:
        tree["model"] = {keys[1]: value}  # a whole model: the section's other keys described another
        return
    if keys == ["model"] and _names_whole_model(value):
        tree["model"] = dict(value)
        return
    node = tree
    for key in keys[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{dotted}: '{key}' is not a section")
        node = child
    old = node.get(keys[-1])
    node[keys[-1]] = merge_tree(old, value, top=False) if isinstance(value, dict) and isinstance(old, dict) else value


def _check_keys(tree: dict, model: type[BaseModel], prefix: str = "") -> None:
    """Unknown keys, named with their full dotted path (pydantic's message is multi-line)."""
    for key, value in tree.items():
        field = model.model_fields.get(key)
        if field is None:
            valid = ", ".join(model.model_fields)
            raise ConfigError(f"{prefix}{key}: no such config key; valid keys here: {valid}")
        sub = field.annotation
        if isinstance(value, dict) and isinstance(sub, type) and issubclass(sub, BaseModel):
            _check_keys(value, sub, f"{prefix}{key}.")


def load_config(path: str | Path | None = None, overrides: list[str] = ()) -> RunConfig:
    """Read YAML (default: the packaged ``default.yaml``), apply ``key=value`` overrides (values
    parsed as YAML), validate. Raises ConfigError naming the offending key.

    Args:
        path (str or Path, optional): the YAML config; its missing keys take the schema's defaults
            (the packaged ``default.yaml``'s). A model or ClientApp file named relative to it
            (``gin.py:Net``) is resolved beside it. (default: :obj:`None`)
        overrides (list[str], optional): ``key=value`` overrides, applied in order after the
            file. (default: ``()``)
    """
    path = Path(path) if path else DEFAULT_CONFIG
    tree = read_yaml(path) or {}
    if not isinstance(tree, dict):
        raise ConfigError(f"--config: {path} must hold a mapping of sections")
    _model_file_beside(tree, path.parent)
    return validate_config(set_dotted(tree, parse_overrides(overrides)))


def _model_file_beside(tree: dict, folder: Path) -> None:
    """A user's model or ClientApp given as a file beside the config (``model.module: gin.py:Net``,
    ``federation.client_app: client_app.py:app``) is named by its absolute path, so the config
    works from any working directory."""
    for section, key in (("model", "module"), ("federation", "client_app")):
        node = tree.get(section)
        value = node.get(key) if isinstance(node, dict) else None
        if isinstance(value, str) and ":" in value:
            file, _, name = value.rpartition(":")
            if file.endswith(".py") and not Path(file).is_absolute() and (folder / file).is_file():
                node[key] = f"{(folder / file).resolve()}:{name}"


def validate_config(tree: dict) -> RunConfig:
    """The :class:`RunConfig` of a config tree: unknown keys refused by their dotted path, a
    ``model.preset`` expanded, ``train.loss: mse`` set for a regression task that names no loss,
    the schema validated, ``plugins`` imported, then :func:`check_cross_fields`.

    Args:
        tree (dict): the config as a plain tree (e.g. parsed YAML with overrides set).

    Raises:
        ConfigError: the first problem, one line naming the key.
    """
    _check_keys(tree, RunConfig)
    if isinstance(tree.get("model"), dict) and tree["model"].get("preset") is not None:
        from fedgraph_sim.models.presets import expand
        tree = {**tree, "model": expand(tree["model"])}
    data, train = tree.get("data"), tree.get("train")
    if isinstance(data, dict) and data.get("task_type") == "regression" and not (isinstance(train, dict)
                                                                               and "loss" in train):
        tree = merge_tree(tree, {"train": {"loss": "mse"}})  # a regression task trains with MSE unless told
    try:
        config = RunConfig.model_validate(tree)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        got = err.get("input")
        message = err["msg"].removeprefix("Value error, ")
        raise ConfigError(f"{key}: {message} (got {got!r})") from None
    load_plugins(config.plugins)
    check_cross_fields(config)
    return config


def config_hash(config: RunConfig) -> str:
    """The SHA-256 of the resolved config (every key, defaults included, as canonical JSON): two
    runs with the same hash ran the same configuration, whatever file and overrides gave it.

    Args:
        config (RunConfig): the validated config.

    Returns:
        The hex digest (64 characters).
    """
    import hashlib
    import json

    return hashlib.sha256(json.dumps(config.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()


def to_yaml(config: RunConfig, extra: dict | None = None) -> str:
    """The resolved config as YAML, every key in schema order (what a run writes as its
    ``config.yaml``).

    Args:
        config (RunConfig): the validated config.
        extra (dict, optional): top-level entries added after the sections (e.g. the run's
            provenance); a key of the config is replaced. (default: :obj:`None`)
    """
    tree = config.model_dump(mode="json")
    if extra:
        tree.update(extra)
    return yaml.safe_dump(tree, sort_keys=False)
