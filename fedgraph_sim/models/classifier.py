"""The federated model: a GNN graph classifier with a sparse and a dense forward."""

from __future__ import annotations

import inspect
from typing import Any

import torch
from torch import Tensor, nn
from torch_geometric.nn import global_add_pool, global_max_pool, global_mean_pool
from torch_geometric.utils import to_dense_adj, to_dense_batch

from fedgraph_sim import registry
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.models.arguments import ACTIVATION_NAMES, ArgumentError, check_arguments

ACTIVATIONS = dict(zip(ACTIVATION_NAMES, (nn.ReLU, nn.ELU, nn.GELU, nn.Sigmoid)))
_SPARSE_POOL = {"sum": global_add_pool, "mean": global_mean_pool, "max": global_max_pool}


def dense_pool(h: Tensor, mask: Tensor, pool: str, flatten_nodes: int | None = None) -> Tensor:
    """Pool ``h [B, N, C]`` over the real nodes of ``mask [B, N]``; ``flatten`` pads to
    ``flatten_nodes`` rows (the padding and masked rows zero) and concatenates them.

    Args:
        h (Tensor): node rows ``[B, N, C]``.
        mask (Tensor): which rows are real nodes ``[B, N]`` (bool).
        pool (str): ``sum``, ``mean`` (over the real nodes), ``max`` or ``flatten``.
        flatten_nodes (int, optional): the rows of ``flatten``, at least ``N`` (else
            :class:`ValueError`). (default: :obj:`None`)

    Returns:
        ``[B, C]``, or ``[B, flatten_nodes * C]`` for ``flatten``.
    """
    m = mask.unsqueeze(-1).to(h.dtype)
    if pool == "flatten":
        n = h.size(1)
        if n > flatten_nodes:
            raise ValueError(f"a graph of {n} nodes does not fit the flatten readout's {flatten_nodes} rows "
                             "(flatten_nodes)")
        return torch.nn.functional.pad(h * m, (0, 0, 0, flatten_nodes - n)).flatten(1)
    if pool == "sum":
        return (h * m).sum(1)
    if pool == "mean":
        return (h * m).sum(1) / m.sum(1).clamp(min=1)
    return h.masked_fill(~mask.unsqueeze(-1), float("-inf")).amax(1)


