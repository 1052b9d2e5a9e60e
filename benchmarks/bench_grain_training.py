"""GRAIN where federations train: seconds per molecule by batch size and local steps, with the
quality each bought.

    python benchmarks/bench_grain_training.py [--graphs 40] [--budget 120] [--settings 1x1 4x1 1x5]
                                               [--coordinates] [--witnessed-order] [--coordinate-batches 2]

Victims: the first ``--graphs`` molecules of the seed-42 shuffle of Tox21 (grain_training.yaml's),
GRAIN's GCN at its initial weights. A setting ``BxK`` attacks one update per ``B`` consecutive
molecules: a FedSGD step on the batch (``K`` = 1, the [ext] ``batches`` option when ``B`` > 1) or
``K`` local SGD steps of lr 0.01 on one molecule (the [ext] ``local_steps`` option). The budget is
``--budget`` seconds per molecule (``B`` times that per update). Printed per setting: seconds per
molecule (an update's time over its molecules; median, p90 and mean: the whole setting's time over
its molecules), the molecules matched exactly, and the ratios of each setting's median and mean
seconds per molecule to ``1x1``'s (a batch of 4 in at most 4x the time of one molecule is a ratio
of at most 1). The median is the typical update; the mean is the time an audit of all of them
takes, where a few large molecules dominate a single graph's setting. Without FEDGRAPH_DATA_ROOT it runs on
``synthetic`` with a degree block.

``--coordinates`` also times the 1-hop enumeration of the first ``--coordinate-batches`` batches of
4 with the screen on a few coordinates of layer 1's output against the float32 screen on all of
them (the same blocks either way; the ratio is printed). ``--witnessed-order`` times the same
enumeration in the plain order (degrees 1 and 2 in full, then the higher ones on witnessed types)
against the witnessed order (degree 2 around witnessed types first), which keeps the likeliest
blocks when a time limit cuts it and finds the same blocks when none does: the ratio is its cost.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch

from attacks.base import AttackContext, AttackFailed, AttackTimeout, Budget
from attacks.grain import GRAIN
from attacks.grain.blocks import witnessed_one_hop_blocks
from attacks.grain.embed import StarLayer
from attacks.grain.nodes import propose_nodes
from attacks.grain.spancheck import RowSpace
from clients.training import fedavg_weights, mean_gradient
from fedgraph_sim.evaluation.batch import batch_assignment
from fedgraph_sim.metrics.gsm import gsm
from fedgraph_sim.models import to_dense
from fedgraph_sim.threat import ObservedUpdate
from grain_victims import grain_victims


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def update_of(model, graphs, steps: int) -> ObservedUpdate:
    """What the server receives: the batch's gradient, or the weights after ``steps`` SGD steps."""
    weights = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    if steps == 1:
        grad, _ = mean_gradient(model, graphs, "bce")
        returned, kind = {k: v.numpy() for k, v in grad.items()}, "gradient"
    else:
        back, _ = fedavg_weights(copy.deepcopy(model), [graphs] * steps, 0.01, loss="bce")
        returned, kind = {k: v.numpy() for k, v in back.items()}, "weights"
    return ObservedUpdate(round=1, client_key=0, global_weights=weights, returned=returned, kind=kind,
                          num_examples=len(graphs), metrics={}, lr=0.01, local_steps=steps,
                          batch_size=len(graphs), same_batch=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graphs", type=int, default=40)
    parser.add_argument("--budget", type=float, default=120.0, help="seconds per molecule")
    parser.add_argument("--settings", nargs="+", default=["1x1", "2x1", "4x1", "1x2", "1x5"],
                        help="BxK: batch size B, local steps K")
    parser.add_argument("--coordinates", action="store_true",
                        help="also time the 1-hop enumeration of batches of 4 with and without the coordinate screen")
    parser.add_argument("--coordinate-batches", type=int, default=2,
                        help="batches of 4 --coordinates and --witnessed-order time")
    parser.add_argument("--witnessed-order", action="store_true",
                        help="also time the 1-hop enumeration of batches of 4 in the witnessed order and the plain one")
    args = parser.parse_args()
    torch.set_num_threads(1)
    case = grain_victims(args.graphs)
    knowledge, model, victims = case.knowledge, case.model, case.graphs

    medians, means = {}, {}
    for setting in args.settings:
        b, k = (int(v) for v in setting.split("x"))
        attack = GRAIN(batches=b > 1, local_steps=k > 1)
        per_graph, exact = [], 0
        for first in range(0, len(victims) - b + 1, b):
            graphs = victims[first:first + b]
            update = update_of(model, graphs, k)
            start = time.perf_counter()
            try:
                recs = attack.reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(args.budget * b)))
            except (AttackFailed, AttackTimeout):
                recs = []
            per_graph.append((time.perf_counter() - start) / b)
            if recs:
                order = batch_assignment(recs, graphs, case.schema)
                for j, g in zip(order, graphs):
                    _, adj, _ = to_dense(g)
                    exact += int(gsm(recs[j].x, recs[j].adj, g.x, adj[0], case.schema)["full_iso"] == 1.0)
        medians[setting], means[setting] = statistics.median(per_graph), statistics.mean(per_graph)
        print(f"{setting}: {len(per_graph)} updates, seconds per molecule median {medians[setting]:.2f}, "
              f"p90 {percentile(per_graph, 0.9):.1f}, mean {means[setting]:.2f}; exact {exact} of "
              f"{len(per_graph) * b}", flush=True)
    if "1x1" in medians:
        for name, values in (("median", medians), ("mean", means)):
            print(f"{name} seconds per molecule against 1x1: " + ", ".join(
                f"{s} {m / values['1x1']:.1f}x" for s, m in values.items() if s != "1x1"))
    if args.coordinates:
        enumeration_ratio(model, victims[:4 * args.coordinate_batches], case.schema, "coordinates",
                          "every coordinate / a few first")
    if args.witnessed_order:
        enumeration_ratio(model, victims[:4 * args.coordinate_batches], case.schema, "witnessed_first",
                          "plain order / witnessed first")


