r"""A user's own PyG model, federated and attacked as it is (``model: {module: "pkg.mod:Class",
args: {...}}``).

The class is constructed as ``Class(in_channels=F, out_channels=C, **args)`` (the dataset's
feature width and number of classes) and called as PyG's examples call a graph classifier,
``forward(x, edge_index, batch)``, returning one row of logits per graph. ``module`` is an import
path (``package.module:Class``) or a Python file (``path/to/file.py:Class``, relative to the
working directory).

The instance keeps the user's class and its parameter names (the weights the clients send are the
user's ``state_dict``); it gains, from :class:`UserModel`, what the bench's training and attacks
call on a model:

- :meth:`UserModel.logits_and_targets`: the logits a batch is scored on and their labels.
- :meth:`UserModel.forward_dense`: the forward on a dense, relaxed adjacency ``A`` in
  :math:`[0, 1]^{N \times N}`, for the attacks that optimise a graph. Every message-passing layer's
  message along edge :math:`j \to i` is scaled by :math:`A_{ij}` over the complete graph (PyG's
  edge masks, the mechanism of its explainers):

  .. math::
      \mathbf{m}_{i} = \bigoplus_{j \neq i} A_{ij} \, \phi(\mathbf{h}_i, \mathbf{h}_j).

  This is the model itself at a binary ``A`` only when no layer normalises over its edge set (GIN
  and other sum aggregations; not GCN's degree normalisation, mean aggregation or attention's
  softmax): :func:`relaxation_error` measures it and attacks that need it say why not otherwise.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from torch_geometric.data import Batch, Data
from torch_geometric.explain.algorithm.utils import clear_masks, set_masks
from torch_geometric.nn import MessagePassing

from fedgraph_sim.errors import ConfigError

#: The config key that names a user's model, first in the errors about it.
KEY = "model.module"


class UserModel:
    """What the bench calls on a model, for a user's class (a mixin placed before it)."""

    #: a user's model classifies graphs (node classifiers are the bench's own)
    task = "graph"
    user_model = True

    def logits_and_targets(self, batch) -> tuple[Tensor, Tensor]:
        """One row of logits per graph of the PyG ``batch`` and the graphs' labels.

        Args:
            batch (Batch): the graphs.
        """
        return self(batch.x, batch.edge_index, batch.batch), batch.y.view(-1)

    @property
    def final_linear_name(self) -> str:
        """Parameter-name prefix of the last linear map (``<prefix>.weight [C, d]`` and
        ``<prefix>.bias [C]``), whose bias gradient gives the labels away; the last registered."""
        names = dict(self.named_parameters())
        prefixes = [n.removesuffix(".weight") for n, p in names.items()
                    if n.endswith(".weight") and p.dim() == 2 and f"{n.removesuffix('.weight')}.bias" in names]
        if not prefixes:
            raise ValueError(f"{type(self).__name__} has no linear map with a bias")
        return prefixes[-1]

    def forward_dense(self, x: Tensor, adj: Tensor, mask: Tensor | None = None) -> Tensor:
        """Logits ``[B, C]`` for ``x [B, N, F]`` (or ``[N, F]``), a relaxed ``adj [B, N, N]`` and
        ``mask [B, N]``: every ordered pair of real nodes is an edge whose messages are scaled by
        ``adj`` (the module docstring).

        Args:
            x (Tensor): node features ``[B, N, F]`` or ``[N, F]``.
            adj (Tensor): the relaxed adjacency ``[B, N, N]`` or ``[N, N]``, entry ``[i, j]``
                scaling the message from ``j`` to ``i``.
            mask (Tensor, optional): the real nodes ``[B, N]`` (bool); None means every node.
                (default: :obj:`None`)
        """
        if x.dim() == 2:
            x, adj = x.unsqueeze(0), adj.unsqueeze(0)
            mask = None if mask is None else mask.unsqueeze(0)
        if mask is None:
            mask = torch.ones(x.shape[:2], dtype=torch.bool, device=x.device)
        position = torch.full(mask.shape, -1, dtype=torch.long, device=x.device)
        position[mask] = torch.arange(int(mask.sum()), device=x.device)
        pair = mask[:, :, None] & mask[:, None, :] & ~torch.eye(mask.size(1), dtype=torch.bool, device=x.device)
        b, i, j = pair.nonzero(as_tuple=True)
        edge_index = torch.stack([position[b, j], position[b, i]])  # source j, target i
        batch = mask.nonzero(as_tuple=True)[0]
        set_masks(self, adj[b, i, j], edge_index, apply_sigmoid=False)
        try:
            return self(x[mask], edge_index, batch)
        finally:
            clear_masks(self)


def load_class(path: str) -> type:
    """The class named by ``path`` (``package.module:Class`` or ``file.py:Class``); a
    :class:`ConfigError` naming ``model.module`` and why otherwise.

    Args:
        path (str): ``package.module:Class``, or ``file.py:Class`` relative to the working
            directory; it must name a :class:`torch.nn.Module` subclass.
    """
    module, name = _module_of(path, KEY)
    return _class_in(module, path.rpartition(":")[0], name)