class GraphClassifier(nn.Module):
    r"""``layers`` message-passing layers with an activation after each (including the last), a
    pooling readout and a classifier, as in GraphDLG (Wei et al. 2026, Sec. 3) by default:

    .. math::
        H_k = \mathrm{ReLU}(\mathrm{conv}_k(H_{k-1}, A)),\quad
        h_G = \mathrm{pool}(H_L),\quad \mathrm{logits} = W_{fc} h_G + b_{fc}.

    Options for other papers' victims:

    - ``readout_placement="per_node"`` applies the classifier to every node and pools the logits;
      ``readout_input="concat_input"`` feeds it ``[X_0 || H_L]`` instead of ``H_L``;
      ``readout="mlp"`` with ``readout_hidden=[300, 64]`` gives it ReLU hidden layers. With
      ``conv_bias=False``, ``last_activation=False``, ``hidden=300`` this is GRAIN's GCN
      (Drencheva et al., ICLR 2025, App. C): its readout input is the per-node row of
      ``[X_0 || H_2]``, which the first readout weight's gradient spans.
    - ``pool="flatten"`` with ``flatten_nodes=N_max``: no pooling; the node rows, padded with zero
      rows to ``N_max``, are concatenated (``h_G = vec(H_L) [N_max * C]``) and fed to the linear
      classifier, GLG's graph readout (Sinha et al., "Gradient Inversion Attack on Graph Neural
      Networks", arXiv:2411.19440, Eq. 8). Not permutation invariant. With ``conv="sage"``,
      ``activation="sigmoid"``, ``hidden=100`` this is GLG's victim.
    - ``heads`` (GAT): layers before the last concatenate their heads, the last averages them;
      ``residual`` adds a linear skip projection; ``activation="elu"``. GRAIN's GAT is
      ``heads=2, residual=True, activation="elu", last_activation=False``.
    - ``conv="gin"`` (``train_eps``: a trained ``eps``) with ``pool="sum"`` and ``readout="mlp"``
      is the GIN of PyG's TU examples (Xu et al., "How Powerful are Graph Neural Networks?",
      ICLR 2019), without their batch norm and dropout.

    - ``task="node"``: node classification, GLG's node model (Sinha et al., Sec. 3): the last
      message-passing layer outputs the ``num_classes`` logits of every node, with no pooling and
      no classifier, and by default no activation after it (``last_activation=True``: App. B's variant).
      With ``readout_placement="per_node"`` the layers keep the ``hidden`` width and the per-node
      readout gives every node's logits, with no pooling: GRAIN's node classification
      (Drencheva et al., ICLR 2025, App. B: "node classification: keep the per-node logits").

    - ``num_classes=1``: a regression head, one real output per graph (``data.task_type:
      regression``).

    No dropout or batch norm: the attacker's forward is deterministic. The class trusts its
    arguments; :func:`build_model` checks them first (:mod:`fedgraph_sim.models.arguments`).

    ``forward`` is the sparse PyG path used for training; ``forward_dense`` evaluates the same
    parameters on padded dense inputs so attacks can differentiate through a soft adjacency and
    DP-SGD can take per-graph gradients with ``torch.func.vmap``.

    Args:
        in_channels (int): the node feature width ``F``.
        num_classes (int): the logits per graph (or node); 1 for regression.
        conv (str, optional): a registered conv type (``gcn``, ``gat``, ``sage``, ``gin``).
            (default: ``"gcn"``)
        layers (int, optional): the message-passing layers. (default: ``2``)
        hidden (int, optional): their width (per head for GAT). (default: ``16``)
        pool (str, optional): ``sum``, ``mean``, ``max`` or ``flatten``. (default: ``"mean"``)
        readout (str, optional): ``linear`` or ``mlp``. (default: ``"linear"``)
        readout_placement (str, optional): ``after_pool`` or ``per_node``.
            (default: ``"after_pool"``)
        readout_input (str, optional): ``last`` (``H_L``) or ``concat_input`` (``[X_0 || H_L]``).
            (default: ``"last"``)
        readout_hidden (list[int], optional): the MLP readout's hidden widths; None is
            ``[hidden]``. (default: :obj:`None`)
        conv_bias (bool, optional): biases in the message-passing layers. (default: :obj:`True`)
        activation (str, optional): ``relu``, ``elu``, ``gelu`` or ``sigmoid``. (default: ``"relu"``)
        last_activation (bool, optional): an activation after the last layer too; None means yes
            for a graph task, no for a node task. (default: :obj:`None`)
        heads (int, optional): attention heads (GAT). (default: ``1``)
        residual (bool, optional): skip projections (GAT). (default: :obj:`False`)
        flatten_nodes (int, optional): the rows of ``pool="flatten"``, required with it and only
            then. (default: :obj:`None`)
        task (str, optional): ``graph`` or ``node``. (default: ``"graph"``)
        train_eps (bool, optional): GIN's ``eps`` trained (else fixed at 0). (default: :obj:`False`)

    Raises:
        ArgumentError: ``"<argument>: <reason>"`` for an argument it cannot take.
    """

    def __init__(self, in_channels: int, num_classes: int, *, conv: str = "gcn",
                 layers: int = 2, hidden: int = 16, pool: str = "mean",
                 readout: str = "linear", readout_placement: str = "after_pool",
                 readout_input: str = "last", readout_hidden: list[int] | None = None,
                 conv_bias: bool = True, activation: str = "relu", last_activation: bool | None = None,
                 heads: int = 1, residual: bool = False, flatten_nodes: int | None = None,
                 task: str = "graph", train_eps: bool = False) -> None:
        super().__init__()
        conv_type = registry.models.get(conv)
        hidden_widths = [hidden] if readout_hidden is None else list(readout_hidden)
        self.conv_name, self.pool, self.readout_placement, self.task = conv, pool, readout_placement, task
        # a node classifier's logits: the last layer's outputs, or (per-node readout) the readout's
        self.node_logits_from_convs = task == "node" and readout_placement != "per_node"
        self.flatten_nodes = flatten_nodes
        self.readout_input = readout_input
        self._dense_conv = conv_type.dense
        self.convs = nn.ModuleList()
        width = in_channels
        for k in range(layers):
            concat = k < layers - 1  # heads: concatenated in between, averaged at the end
            out = num_classes if self.node_logits_from_convs and k == layers - 1 else hidden
            self.convs.append(conv_type.build(width, out, bias=conv_bias, heads=heads,
                                              concat=concat, residual=residual, train_eps=train_eps))
            width = out * heads if concat else out
        # One activation module per layer so defenses can hook layer outputs (DP-Activations);
        # Identity after the last layer when last_activation is off (by default for node logits).
        if last_activation is None:
            last_activation = task == "graph"
        self.acts = nn.ModuleList(ACTIVATIONS[activation]() if k < layers - 1 or last_activation
                                  else nn.Identity() for k in range(layers))
        if self.node_logits_from_convs:
            self.classifier = None
            return
        readout_width = hidden + (in_channels if readout_input == "concat_input" else 0)
        readout_width *= flatten_nodes or 1
        if readout == "linear":
            self.classifier = nn.Linear(readout_width, num_classes)
        else:
            mlp: list[nn.Module] = []
            for w in hidden_widths:
                mlp += [nn.Linear(readout_width, w), nn.ReLU()]
                readout_width = w
            self.classifier = nn.Sequential(*mlp, nn.Linear(readout_width, num_classes))

    @property
    def final_linear(self) -> nn.Linear:
        """The last linear layer, whose gradient reveals the pooled embedding."""
        return self.classifier if isinstance(self.classifier, nn.Linear) else self.classifier[-1]

    @property
    def final_linear_name(self) -> str:
        """Parameter-name prefix of :attr:`final_linear` (``classifier`` or ``classifier.2``); for
        a node classifier the last layer's biased linear map (``convs.1`` or ``convs.1.lin_l``)."""
        if self.node_logits_from_convs:
            last = len(self.convs) - 1
            return f"convs.{last}.lin_l" if self.conv_name == "sage" else f"convs.{last}"
        if isinstance(self.classifier, nn.Linear):
            return "classifier"
        return f"classifier.{len(self.classifier) - 1}"

    @property
    def first_readout_name(self) -> str:
        """Parameter-name prefix of the classifier's first linear layer."""
        return "classifier" if isinstance(self.classifier, nn.Linear) else "classifier.0"

    def node_embeddings(self, x: Tensor, edge_index: Tensor) -> Tensor:
        """The last message-passing layer's output, after its activation (if any).

        Args:
            x (Tensor): node features ``[N, F]``.
            edge_index (Tensor): edges ``[2, E]``.

        Returns:
            ``[N, hidden]`` (``[N, num_classes]`` when a node classifier's layers give the logits).
        """
        for conv, act in zip(self.convs, self.acts):
            x = act(conv(x, edge_index))
        return x

    def _readout_rows(self, x0: Tensor, h: Tensor) -> Tensor:
        return torch.cat([x0, h], dim=-1) if self.readout_input == "concat_input" else h

    def graph_embedding(self, x: Tensor, edge_index: Tensor, batch: Tensor) -> Tensor:
        """The pooled output of the message-passing layers, ``h_G`` (GraphDLG's encoder).

        Args:
            x (Tensor): node features ``[N, F]``.
            edge_index (Tensor): edges ``[2, E]``.
            batch (Tensor): each node's graph ``[N]``.

        Returns:
            ``[B, readout_width]`` (``[B, flatten_nodes * readout_width]`` for ``flatten``).
        """
        rows = self._readout_rows(x, self.node_embeddings(x, edge_index))
        if self.pool == "flatten":
            dense, mask = to_dense_batch(rows, batch)
            return dense_pool(dense, mask, "flatten", self.flatten_nodes)
        return _SPARSE_POOL[self.pool](rows, batch)

    def forward(self, x: Tensor, edge_index: Tensor, batch: Tensor | None = None) -> Tensor:
        """The logits of a (batched) sparse graph: ``[B, num_classes]``, or ``[N, num_classes]``
        for a node classifier.

        Args:
            x (Tensor): node features ``[N, F]``.
            edge_index (Tensor): edges ``[2, E]``.
            batch (Tensor, optional): each node's graph ``[N]``; None is one graph. Unused by a
                node classifier. (default: :obj:`None`)
        """
        if self.task == "node":
            h = self.node_embeddings(x, edge_index)
            return h if self.classifier is None else self.classifier(self._readout_rows(x, h))
        if batch is None:
            batch = x.new_zeros(x.size(0), dtype=torch.long)
        if self.readout_placement == "per_node":
            rows = self._readout_rows(x, self.node_embeddings(x, edge_index))
            return _SPARSE_POOL[self.pool](self.classifier(rows), batch)
        return self.classifier(self.graph_embedding(x, edge_index, batch))

    def logits_and_targets(self, batch) -> tuple[Tensor, Tensor]:
        """The logits a PyG ``Batch`` is scored on and their labels: one row per graph, or per
        labelled node (``train_mask``, ``node_y``) for a node classifier.

        Args:
            batch (Batch): the graphs.
        """
        logits = self(batch.x, batch.edge_index, batch.batch)
        if self.task == "node":
            return logits[batch.train_mask], batch.node_y[batch.train_mask]
        return logits, batch.y.view(-1)

    def dense_node_embeddings(self, x: Tensor, adj: Tensor, mask: Tensor) -> Tensor:
        """:meth:`node_embeddings` on padded dense inputs, padding rows zero after every layer.

        Args:
            x (Tensor): node features ``[B, N, F]``.
            adj (Tensor): the (possibly soft) adjacency ``[B, N, N]``, zero diagonal.
            mask (Tensor): the real nodes ``[B, N]`` (bool).
        """
        m = mask.unsqueeze(-1).to(x.dtype)
        for conv, act in zip(self.convs, self.acts):
            x = act(self._dense_conv(conv, x, adj)) * m
        return x

    def forward_dense(self, x: Tensor, adj: Tensor, mask: Tensor | None = None) -> Tensor:
        """Logits for ``x [B, N, F]`` (or ``[N, F]``), ``adj [B, N, N]``, ``mask [B, N]``: ``[B, C]``,
        or ``[B, N, C]`` for a node classifier (padding rows zero).

        Args:
            x (Tensor): node features ``[B, N, F]`` or ``[N, F]``.
            adj (Tensor): the (possibly soft) adjacency ``[B, N, N]`` or ``[N, N]``, zero diagonal.
            mask (Tensor, optional): the real nodes ``[B, N]`` (bool); None means every node.
                (default: :obj:`None`)
        """
        if x.dim() == 2:
            x, adj = x.unsqueeze(0), adj.unsqueeze(0)
            mask = None if mask is None else mask.unsqueeze(0)
        if mask is None:
            mask = torch.ones(x.shape[:2], dtype=torch.bool, device=x.device)
        if self.task == "node":
            h = self.dense_node_embeddings(x, adj, mask)
            if self.classifier is None:
                return h
            return self.classifier(self._readout_rows(x, h)) * mask.unsqueeze(-1).to(x.dtype)
        return self.readout_dense(self._readout_rows(x, self.dense_node_embeddings(x, adj, mask)), mask)

    @property
    def readout_width(self) -> int:
        """The width of one node's row at the pooling (or per-node readout) input: ``hidden``, or
        ``in_channels + hidden`` with ``readout_input="concat_input"``. A node classifier whose last
        layer gives the logits has neither (:meth:`readout_dense` could not run on such rows), so it
        raises :class:`ValueError`."""
        if self.classifier is None:
            raise ValueError("a node classifier whose last layer gives the logits has no readout "
                             "(readout_placement='per_node' gives it one)")
        first = self.classifier if isinstance(self.classifier, nn.Linear) else self.classifier[0]
        return first.in_features // (self.flatten_nodes or 1)

    def readout_dense(self, rows: Tensor, mask: Tensor) -> Tensor:
        """Pooling and classifier on the readout rows ``[B, N, readout_width]`` (the last layer's
        node embeddings): the logits ``[B, C]``. Attacks that optimise embeddings (GRA-GFA) start here.

        Args:
            rows (Tensor): the readout rows ``[B, N, readout_width]``.
            mask (Tensor): the real nodes ``[B, N]`` (bool).
        """
        if self.readout_placement == "per_node":
            return dense_pool(self.classifier(rows), mask, self.pool)
        return self.classifier(dense_pool(rows, mask, self.pool, self.flatten_nodes))


