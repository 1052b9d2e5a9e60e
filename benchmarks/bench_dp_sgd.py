"""DP-SGD step time against a plain step: per-graph gradients by ``torch.func.vmap`` over the dense
model, by a per-graph loop (the fallback), and the plain mean gradient on the sparse model.

    python benchmarks/bench_dp_sgd.py [--dataset MUTAG] [--batch 32] [--repeats 20]

Prints seconds per step and ratios to the plain step (compare ratios across machines).
"""

from __future__ import annotations

import argparse
import statistics
import time


import torch

from clients.defenses import ClientTurn, build_defenses
from clients.training import fedsgd_gradient, mean_gradient
from fedgraph_sim.data import available_datasets, load_dataset
from fedgraph_sim.models import GraphClassifier


def timed(fn, repeats: int) -> float:
    fn()  # warm-up (vmap traces, allocator)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", default="MUTAG" if "MUTAG" in available_datasets() else "synthetic")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)  # one client actor per core, as in the federation
    ds = load_dataset(args.dataset)
    graphs = ds.graphs[: args.batch]
    torch.manual_seed(0)
    model = GraphClassifier(ds.num_features, ds.num_classes)
    stack = build_defenses([{"name": "dp_sgd", "noise_multiplier": 1.0, "clip": 1.0}])
    stack.begin(ClientTurn(partition_size=len(ds), batch_size=len(graphs), local_steps=1, rounds=1), {})
    step = stack.gradient_fn(torch.Generator().manual_seed(0))

    plain = timed(lambda: fedsgd_gradient(model, graphs), args.repeats)
    vmapped = timed(lambda: fedsgd_gradient(model, graphs, step), args.repeats)
    loop = timed(lambda: [mean_gradient(model, [g]) for g in graphs], args.repeats)
    print(f"{args.dataset}, batch {len(graphs)}, median of {args.repeats} steps, 1 thread")
    print(f"plain step (sparse, mean gradient): {plain * 1e3:8.2f} ms   ratio 1.00")
    print(f"dp_sgd step (vmap per-graph, clip, noise): {vmapped * 1e3:8.2f} ms   ratio {vmapped / plain:.2f}")
    print(f"per-graph loop (gradients only): {loop * 1e3:8.2f} ms   ratio {loop / plain:.2f}")


if __name__ == "__main__":
    main()