def load_attribute(path: str, key: str):
    """The object named by ``path`` (``package.module:name`` or ``file.py:name``), e.g. a user's
    Flower ``ClientApp``; a :class:`ConfigError` naming ``key`` and why otherwise.

    Args:
        path (str): ``package.module:name`` or ``file.py:name``.
        key (str): the config key that named it, for the error.
    """
    module, name = _module_of(path, key)
    if not hasattr(module, name):
        raise ConfigError(f"{key}: {path.rpartition(':')[0]} has no attribute {name}")
    return getattr(module, name)


def _module_of(path: str, key: str):
    """The module of ``path`` (imported once per process) and the name after its colon."""
    module_name, sep, class_name = path.rpartition(":")
    if not sep or not module_name or not class_name.isidentifier():
        raise ConfigError(f"{key}: '{path}' is not 'package.module:Name' or 'path/to/file.py:Name'")
    try:
        if module_name.endswith(".py"):
            file = Path(module_name)
            if not file.is_file():
                raise ConfigError(f"{key}: no file {file} (relative to {Path.cwd()})")
            name = f"fedgraph_user_{file.stem}_{hashlib.sha1(str(file.resolve()).encode()).hexdigest()[:8]}"
            if name in sys.modules:  # loaded once per process: one class, one set of parameter names
                return sys.modules[name], class_name
            spec = importlib.util.spec_from_file_location(name, file)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module  # dataclasses and pickling look their module up
            sys.path.insert(0, str(file.resolve().parent))  # its siblings import as in its own app
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[spec.name]
                raise
        else:
            module = importlib.import_module(module_name)
    except ConfigError:
        raise
    except Exception as exc:  # the user's code: any import failure is theirs to read
        raise ConfigError(f"{key}: importing {module_name} failed: {type(exc).__name__}: {exc}") from None
    return module, class_name


def _class_in(module, module_name: str, class_name: str) -> type:
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise ConfigError(f"{KEY}: {module_name} has no torch.nn.Module subclass named {class_name}")
    return cls


def absolute(module: str) -> str:
    """``module`` with a file's path made absolute (the attack workers start elsewhere); an import
    path unchanged.

    Args:
        module (str): ``package.module:Class`` or ``file.py:Class``.
    """
    path, sep, name = module.rpartition(":")
    return f"{Path(path).resolve()}:{name}" if sep and path.endswith(".py") else module


def code_of(module: str) -> str:
    """What the attack workers must see to import ``module``: its file, or its top-level package.

    Args:
        module (str): ``package.module:Class`` or ``file.py:Class``.
    """
    path = module.rpartition(":")[0]
    return str(Path(path).resolve()) if path.endswith(".py") else path.split(".")[0]


def _accepts(fn, names: list[str]) -> str | None:
    """The first of ``names`` that ``fn`` cannot take by keyword, or None."""
    params = inspect.signature(fn).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return None
    return next((n for n in names if n not in params), None)


def _check_forward(cls: type) -> None:
    params = [p for p in inspect.signature(cls.forward).parameters.values() if p.name != "self"]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not any(p.kind is p.VAR_POSITIONAL for p in params) and len(positional) < 3:
        raise ConfigError(f"{KEY}: {cls.__name__}.forward takes {len(positional)} positional arguments; it is "
                          "called as forward(x, edge_index, batch) (PyG's graph classifiers)")
    required = [p.name for p in positional[3:] if p.default is p.empty]
    required += [p.name for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    if required:
        raise ConfigError(f"{KEY}: {cls.__name__}.forward requires {', '.join(required)} beyond "
                          "(x, edge_index, batch); give them defaults")


@lru_cache(maxsize=None)
def _adapted(cls: type) -> type:
    """``cls`` with :class:`UserModel` before it: the user's parameter names and forward."""
    return type(cls.__name__, (UserModel, cls), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})


def check_user_class(module: str, args: dict[str, Any]) -> type:
    """The class of ``module`` if it can be built with ``in_channels``, ``out_channels`` and
    ``args`` and called as ``forward(x, edge_index, batch)``; a :class:`ConfigError` otherwise.
    Only signatures are checked: nothing is built.

    Args:
        module (str): ``model.module``.
        args (dict[str, Any]): ``model.args``.
    """
    cls = load_class(module)
    missing = _accepts(cls.__init__, ["in_channels", "out_channels", *args])
    if missing is not None:
        where = "model.args." + missing if missing in args else KEY
        raise ConfigError(f"{where}: {cls.__name__}() takes no argument '{missing}'; it is built as "
                          f"{cls.__name__}(in_channels, out_channels, **model.args)")
    _check_forward(cls)
    return cls


def build_user_model(module: str, args: dict[str, Any], in_channels: int, out_channels: int) -> nn.Module:
    """``Class(in_channels=in_channels, out_channels=out_channels, **args)`` of ``module``, with
    :class:`UserModel`'s methods; a :class:`ConfigError` naming the key and why on bad input.

    Args:
        module (str): ``model.module``.
        args (dict[str, Any]): ``model.args``.
        in_channels (int): the node feature width.
        out_channels (int): the classes.
    """
    cls = check_user_class(module, args)
    try:
        return _adapted(cls)(in_channels=in_channels, out_channels=out_channels, **args)
    except Exception as exc:
        raise ConfigError(f"{KEY}: {cls.__name__}(in_channels={in_channels}, out_channels={out_channels}, "
                          f"**model.args) failed: {type(exc).__name__}: {exc}") from None