def enumeration_ratio(model, victims, schema, option: str, label: str, b: int = 4) -> None:
    """A batch's 1-hop enumeration (``witnessed_one_hop_blocks``) with ``option`` off against on:
    ``coordinates`` (screened on a few coordinates of layer 1's output first, against the float32
    screen on every coordinate) or ``witnessed_first`` (the order; the same blocks when nothing
    expires, so the ratio is its overhead)."""
    ratios = []
    for first in range(0, len(victims) - b + 1, b):
        grad, _ = mean_gradient(model, victims[first:first + b], "bce")
        nodes = propose_nodes(schema, grad["convs.0.lin.weight"].double(), tol=1e-7, tau=1e-3,
                              group_size=10_000, abort_size=2_000_000)
        deg = schema.degrees(nodes.x.float())
        layer1 = StarLayer(copy.deepcopy(model).double(), 0, nodes.x)
        space = RowSpace(grad["convs.1.lin.weight"], 1e-7)
        timings = {}
        for on in (True, False):
            start = time.perf_counter()
            blocks = witnessed_one_hop_blocks(layer1, deg, space, tau=1e-2, max_combinations=1e12,
                                              expired=lambda: False, **{option: on})
            found = {(int(blocks.centre[i]), blocks.neighbours(i)) for i in range(len(blocks))}
            timings[on] = (time.perf_counter() - start, found, blocks.candidates)
        ratios.append(timings[False][0] / timings[True][0])
        print(f"1-hop enumeration of a batch of {b} ({nodes.x.size(0)} node types, {timings[True][2]} candidates, "
              f"same blocks: {timings[True][1] == timings[False][1]}): {label} = "
              f"{ratios[-1]:.1f}x ({timings[False][0]:.1f} s / {timings[True][0]:.1f} s)", flush=True)
    if ratios:
        print(f"median ratio over {len(ratios)} batches: {statistics.median(ratios):.1f}x")


if __name__ == "__main__":
    main()
