r"""GSM-N: GRAIN's graph similarity metric.

Drencheva, Petrov, Baader, Dimitrov and Vechev, "GRAIN: Exact Graph Reconstruction from
Gradients", ICLR 2025 (arXiv:2503.01838), App. B. Inspired by ROUGE-N, it compares N-hop
aggregates of the two graphs where ROUGE compares n-grams, after matching nodes.

Steps (the official code's choices are kept wherever its reported numbers depend on them):

1. Discretise the reconstruction: edges are scores >= 0.5 (symmetrised, no self-loops), and every
   node gets exactly one value per feature block (``schema.encode(schema.decode(x_hat))``). The
   truth goes through the same encode/decode, so both sides are exact encodings.
2. Size factor ``s = min(n, n') / max(n, n')``; it multiplies every GSM, so a reconstruction of
   the wrong size cannot score 1. An empty reconstruction scores 0 everywhere.
3. Node matching: the Hungarian algorithm on the squared distance between each node's features
   and its 5 layers of features in a fixed evaluation GNN (adjacency without self-loops), divided
   by the true node count; unmatched nodes are dropped and both graphs restricted to the pairs.
4. GSM-0 is the feature accuracy per block, weighted by block width, as the official code's
   reported key (named "F1" there, computed as support-weighted recall, which equals accuracy);
   the weighted F1 itself is returned as ``gsm0_f1``.
5. GSM-N (N = 1, 2) is the R^2 of the evaluation GNN's N-th layer features on the matched
   graphs, now with self-loops (A + I), with the truth as reference; times s, clipped at 0:

   .. math::
       \mathrm{GSM}\text{-}N = \max\Big(0,\; s \Big(1 - \frac{\lVert \hat F_N - F_N \rVert^2}
       {\lVert F_N - \bar F_N \rVert^2}\Big)\Big),

   with :math:`F_N` the N-th layer's features of the matched truth, :math:`\hat F_N` those of the
   matched reconstruction and :math:`\bar F_N` the mean of all entries of :math:`F_N` (for a
   constant :math:`F_N` the bracket is 1 if matched exactly, else 0).
6. ``full_repo`` counts a graph exact when GSM-1 = 1, as the official table script does. This is
   weaker than isomorphism: C6 and two disjoint C3 with equal features have equal 1-hop
   aggregates. ``full_iso`` is the strict test: equal sizes and a feature-preserving isomorphism.

The evaluation GNN is a never-trained dense GCN (5 layers of width 300, no bias, Xavier-uniform
weights, ReLU between layers) propagating with the raw adjacency. The official code draws its
weights from the global RNG without seeding, so two runs score the same reconstruction
differently; here they come from a private ``torch.Generator`` seeded with ``seed`` (default 0),
which makes scores reproducible and comparable across runs without touching the global RNG.
"""

from __future__ import annotations

from functools import lru_cache

import networkx as nx
import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

from fedgraph_sim.data.schema import FeatureSchema
from fedgraph_sim.errors import require
from fedgraph_sim.metrics.ranking import weighted_f1

GSM_METRICS = ("gsm0", "gsm1", "gsm2", "full_iso", "full_repo")
_KEYS = ("gsm0", "gsm0_f1", "gsm1", "gsm2", "full_repo", "full_iso", "size_factor")
_HOPS = (1, 2)
_EXACT_TOL = 1e-9
_ZERO_TOL = 1e-12


class EvaluationGNN:
    """A fixed random dense GCN: ``F_k = act(A @ F_{k-1} @ W_k)``, ReLU after every layer but the
    last, with whatever adjacency it is given (no normalisation, no self-loops added).

    Args:
        in_features (int): the feature width ``F``.
        seed (int, optional): seeds the private generator of the weights. (default: ``0``)
        layers (int, optional): the layers ``L``. (default: ``5``)
        width (int, optional): each layer's width. (default: ``300``)
    """

    def __init__(self, in_features: int, seed: int = 0, layers: int = 5, width: int = 300):
        generator = torch.Generator().manual_seed(seed)
        dims = [in_features] + [width] * layers
        self.weights = tuple(_xavier_uniform(d_in, d_out, generator)
                             for d_in, d_out in zip(dims[:-1], dims[1:]))

    def features(self, adj, x) -> list[torch.Tensor]:
        """``[F_1, ..., F_L]`` for adjacency ``adj [n, n]`` and features ``x [n, F]``.

        Args:
            adj (Tensor or np.ndarray): the adjacency ``[n, n]``, used as given.
            x (Tensor or np.ndarray): node features ``[n, F]``.

        Returns:
            Each layer's features ``[n, width]``, float64.
        """
        a, h = _tensor(adj), _tensor(x)
        out = []
        for k, w in enumerate(self.weights):
            h = a @ h @ w
            if k < len(self.weights) - 1:
                h = torch.relu(h)
            out.append(h)
        return out


