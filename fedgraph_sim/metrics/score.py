"""Scoring one reconstruction against its true graph: every catalogue metric, per alignment."""

from __future__ import annotations

import numpy as np

from fedgraph_sim.errors import require
from fedgraph_sim.metrics.alignment import ALIGNMENTS, identity_alignment, matched_alignment
from fedgraph_sim.metrics.catalogue import all_metrics
from fedgraph_sim.metrics.gsm import GSM_METRICS, gsm_with_order
from fedgraph_sim.metrics.reconstruction import ENTRY_SETS, Aligned, as_array, structure_skipped


def graph_metrics(x_hat, adj_hat, x, adj, *, schema=None, alignment: str = "identity",
                  entries: str = "upper_offdiag", order=None, gsm: dict | None = None,
                  target: tuple[list[int], list[int]] | None = None) -> dict[str, float]:
    """Score one reconstruction. ``x_hat [n', F]``, ``adj_hat [n', n']`` scores in [0, 1];
    ``x [n, F]``, ``adj [n, n]`` the truth; ``schema`` (a ``FeatureSchema``) defines node types
    (default: the argmax over all columns); ``order`` is the ``gsm`` alignment's correspondence
    (per true node, its reconstructed node or -1). GRAIN's GSM metrics are included when their
    scores ``gsm`` are given (``score_reconstruction`` computes them). ``target``: (rows in the
    reconstruction, rows in the truth) of the node(s) a node-level attack targets.

    Args:
        x_hat (Tensor or np.ndarray): reconstructed features ``[n', F]``.
        adj_hat (Tensor or np.ndarray): edge scores ``[n', n']`` in [0, 1].
        x (Tensor or np.ndarray): true features ``[n, F]``, in the model's encoding.
        adj (Tensor or np.ndarray): the true 0/1 adjacency ``[n, n]``.
        schema (FeatureSchema, optional): defines node types. (default: :obj:`None`)
        alignment (str, optional): one of :data:`ALIGNMENTS`. (default: ``"identity"``)
        entries (str, optional): the scored adjacency entries, one of :data:`ENTRY_SETS`.
            (default: ``"upper_offdiag"``)
        order (np.ndarray, optional): the ``gsm`` alignment's correspondence, required for it.
            (default: :obj:`None`)
        gsm (dict, optional): GRAIN's scores from :func:`~fedgraph_sim.metrics.gsm.gsm`; None
            leaves the GSM metrics out. (default: :obj:`None`)
        target (tuple[list[int], list[int]], optional): the targeted rows. (default: :obj:`None`)

    Returns:
        Metric name -> value, and ``structure_skipped``.
    """
    require(alignment in ALIGNMENTS, "metrics.alignment",
            f"unknown alignment '{alignment}'; valid: {', '.join(ALIGNMENTS)}")
    require(entries in ENTRY_SETS, "metrics.entries",
            f"unknown entry set '{entries}'; valid: {', '.join(ENTRY_SETS)}")
    n = int(np.shape(x)[0])
    if alignment == "identity":
        order = identity_alignment(max(np.shape(x_hat)[0], np.shape(adj_hat)[0]), n)
    elif alignment == "matched":
        x_pad, adj_pad = _padded(as_array(x_hat), as_array(adj_hat))
        order = matched_alignment(x_pad, as_array(x), adj_pad, as_array(adj))
    else:
        require(order is not None, "metrics.alignment", "the gsm alignment needs its node correspondence")
    rows = None if target is None else (as_array(x_hat)[list(target[0])], as_array(x)[list(target[1])])
    pair = Aligned.of(x_hat, adj_hat, x, adj, order, schema=schema, entries=entries, gsm=gsm or {}, target=rows)
    out = {m.name: m.compute(pair) for m in all_metrics() if gsm is not None or m.name not in GSM_METRICS}
    out["structure_skipped"] = structure_skipped(pair)
    return out


def _padded(x_hat: np.ndarray, adj_hat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    size = max(x_hat.shape[0], adj_hat.shape[0])
    return (np.pad(x_hat, ((0, size - x_hat.shape[0]), (0, 0))),
            np.pad(adj_hat, ((0, size - adj_hat.shape[0]), (0, size - adj_hat.shape[1]))))


def score_reconstruction(x_hat, adj_hat, x, adj, *, schema, entries: str = "upper_offdiag",
                         target: tuple[list[int], list[int]] | None = None) -> dict[str, dict]:
    """Every catalogue metric of one reconstruction, per alignment (GRAIN's alignment-free GSM
    family computed once and repeated under each).

    Args:
        x_hat (Tensor or np.ndarray): reconstructed features ``[n', F]``.
        adj_hat (Tensor or np.ndarray): edge scores ``[n', n']`` in [0, 1].
        x (Tensor or np.ndarray): true features ``[n, F]``, in the model's encoding.
        adj (Tensor or np.ndarray): the true 0/1 adjacency ``[n, n]``.
        schema (FeatureSchema): the dataset's schema.
        entries (str, optional): the scored adjacency entries. (default: ``"upper_offdiag"``)
        target (tuple[list[int], list[int]], optional): (rows in the reconstruction, rows in the
            truth) of a node-level attack's targets. (default: :obj:`None`)

    Returns:
        Alignment -> :func:`graph_metrics` under it.
    """
    scores, order = gsm_with_order(x_hat, adj_hat, x, adj, schema)
    return {alignment: graph_metrics(x_hat, adj_hat, x, adj, schema=schema, alignment=alignment,
                                     entries=entries, order=order, gsm=scores, target=target)
            for alignment in ALIGNMENTS}
