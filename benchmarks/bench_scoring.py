"""Scoring one reconstruction: every catalogue metric under every alignment, per graph.

    python benchmarks/bench_scoring.py [--graphs 40]

Scores random reconstructions of the first ``--graphs`` MUTAG graphs (synthetic without
``FEDGRAPH_DATA_ROOT``) three ways and prints milliseconds per graph and the ratios: as the
evaluator does now (numpy AUC / AP / F1, one torch thread), with scikit-learn's
``roc_auc_score`` / ``average_precision_score`` / ``f1_score`` patched in (what the metrics used
before), and with two torch threads. Noise between runs on 2 shared cores is large: read the
ratios.
"""

from __future__ import annotations

import argparse
import time
from contextlib import ExitStack
from unittest import mock

import torch
from sklearn.metrics import average_precision_score, f1_score, roc_auc_score
from torch_geometric.utils import to_dense_adj

from fedgraph_sim.data import available_datasets, load_dataset
from fedgraph_sim.metrics import score_reconstruction


def _sklearn_metrics():
    """The metric modules' ranking functions replaced by scikit-learn's."""
    stack = ExitStack()
    stack.enter_context(mock.patch("fedgraph_sim.metrics.reconstruction.roc_auc",
                                   lambda t, s: float(roc_auc_score(t, s))))
    stack.enter_context(mock.patch("fedgraph_sim.metrics.reconstruction.average_precision",
                                   lambda t, s: float(average_precision_score(t, s))))
    stack.enter_context(mock.patch("fedgraph_sim.metrics.gsm.weighted_f1",
                                   lambda t, p: float(f1_score(t, p, average="weighted", zero_division=0.0))))
    return stack


def per_graph_ms(cases, schema, threads: int) -> float:
    torch.set_num_threads(threads)
    score_reconstruction(*cases[0], schema=schema)  # warm-up (evaluator weights, imports)
    start = time.perf_counter()
    for case in cases:
        score_reconstruction(*case, schema=schema)
    return (time.perf_counter() - start) / len(cases) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graphs", type=int, default=40)
    args = parser.parse_args()
    data = load_dataset("MUTAG" if "MUTAG" in available_datasets() else "synthetic")
    generator = torch.Generator().manual_seed(0)
    cases = []
    for g in data.graphs[: args.graphs]:
        adj = to_dense_adj(g.edge_index, max_num_nodes=g.num_nodes)[0]
        cases.append((torch.rand(g.x.shape, generator=generator), torch.rand(adj.shape, generator=generator), g.x, adj))
    now = per_graph_ms(cases, data.schema, 1)
    with _sklearn_metrics():
        sklearn = per_graph_ms(cases, data.schema, 1)
    two_threads = per_graph_ms(cases, data.schema, 2)
    print(f"numpy metrics, 1 thread:   {now:6.1f} ms per graph")
    print(f"sklearn metrics, 1 thread: {sklearn:6.1f} ms per graph   sklearn / numpy = {sklearn / now:.1f}")
    print(f"numpy metrics, 2 threads:  {two_threads:6.1f} ms per graph   2 threads / 1 = {two_threads / now:.1f}")


if __name__ == "__main__":
    main()