def _xavier_uniform(fan_in: int, fan_out: int, generator: torch.Generator) -> torch.Tensor:
    # by hand rather than nn.init so the draw is float64 from the private generator
    bound = (6.0 / (fan_in + fan_out)) ** 0.5
    u = torch.rand(fan_in, fan_out, generator=generator, dtype=torch.float64)
    return (2.0 * u - 1.0) * bound


@lru_cache(maxsize=None)
def default_evaluator(in_features: int, seed: int = 0) -> EvaluationGNN:
    """The shared evaluator for a feature width (built once: 5 x 300 x 300 weights).

    Args:
        in_features (int): the feature width ``F``.
        seed (int, optional): the weights' seed. (default: ``0``)
    """
    return EvaluationGNN(in_features, seed=seed)


def _tensor(a) -> torch.Tensor:
    if isinstance(a, torch.Tensor):
        return a.detach().cpu().to(torch.float64)
    return torch.as_tensor(np.asarray(a, dtype=np.float64))


def _discretise(x, adj, schema: FeatureSchema) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(exact encoding, categorical values, binary symmetric adjacency without self-loops)."""
    cats = schema.decode(_tensor(x))
    a = (_tensor(adj) >= 0.5).to(torch.float64)
    a = torch.maximum(a, a.T)
    a.fill_diagonal_(0.0)
    return schema.encode(cats).to(torch.float64), cats, a


def match_nodes(x_hat, adj_hat, x, adj, evaluator: EvaluationGNN | None = None) -> tuple[np.ndarray, np.ndarray]:
    """GSM's node matching of ``(x_hat, adj_hat)`` onto ``(x, adj)`` as given (continuous inputs
    allowed; TabLeak's ensemble aligns its members with it): ``(reconstructed, reference)`` index
    pairs.

    Args:
        x_hat (Tensor or np.ndarray): features to match ``[n', F]``.
        adj_hat (Tensor or np.ndarray): their adjacency or edge scores ``[n', n']``.
        x (Tensor or np.ndarray): the reference features ``[n, F]``.
        adj (Tensor or np.ndarray): the reference adjacency ``[n, n]``.
        evaluator (EvaluationGNN, optional): the GNN whose layers enter the cost; None takes
            :func:`default_evaluator` of the width. (default: :obj:`None`)

    Returns:
        ``(rows, cols)``: ``min(n, n')`` pairs, as :func:`scipy.optimize.linear_sum_assignment`.
    """
    evaluator = evaluator or default_evaluator(int(np.shape(x)[1]))
    return _match(evaluator, _tensor(x_hat), _tensor(adj_hat), _tensor(x), _tensor(adj))


def _match(evaluator: EvaluationGNN, x_hat, a_hat, x, a) -> tuple[np.ndarray, np.ndarray]:
    """Hungarian matching on features plus all evaluator layers; (reconstructed, true) indices."""
    side_hat = [x_hat] + evaluator.features(a_hat, x_hat)
    side = [x] + evaluator.features(a, x)
    # exact differences, not the |p|^2 + |t|^2 - 2 p.t shortcut: deep-layer norms are large and
    # its cancellation error would swamp the feature term
    cost = sum(torch.cdist(p, t, compute_mode="donot_use_mm_for_euclid_dist").pow(2)
               for p, t in zip(side_hat, side)) / x.shape[0]
    cost = torch.nan_to_num(cost, nan=0.0).numpy()
    rows, cols = linear_sum_assignment(cost)
    return rows, cols


def _gsm0(cats_hat: torch.Tensor, cats: torch.Tensor, schema: FeatureSchema) -> tuple[float, float]:
    """Width-weighted per-block accuracy and weighted F1 (before the size factor)."""
    widths = np.array([b.width for b in schema.blocks], dtype=np.float64)
    weights = widths / widths.sum()
    pred, true = cats_hat.numpy(), cats.numpy()
    acc = np.array([(pred[:, g] == true[:, g]).mean() for g in range(len(widths))])
    f1 = np.array([weighted_f1(true[:, g], pred[:, g]) for g in range(len(widths))])
    return float(weights @ acc), float(weights @ f1)


def _r2(f_hat: torch.Tensor, f: torch.Tensor) -> float:
    """R^2 of ``f_hat`` against the reference ``f``, both flattened."""
    f_hat, f = f_hat.reshape(-1), f.reshape(-1)
    num = float(((f - f_hat) ** 2).sum())
    den = float(((f - f.mean()) ** 2).sum())
    # a constant reference has no variance to explain: exact (up to rounding) or nothing
    scale = max(1.0, float((f ** 2).sum()))
    if den <= _ZERO_TOL * scale:
        return 1.0 if num <= _ZERO_TOL * scale else 0.0
    return 1.0 - num / den


def _isomorphism(cats_hat, a_hat, cats, a) -> dict[int, int] | None:
    """A feature-preserving isomorphism, true node -> reconstructed node, or None."""
    def graph(c: torch.Tensor, adj: torch.Tensor) -> nx.Graph:
        g = nx.from_numpy_array(adj.numpy())
        nx.set_node_attributes(g, {i: tuple(row) for i, row in enumerate(c.tolist())}, "value")
        return g

    matcher = nx.algorithms.isomorphism.GraphMatcher(
        graph(cats, a), graph(cats_hat, a_hat), node_match=lambda u, v: u["value"] == v["value"])
    return dict(matcher.mapping) if matcher.is_isomorphic() else None


def gsm(x_hat, adj_hat, x, adj, schema: FeatureSchema,
        evaluator: EvaluationGNN | None = None) -> dict[str, float]:
    """GSM-0/1/2, the two exactness indicators and the size factor of one reconstruction, all
    fractions in [0, 1]. ``x_hat [n', F]`` (may be continuous), ``adj_hat [n', n']`` edge scores;
    ``x [n, F]``, ``adj [n, n]`` the truth in the model's encoding; torch or numpy.

    Args:
        x_hat (Tensor or np.ndarray): reconstructed features ``[n', F]``.
        adj_hat (Tensor or np.ndarray): edge scores ``[n', n']``.
        x (Tensor or np.ndarray): true features ``[n, F]``.
        adj (Tensor or np.ndarray): the true adjacency ``[n, n]``.
        schema (FeatureSchema): discretises both sides into one value per block.
        evaluator (EvaluationGNN, optional): the evaluation GNN; None takes
            :func:`default_evaluator` of the width. (default: :obj:`None`)

    Returns:
        ``gsm0``, ``gsm0_f1``, ``gsm1``, ``gsm2``, ``full_repo``, ``full_iso``, ``size_factor``.
    """
    return gsm_with_order(x_hat, adj_hat, x, adj, schema, evaluator)[0]


def gsm_with_order(x_hat, adj_hat, x, adj, schema: FeatureSchema,
                   evaluator: EvaluationGNN | None = None) -> tuple[dict[str, float], np.ndarray]:
    """:func:`gsm` and the node correspondence it found: per true node the reconstructed node
    (-1 if unmatched), a feature-preserving isomorphism when there is one, else GSM's matching.
    The ``gsm`` alignment of the reconstruction metrics uses it.

    Args:
        x_hat (Tensor or np.ndarray): reconstructed features ``[n', F]``.
        adj_hat (Tensor or np.ndarray): edge scores ``[n', n']`` (else :class:`ConfigError`).
        x (Tensor or np.ndarray): true features ``[n, F]``.
        adj (Tensor or np.ndarray): the true adjacency ``[n, n]`` (else :class:`ConfigError`).
        schema (FeatureSchema): discretises both sides.
        evaluator (EvaluationGNN, optional): the evaluation GNN. (default: :obj:`None`)

    Returns:
        ``(scores, order)``, ``order`` ``[n]``.
    """
    n_hat, n = int(np.shape(x_hat)[0]), int(np.shape(x)[0])
    require(tuple(np.shape(adj_hat)) == (n_hat, n_hat), "metrics.gsm",
            f"adj_hat must be [{n_hat}, {n_hat}], got {list(np.shape(adj_hat))}")
    require(tuple(np.shape(adj)) == (n, n), "metrics.gsm",
            f"adj must be [{n}, {n}], got {list(np.shape(adj))}")
    order = np.full(n, -1)
    if n_hat == 0 or n == 0:
        return dict.fromkeys(_KEYS, 0.0), order
    if evaluator is None:
        evaluator = default_evaluator(int(np.shape(x)[1]))
    s = min(n, n_hat) / max(n, n_hat)

    xh, ch, ah = _discretise(x_hat, adj_hat, schema)
    xt, ct, at = _discretise(x, adj, schema)
    rows, cols = _match(evaluator, xh, ah, xt, at)
    r, c = torch.as_tensor(rows), torch.as_tensor(cols)

    acc, f1 = _gsm0(ch[r], ct[c], schema)
    eye = torch.eye(len(rows), dtype=torch.float64)
    feats_hat = evaluator.features(ah[r][:, r] + eye, xh[r])
    feats = evaluator.features(at[c][:, c] + eye, xt[c])
    gsm_n = {f"gsm{k}": max(s * _r2(feats_hat[k - 1], feats[k - 1]), 0.0) for k in _HOPS}
    mapping = _isomorphism(ch, ah, ct, at) if n == n_hat else None
    if mapping is not None:
        for t, h in mapping.items():
            order[t] = h
    else:
        order[cols] = rows
    return {
        "gsm0": s * acc,
        "gsm0_f1": s * f1,
        **gsm_n,
        "full_repo": 1.0 if gsm_n["gsm1"] >= 1.0 - _EXACT_TOL else 0.0,
        "full_iso": 1.0 if mapping is not None else 0.0,
        "size_factor": float(s),
    }, order
