"""GRAIN on noisy updates: seconds per molecule of the noise-aware variant against paper GRAIN,
with the molecules each rebuilt exactly, at each noise level.

    python benchmarks/bench_grain_noise.py [--graphs 20] [--budget 120] [--sigmas 0 1e-8 1e-6 1e-4]
                                          [--variants paper noise_aware] [--rank-closed 3]

Victims: the first ``--graphs`` molecules of the seed-42 shuffle of Tox21 (grain_defenses.yaml's),
GRAIN's GCN at its initial weights, one FedSGD step on one molecule. The update is the gradient
plus the ``dp_gradients`` defense's Gaussian noise of standard deviation sigma per entry (no
clipping; the generator seeded per molecule, so both variants see the same noisy update). Both
variants get ``--budget`` seconds per molecule. Printed per sigma and variant: seconds per
molecule (median, p90, mean), molecules rebuilt exactly (``full_iso``), and the noise-aware
variant's median and mean over paper GRAIN's. Paper GRAIN stops at once where the noise makes
its gradients full rank, so a ratio there compares a search with a refusal: read it beside the
exact counts. ``--variants noise_aware ranked`` sets ranking where the gap closes
(``rank_closed``, ``--rank-closed`` candidates per node type) against the noise-aware filter
alone; the ratio printed is then the second variant's over the first's. Without
FEDGRAPH_DATA_ROOT it runs on ``synthetic`` with a degree block.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from attacks.base import AttackContext, AttackFailed, AttackTimeout, Budget
from attacks.grain import GRAIN
from clients.defenses.dp_gradients import DPGradients
from clients.training import mean_gradient
from fedgraph_sim.metrics.gsm import gsm
from fedgraph_sim.models import to_dense
from fedgraph_sim.threat import ObservedUpdate
from grain_victims import grain_victims

VARIANTS = {"paper": {}, "noise_aware": {"noise_aware": True}, "ranked": {"noise_aware": True, "rank_closed": 3}}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def noisy_update(model, graph, sigma: float, seed: int) -> ObservedUpdate:
    """The update the server receives from a client that adds N(0, sigma^2) to its gradient."""
    weights = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    grad, _ = mean_gradient(model, [graph], "bce")
    if sigma > 0:
        grad = DPGradients(sigma, noise="gaussian").apply(grad, torch.Generator().manual_seed(seed))
    return ObservedUpdate(round=1, client_key=0, global_weights=weights,
                          returned={k: v.numpy() for k, v in grad.items()}, kind="gradient", num_examples=1,
                          metrics={}, lr=0.01, local_steps=1, batch_size=1)


def exact(recs, graph, schema) -> bool:
    if not recs:
        return False
    _, adj, _ = to_dense(graph)
    return gsm(recs[0].x, recs[0].adj, graph.x, adj[0], schema)["full_iso"] == 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graphs", type=int, default=20)
    parser.add_argument("--budget", type=float, default=120.0, help="seconds per molecule and variant")
    parser.add_argument("--sigmas", type=float, nargs="+", default=[0.0, 1e-8, 1e-6, 1e-4])
    parser.add_argument("--variants", nargs=2, choices=sorted(VARIANTS), default=["paper", "noise_aware"])
    parser.add_argument("--rank-closed", type=int, default=3, help="candidates per node type, for `ranked`")
    args = parser.parse_args()
    torch.set_num_threads(1)
    case = grain_victims(args.graphs)
    knowledge, model, victims = case.knowledge, case.model, case.graphs

    print(f"{case.dataset}, {len(victims)} molecules, budget {args.budget:g} s per molecule and variant")
    for sigma in args.sigmas:
        seconds: dict[str, list[float]] = {}
        for name in args.variants:
            params = {**VARIANTS[name], **({"rank_closed": args.rank_closed} if name == "ranked" else {})}
            attack, times, found = GRAIN(**params), [], 0
            for i, graph in enumerate(victims):
                update = noisy_update(model, graph, sigma, seed=i)
                start = time.perf_counter()
                try:
                    recs = attack.reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(args.budget)))
                except (AttackFailed, AttackTimeout):
                    recs = []
                times.append(time.perf_counter() - start)
                found += exact(recs, graph, case.schema)
            seconds[name] = times
            print(f"sigma {sigma:g}, {name}: seconds per molecule median {statistics.median(times):.2f}, "
                  f"p90 {percentile(times, 0.9):.1f}, mean {statistics.mean(times):.2f}; exact {found} of "
                  f"{len(victims)}", flush=True)
        first, second = (seconds[v] for v in args.variants)
        print(f"sigma {sigma:g}: {args.variants[1]} / {args.variants[0]} seconds per molecule: median "
              f"{statistics.median(second) / max(statistics.median(first), 1e-9):.1f}x, mean "
              f"{statistics.mean(second) / max(statistics.mean(first), 1e-9):.1f}x", flush=True)


if __name__ == "__main__":
    main()