def check_forward_on(model: nn.Module, graphs: list[Data], num_classes: int) -> None:
    """Run the model on a batch of ``graphs`` as clients will: logits ``[B, num_classes]``
    (``[B]`` or ``[B, 1]`` for one output), or a :class:`ConfigError` with what came back.
    The model is left in training mode.

    Args:
        model (nn.Module): the built model.
        graphs (list[Data]): a few of the dataset's graphs.
        num_classes (int): the logits expected per graph.
    """
    batch = Batch.from_data_list(graphs)
    model.eval()
    try:
        with torch.no_grad():
            out = model(batch.x, batch.edge_index, batch.batch)
    except Exception as exc:
        raise ConfigError(f"{KEY}: forward(x, edge_index, batch) failed on {len(graphs)} of the dataset's graphs: "
                          f"{type(exc).__name__}: {exc}") from None
    finally:
        model.train()
    expected = (batch.num_graphs, num_classes)
    allowed = {expected, (batch.num_graphs,)} if num_classes == 1 else {expected}
    if not isinstance(out, Tensor) or tuple(out.shape) not in allowed:
        got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
        raise ConfigError(f"{KEY}: forward returned {got} for {batch.num_graphs} graphs; expected logits of shape "
                          f"{expected} (one row per graph: pool the nodes)")


def message_passing_layers(model: nn.Module) -> list[str]:
    """The class names of the model's message-passing layers, in registration order.

    Args:
        model (nn.Module): the model.
    """
    return [type(m).__name__ for m in model.modules() if isinstance(m, MessagePassing)]


def probe_graphs(num_features: int, dtype: torch.dtype) -> list[tuple[Tensor, Tensor]]:
    """Two fixed small graphs, ``(x, edge_index)``: a 6-ring with a chord and a 5-star, with varied
    one-hot features; what a user's model is checked on before an attack reads it.

    Args:
        num_features (int): the feature width.
        dtype (torch.dtype): the features' type.
    """
    out = []
    for n, edges in ((6, [(k, (k + 1) % 6) for k in range(6)] + [(0, 3)]), (5, [(0, k) for k in range(1, 5)])):
        edge_index = torch.tensor(edges + [(b, a) for a, b in edges]).T
        x = torch.zeros(n, num_features, dtype=dtype)
        x[torch.arange(n), (torch.arange(n) * 3 + n) % num_features] = 1.0
        out.append((x, edge_index))
    return out


def relaxation_error(model: nn.Module, num_features: int) -> float:
    """The relative difference between :meth:`UserModel.forward_dense` at a binary adjacency and
    the model's own forward, on the first of :func:`probe_graphs` (a ring with a chord): about
    1e-7 where the relaxation is the model, large where a layer normalises over its edges.

    Args:
        model (nn.Module): a built user's model (with :class:`UserModel`'s methods).
        num_features (int): its input width.
    """
    x, edge_index = probe_graphs(num_features, next(model.parameters()).dtype)[0]
    adj = torch.zeros(x.size(0), x.size(0), dtype=x.dtype)
    adj[edge_index[1], edge_index[0]] = 1.0
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            sparse = model(x, edge_index, torch.zeros(x.size(0), dtype=torch.long))
            dense = model.forward_dense(x, adj)
    finally:
        model.train(was_training)
    return float((sparse - dense).norm() / sparse.norm().clamp(min=1e-12))


#: Above this relative error the relaxed forward is not the model's (float32 sums differ by ~1e-7).
RELAXATION_TOLERANCE = 1e-4


@lru_cache(maxsize=64)
def _relaxation_problem(spec_json: str, num_features: int, num_classes: int) -> str | None:
    import json
    spec = json.loads(spec_json)
    model = build_user_model(spec["module"], spec.get("args") or {}, num_features, num_classes)
    error = relaxation_error(model, num_features)
    if error <= RELAXATION_TOLERANCE:
        return None
    layers = ", ".join(sorted(set(message_passing_layers(model)))) or "no message-passing layer"
    return (f"optimises a relaxed adjacency through PyG's edge masks, which is not this model's forward at the true "
            f"adjacency (relative error {error:.1e} on a 6-node graph; its layers: {layers}): a layer normalises "
            "over its edge set (degree normalisation, mean aggregation or attention)")


def relaxation_problem(spec: dict, num_features: int, num_classes: int) -> str | None:
    """Why attacks that optimise a relaxed adjacency cannot run on the user's model of ``spec``
    (:func:`relaxation_error` above :data:`RELAXATION_TOLERANCE`), or None. Cached per spec
    and widths (the model is built once).

    Args:
        spec (dict): the ``model`` section (``module`` and ``args``).
        num_features (int): the node feature width.
        num_classes (int): the classes.
    """
    import json
    return _relaxation_problem(json.dumps(spec, sort_keys=True, default=str), num_features, num_classes)