def build_model(spec: Any, num_features: int, num_classes: int) -> nn.Module:
    """The model of the config's ``model`` section ``spec`` (a ``ModelConfig`` or its dict, as the
    attacker's knowledge carries the architecture) for data of ``num_features`` and
    ``num_classes``: the one way the server, the clients, the baseline and the attacker build it.
    A :class:`GraphClassifier`, or the user's class of ``model.module`` (:mod:`.user`).

    Args:
        spec (ModelConfig or dict): the ``model`` section (a preset already expanded).
        num_features (int): the node feature width.
        num_classes (int): the classes (1 for regression).

    Raises:
        ConfigError: ``model.<key>: <reason>`` for an option the classifier refuses.
    """
    options = dict(spec if isinstance(spec, dict) else spec.model_dump())
    module, args = options.pop("module", None), options.pop("args", None) or {}
    options.pop("preset", None)  # already laid under the options (models.presets.expand)
    if module is not None:
        from fedgraph_sim.models.user import build_user_model
        return build_user_model(module, args, num_features, num_classes)
    bound = inspect.signature(GraphClassifier).bind(num_features, num_classes, **options)
    bound.apply_defaults()
    try:
        check_arguments(bound.arguments)
    except (ArgumentError, ConfigError) as exc:  # the classifier's argument is the config's model.<key>
        raise ConfigError(f"model.{exc}") from None
    return GraphClassifier(*bound.args, **bound.kwargs)


class DenseForward(nn.Module):
    """``model.forward_dense`` as a module's ``forward``, for ``torch.func.functional_call`` with
    substituted weights (parameter names gain the prefix ``model.``)."""

    def __init__(self, model: GraphClassifier) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: Tensor, adj: Tensor, mask: Tensor) -> Tensor:
        """``model.forward_dense(x, adj, mask)``.

        Args:
            x (Tensor): node features ``[B, N, F]``.
            adj (Tensor): the adjacency ``[B, N, N]``.
            mask (Tensor): the real nodes ``[B, N]`` (bool).
        """
        return self.model.forward_dense(x, adj, mask)


def to_dense(batch) -> tuple[Tensor, Tensor, Tensor]:
    """``(x [B, N, F], adj [B, N, N], mask [B, N])`` for a PyG ``Batch`` (or single ``Data``).

    Args:
        batch (Batch or Data): the graphs; ``N`` is the largest node count.
    """
    index = getattr(batch, "batch", None)
    if index is None:
        index = batch.x.new_zeros(batch.num_nodes, dtype=torch.long)
    x, mask = to_dense_batch(batch.x, index)
    adj = to_dense_adj(batch.edge_index, index, max_num_nodes=x.size(1))
    return x, adj, mask
