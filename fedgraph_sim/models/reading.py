"""A user's model read as the bench's :class:`~fedgraph_sim.models.GraphClassifier`, for attacks
that replay a model layer by layer (GRAIN): which classifier computes the same function, and
which of the user's parameters is which of its own.

The reading is taken from the module, then proved on numbers. From the module: its
message-passing layers in registration order (``GCNConv``, ``GINConv`` over a ``Linear, ReLU,
Linear`` MLP, ``SAGEConv`` with mean aggregation), each layer's parameters in order, and the
parameters outside them (the head: linear maps, read as a linear or MLP readout). What a forward
does between them (the activation after each layer, the pooling) is not in the module, so each
candidate (sum, mean or max pooling) is built with the user's weights and kept only if it gives
the user's outputs on fixed graphs. A model whose training forward is random (dropout) or
normalises over the batch (batch norm) is refused with the reason: its clients' gradients are not
a function of their graphs and the weights alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch_geometric.nn import GCNConv, GINConv, MessagePassing, SAGEConv

from fedgraph_sim.models.classifier import GraphClassifier
from fedgraph_sim.models.user import probe_graphs

#: The user's layer types a reading understands, as ``model.conv`` names.
CONVS = {GCNConv: "gcn", GINConv: "gin", SAGEConv: "sage"}
POOLS = ("sum", "mean", "max")


@dataclass(frozen=True)
class ClassifierReading:
    """Args:
        spec: the :class:`GraphClassifier` keyword arguments that compute the user's function.
        names: the user's parameter name of each of the classifier's.
    """

    spec: dict
    names: dict[str, str]

    def arrays(self, user_arrays: dict) -> dict:
        """The user's arrays (weights or a gradient) under the classifier's names; buffers the
        classifier has no use for are left out.

        Args:
            user_arrays (dict): arrays under the user's parameter names.
        """
        return {ours: user_arrays[theirs] for ours, theirs in self.names.items() if theirs in user_arrays}


def _outputs(model: nn.Module, graphs, train: bool) -> Tensor:
    was = model.training
    model.train(train)
    try:
        with torch.no_grad():
            return torch.cat([model(x, e, torch.zeros(x.size(0), dtype=torch.long)) for x, e in graphs])
    finally:
        model.train(was)


def _random_training_forward(model: nn.Module, graphs) -> str | None:
    norms = [n for n, m in model.named_modules() if "norm" in type(m).__name__.lower()]
    if norms:
        return (f"{norms[0]} ({type(dict(model.named_modules())[norms[0]]).__name__}) normalises node states "
                "over the batch's nodes in training: a node's state is no longer a function of its neighbourhood")
    torch.manual_seed(0)
    first = _outputs(model, graphs, train=True)
    torch.manual_seed(1)
    if not torch.equal(first, _outputs(model, graphs, train=True)):
        return ("its training forward is random (dropout): a client's gradient depends on masks the server never "
                "sees, so no replay can be exact")
    return None


def read_as_classifier(model: nn.Module, num_features: int, num_classes: int) -> ClassifierReading | str:
    """The :class:`ClassifierReading` of ``model``, or why there is none. It runs the model's
    training forward twice, under seeds 0 and 1, to detect randomness, and builds candidate
    classifiers to compare with it; all on a forked generator, so torch's global generator is left
    as it was (the caller's later draws do not depend on whether it read a model).

    Args:
        model (nn.Module): the user's model (built with its weights).
        num_features (int): its input width.
        num_classes (int): its output width.

    Returns:
        The reading, or one line saying why the model is not read.
    """
    with torch.random.fork_rng():
        return _read(model, num_features, num_classes)


def _read(model: nn.Module, num_features: int, num_classes: int) -> ClassifierReading | str:
    dtype = next(model.parameters()).dtype
    graphs = probe_graphs(num_features, dtype)
    reason = _random_training_forward(model, graphs)
    if reason is not None:
        return reason
    passing = [(n, m) for n, m in model.named_modules() if isinstance(m, MessagePassing)]
    layers = [(n, m) for n, m in passing if not any(n.startswith(f"{o}.") for o, _ in passing)]  # outermost
    if not layers:
        return "has no message-passing layer"
    kinds = {type(m) for _, m in layers}
    if len(kinds) > 1 or next(iter(kinds)) not in CONVS:
        names = ", ".join(sorted(t.__name__ for t in kinds))
        return f"its layers ({names}) are not one of {', '.join(t.__name__ for t in CONVS)}, all of one type"
    conv = CONVS[next(iter(kinds))]
    if conv == "sage" and any(getattr(m, "aggr", "mean") != "mean" for _, m in layers):
        return "SAGEConv is read with mean aggregation only"
    params = dict(model.named_parameters())
    in_layer = {p for n, _ in layers for p in params if p.startswith(f"{n}.")}
    head = [p for p in params if p not in in_layer]
    head_maps = [p for p in head if p.endswith(".weight") and params[p].dim() == 2]
    if not head_maps:
        return "has no linear head after its message-passing layers"
    hidden = params[head_maps[0]].size(1)
    readout_hidden = [params[p].size(0) for p in head_maps[:-1]]
    eps_trained = conv == "gin" and any(getattr(m, "eps", None) is not None and isinstance(m.eps, nn.Parameter)
                                        for _, m in layers)
    spec = dict(conv=conv, layers=len(layers), hidden=hidden,
                readout="mlp" if readout_hidden else "linear", readout_hidden=readout_hidden or None,
                conv_bias=all(params.get(f"{n}.bias") is not None or conv == "gin" for n, _ in layers),
                train_eps=eps_trained)
    if conv == "gin":  # biases inside the MLP: on if the user's first map has one
        spec["conv_bias"] = any(p.startswith(f"{layers[0][0]}.") and p.endswith(".bias") for p in params)
    target = _outputs(model, graphs, train=False)
    for pool in POOLS:
        try:
            candidate = GraphClassifier(num_features, num_classes, pool=pool, **spec).to(dtype)
        except Exception:  # a combination the classifier refuses (e.g. widths): no reading
            return f"no GraphClassifier of {len(layers)} {conv} layers of width {hidden} takes its shapes"
        names = _match(candidate, model, [n for n, _ in layers])
        if names is None:
            return (f"its parameters do not map onto {len(layers)} {conv} layers of width {hidden} and a "
                    f"{'MLP' if readout_hidden else 'linear'} head (shapes or counts differ)")
        candidate.load_state_dict({ours: params[theirs].detach() for ours, theirs in names.items()}, strict=False)
        out = _outputs(candidate, graphs, train=False)
        if out.shape == target.shape and torch.allclose(out, target, rtol=1e-4, atol=1e-5 * float(target.abs().max())):
            return ClassifierReading({**spec, "pool": pool}, names)
    return (f"its forward is not one GRAIN reads: no {len(layers)}-layer {conv} classifier with ReLU after every "
            "layer, sum, mean or max pooling and its head gives its outputs")


def _match(candidate: GraphClassifier, model: nn.Module, user_layers: list[str]) -> dict[str, str] | None:
    """The classifier's parameter names -> the user's, layer by layer and then the head, in order
    and of equal shapes; None when they differ."""
    ours = dict(candidate.named_parameters())
    theirs = dict(model.named_parameters())
    groups_ours = [[n for n in ours if n.startswith(f"convs.{k}.")] for k in range(len(user_layers))]
    groups_theirs = [[n for n in theirs if n.startswith(f"{u}.")] for u in user_layers]
    head_ours = [n for n in ours if not n.startswith("convs.")]
    head_theirs = [n for n in theirs if not any(n.startswith(f"{u}.") for u in user_layers)]
    names = {}
    for a, b in [*zip(groups_ours, groups_theirs), (head_ours, head_theirs)]:
        if len(a) != len(b) or any(ours[x].shape != theirs[y].shape for x, y in zip(a, b)):
            return None
        names.update(zip(a, b))
    return names
