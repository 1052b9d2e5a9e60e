"""Foundation benchmark: dataset load times (first vs cached) and sparse vs dense model steps.

    python benchmarks/bench_foundation.py [--repeats 50]

Run-to-run noise on shared 2-core machines is large: read the ratios, not the absolute seconds.
Loads use a fresh temporary cache, so "first" includes PyG processing of the raw files.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings

import torch
from torch_geometric.data import Batch

from fedgraph_sim.data import available_datasets, load_dataset
from fedgraph_sim.models import GraphClassifier, to_dense

DATASETS = ("synthetic", "MUTAG", "PTC_MR", "AIDS", "ENZYMES", "PROTEINS", "Tox21", "ClinTox", "BBBP")


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def bench_loading() -> None:
    names = [n for n in DATASETS if n in available_datasets()]
    print(f"{'dataset':<10} {'graphs':>7} {'first s':>8} {'cached s':>9} {'first/cached':>13}")
    with tempfile.TemporaryDirectory() as cache, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        os.environ["FEDGRAPH_CACHE"] = cache
        for name in names:
            data, first = timed(load_dataset, name)
            _, cached = timed(load_dataset, name)
            print(f"{name:<10} {len(data):>7} {first:>8.2f} {cached:>9.2f} {first / cached:>13.1f}")


def bench_model(repeats: int) -> None:
    name = "MUTAG" if "MUTAG" in available_datasets() else "synthetic"
    data = load_dataset(name)
    batch = Batch.from_data_list(data.graphs[:32])
    model = GraphClassifier(data.num_features, data.num_classes)
    ce = torch.nn.functional.cross_entropy
    dense_inputs = to_dense(batch)

    def sparse_step():
        model.zero_grad()
        ce(model(batch.x, batch.edge_index, batch.batch), batch.y).backward()

    def dense_step():
        model.zero_grad()
        ce(model.forward_dense(*dense_inputs), batch.y).backward()

    def dense_step_with_conversion():
        model.zero_grad()
        ce(model.forward_dense(*to_dense(batch)), batch.y).backward()

    results = {}
    for label, step in [("sparse", sparse_step), ("dense", dense_step),
                        ("dense+to_dense", dense_step_with_conversion)]:
        for _ in range(5):
            step()
        start = time.perf_counter()
        for _ in range(repeats):
            step()
        results[label] = (time.perf_counter() - start) / repeats
    print(f"\nforward+backward, default model (2-layer GCN, hidden 16, mean pool), "
          f"batch of 32 {name} graphs, {torch.get_num_threads()} threads, {repeats} repeats")
    for label, seconds in results.items():
        print(f"  {label:<15} {seconds * 1e3:8.3f} ms   ratio to sparse {seconds / results['sparse']:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    bench_loading()
    bench_model(args.repeats)
