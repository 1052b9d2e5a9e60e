r"""GLG's closed forms (Props. 1-6, :mod:`attacks.glg.analytic`) as the optimisation's starting
point and as a diagnostic (Sinha et al., arXiv:2411.19440, Sec. 4).

From what the attacker holds (the gradient, per-node gradients for Node-2, a granted X or A) and
the victim's first layer, :func:`analytic_start` gives, where a proposition applies:

- Graph-a, GraphSAGE (Prop. 6): :math:`\tilde A = X (\nabla W_2)^+ \nabla W_1 X^+`, its
  off-diagonal support as the initial adjacency;
- Node-2, GraphSAGE: each node's features from its own root-weight gradient (Prop. 2) unless X
  is granted, its aggregate from the neighbour-weight gradient (Prop. 1), and
  :math:`\tilde A = X_{agg} X^+` (Prop. 5) unless A is granted;
- Node-2b, GCN (Prop. 4): :math:`X = \tilde A^+ X_{agg}` with :math:`\tilde A` from the granted A.

It always reports the rank conditions the attacker can check (:func:`rank_conditions`) and the
rank-one residual of the ratios it took (0: exact; in a two-layer model's first layer the
neighbours mix, so it is not), and why no start exists where none does. A start is used only
where its rank condition holds; the optimisation then refines it (``analytic_init: true``, ours:
the paper presents the propositions as attacks of their own, not as initialisers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from attacks.glg.analytic import (adjacency_from_aggregates, edges, features_from_aggregates, rank_conditions,
                                  row_ratio, sage_graph_adjacency)
from fedgraph_sim.models import GraphClassifier
from fedgraph_sim.models.convs import gcn_normalised


@dataclass(frozen=True)
class AnalyticStart:
    x: Tensor | None = None  # [N, D] initial features
    adj: Tensor | None = None  # [N, N] initial (binary) adjacency
    info: dict = field(default_factory=dict)  # rank conditions, residuals, or why there is no start


def _first_layer(model: GraphClassifier) -> dict[str, str]:
    if model.conv_name == "sage":
        return {"neighbour": "convs.0.lin_l.weight", "root": "convs.0.lin_r.weight", "bias": "convs.0.lin_l.bias"}
    if model.conv_name == "gcn":
        return {"neighbour": "convs.0.lin.weight", "bias": "convs.0.bias"}
    return {}


def analytic_start(model: GraphClassifier, gradient: dict[str, Tensor], *, x: Tensor | None = None,
                   adj: Tensor | None = None, per_node: dict[str, Tensor] | None = None) -> AnalyticStart:
    """The closed-form starting point of this variant (see the module docstring), computed in float64;
    ranks are taken in float32, the precision of the observed gradient, whose rounding would
    otherwise count as rank."""
    names = _first_layer(model)
    if not names:
        return AnalyticStart(info={"analytic": f"no closed form for conv '{model.conv_name}'"})
    x64 = None if x is None else x.double()
    if per_node is None:  # graph classification
        if model.conv_name != "sage" or x64 is None or adj is not None:
            return AnalyticStart(info={"analytic": "closed form only for Graph-a on GraphSAGE (Prop. 6)"})
        root, neighbour = gradient[names["root"]].double(), gradient[names["neighbour"]].double()
        checks = rank_conditions(x64.float(), root.float())  # ranks at the gradient's own precision
        info = {"analytic": "prop_6", **checks}
        if not checks["gradient_full_row_rank"]:
            return AnalyticStart(info=info)
        return AnalyticStart(adj=edges(sage_graph_adjacency(x64, neighbour, root)).float(), info=info)
    return _node_start(model, names, per_node, x64, None if adj is None else adj.double())


def _node_start(model, names, per_node, x64, adj64) -> AnalyticStart:
    bias = per_node[names["bias"]].double()
    aggregates = [row_ratio(g.double(), b) for g, b in zip(per_node[names["neighbour"]], bias)]
    x_agg = torch.stack([r.value for r in aggregates])
    info = {"aggregate_residual": max(r.residual for r in aggregates)}
    if model.conv_name == "gcn":
        if adj64 is None or x64 is not None:
            return AnalyticStart(info={"analytic": "closed form only for Node-2b on GCN (Prop. 4)", **info})
        a_tilde = gcn_normalised(adj64)
        checks = rank_conditions(a_tilde=a_tilde.float())
        info.update(analytic="prop_4", **checks)
        return AnalyticStart(x=features_from_aggregates(a_tilde, x_agg).float() if checks["a_full_column_rank"]
                             else None, info=info)
    start_x = x64
    if start_x is None:
        roots = [row_ratio(g.double(), b) for g, b in zip(per_node[names["root"]], bias)]
        start_x = torch.stack([r.value for r in roots])
        info["feature_residual"] = max(r.residual for r in roots)
    checks = rank_conditions(start_x.float())
    info.update(analytic="prop_5" if x64 is None else "prop_1", **checks)
    start_adj = None
    if adj64 is None and checks["x_full_row_rank"]:
        start_adj = edges(adjacency_from_aggregates(x_agg, start_x)).float()
    return AnalyticStart(x=None if x64 is not None else start_x.float(), adj=start_adj, info=info)
