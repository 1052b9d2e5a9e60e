"""GRAIN's speed on CPU: seconds per molecule, the share of each stage, growth with size, and the
float32 screen of 1-hop candidates against exact checks only.

    python benchmarks/bench_grain.py [--dataset Tox21] [--graphs 100] [--budget 120]
                                     [--victim grain_gcn] [--budgets 1 10 30 120] [--screen] [--centres]
                                     [--pooled-sums]

Victims: the first ``--graphs`` molecules of the seed-42 shuffle (grain_table2.yaml's), each
attacked once at the initial model, as the first round of every victim in that reproduction.
``--victim`` picks the model: GRAIN's GCN or GAT (paper mode), or the models users train, attacked
by ``grain@ext`` (grain_pooled.yaml's): ``pooled_gcn`` (3-layer GCN of width 300, biases, mean
pooling) and ``pyg_gin`` (3-layer GIN of width 64, sum pooling, on ``--dataset`` as PyG loads it:
no degree block, GRAIN's features only for MoleculeNet).
Prints seconds per molecule, stage shares and, for each of ``--budgets``, the quality reached
within it: the molecules whose exact gradient match (GRAIN's stopping criterion) came within that
many seconds, read off the one run at ``--budget`` (the search is deterministic, so a molecule
matched after t seconds is matched by any budget >= t). A speed figure means nothing without the
quality it bought; the paper's own point is FULL 68% on Tox21 with up to 30 min per molecule on an
NVIDIA L4 (Table 2, 14.3 h per 100 molecules), on other hardware, so no ratio is printed.
``--screen`` also times the float32 screen of 1-hop candidates against exact checks only (on the
molecule with the most candidates; it can take over an hour). ``--centres`` times the 1-hop stage
of the five molecules with the most candidates with every centre of a degree screened at once on
each chunk of neighbour multisets against one centre at a time (the same blocks either way; the
ratio is printed). ``--pooled-sums`` attacks the same graphs again with the [ext] ``pooled_sums``
bound and prints both exact counts and the ratio of median seconds. Without FEDGRAPH_DATA_ROOT it runs on
``synthetic`` with a degree block.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time


import torch

from attacks.base import AttackContext, AttackFailed, AttackTimeout, Budget, build_attack
from attacks.grain.blocks import one_hop_blocks
from attacks.grain.embed import StarLayer
from attacks.grain.nodes import propose_nodes
from attacks.grain.spancheck import RowSpace
from clients.training import fedsgd_gradient
from fedgraph_sim.config import load_config
from fedgraph_sim.data import available_datasets
from fedgraph_sim.data.moleculenet import MOLECULENET_NAMES
from fedgraph_sim.models import build_model
from fedgraph_sim.scenario import attacker_knowledge, build_scenario
from fedgraph_sim.threat import ObservedUpdate

STAGES = ("t0", "one_hop", "two_hop", "filter", "dfs")
GRAIN_GCN = ("model={conv: gcn, hidden: 300, conv_bias: false, last_activation: false, readout: mlp, "
             "readout_hidden: [300, 64], readout_input: concat_input, readout_placement: per_node}")
GAT = ["model.conv=gat", "model.heads=2", "model.residual=true", "model.activation=elu",
       "model.readout_input=last", "model.readout_hidden=[300, 300]"]
#: victim -> (model overrides, the attack's row name)
VICTIMS = {"grain_gcn": ([GRAIN_GCN], "grain"), "grain_gat": ([GRAIN_GCN, *GAT], "grain"),
           "pooled_gcn": (["model={conv: gcn, layers: 3, hidden: 300, pool: mean, readout: mlp}"], "grain@ext"),
           "pyg_gin": (["model={conv: gin, layers: 3, hidden: 64, pool: sum, readout: mlp}"], "grain@ext")}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="Tox21" if "Tox21" in available_datasets() else "synthetic")
    parser.add_argument("--graphs", type=int, default=100)
    parser.add_argument("--budget", type=float, default=120.0, help="attack time budget per molecule (s)")
    parser.add_argument("--victim", choices=list(VICTIMS), default="grain_gcn")
    parser.add_argument("--budgets", type=float, nargs="+", default=[1.0, 10.0, 30.0, 120.0],
                        help="budgets (s) at which to report the molecules matched exactly")
    parser.add_argument("--screen", action="store_true", help="also time the float32 1-hop screen")
    parser.add_argument("--centres", action="store_true", help="also time centres screened together")
    parser.add_argument("--pooled-sums", action="store_true",
                        help="also attack the same graphs with the [ext] pooled_sums bound and compare")
    args = parser.parse_args()
    torch.set_num_threads(1)
    molecules = args.dataset.lower() in MOLECULENET_NAMES
    data = (["data.features=grain", "data.task=SR-p53"] if args.dataset == "Tox21" else
            ["data.features=grain"] if molecules else
            [] if args.victim == "pyg_gin" else
            ["data.degree_feature=true"] + (["data.options={num_graphs: 200}"] if args.dataset == "synthetic" else []))
    model, attack_name = VICTIMS[args.victim]
    config = load_config(None, [
        f"data.dataset={args.dataset}", *data, f"data.subset={args.graphs}", "federation.num_clients=1",
        "partition.min_partition_size=1", "train.loss=bce", *model])
    attack = build_attack(attack_name)
    scenario = build_scenario(config)
    knowledge = attacker_knowledge(config, scenario)
    ds = scenario.dataset
    torch.manual_seed(config.seed)
    model = build_model(config.model, ds.num_features, ds.num_classes)
    weights = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}

    graphs = [ds.graphs[int(i)] for i in scenario.clients[0]]
    results = attack_each(attack, graphs, model, weights, knowledge, args.budget)

    seconds = [s for _, s, _ in results]
    exact = [s for _, s, info in results if info.get("exact") == 1]
    print(f"\n{args.dataset} {args.victim} ({attack_name}), {len(results)} graphs, budget {args.budget:g} s per graph")
    print(f"seconds per molecule: median {statistics.median(seconds):.2f}, p90 {percentile(seconds, 0.9):.1f}, "
          f"mean {statistics.mean(seconds):.1f}; exact ones ({len(exact)}): median "
          f"{statistics.median(exact) if exact else float('nan'):.2f}, "
          f"p90 {percentile(exact, 0.9) if exact else float('nan'):.1f}")
    for budget in (b for b in args.budgets if b <= args.budget):
        within = sum(1 for s in exact if s <= budget)
        print(f"budget {budget:6g} s per molecule: {within} of {len(results)} matched exactly "
              f"({within / len(results):.0%})")
    totals = {stage: sum(info.get(f"seconds_{stage}", 0.0) for _, _, info in results) for stage in STAGES}
    whole = sum(seconds)
    print("stage shares of the total: " + ", ".join(f"{k} {v / whole:.1%}" for k, v in totals.items()))
    for label, low, high in (("n <= 15", 0, 15), ("16-25", 16, 25), ("26-36", 26, 36), ("37-44", 37, 44),
                             ("n >= 45", 45, 10 ** 6)):
        group = [s for n, s, _ in results if low <= n <= high]
        if group:
            print(f"  {label:8s}: {len(group):3d} molecules, median {statistics.median(group):7.2f} s, "
                  f"max {max(group):7.1f} s")

    if args.pooled_sums:
        bounded = attack_each(build_attack(attack_name, {"pooled_sums": True}), graphs, model, weights, knowledge,
                              args.budget)
        base, bound = (sum(info.get("exact") == 1 for *_, info in r) for r in (results, bounded))
        ratio = statistics.median(s for _, s, _ in results) / statistics.median(s for _, s, _ in bounded)
        print(f"pooled_sums: {bound} of {len(graphs)} exact against {base} without; median seconds "
              f"without / with = {ratio:.2f}x")
    if args.screen:
        screen_speedup(results, ds, scenario, model)
    if args.centres:
        centres_speedup(results, ds, scenario, model)


def attack_each(attack, graphs, model, weights, knowledge, budget: float) -> list[tuple[int, float, dict]]:
    """``attack`` on each graph's FedSGD gradient at ``weights``: (nodes, seconds, info) per graph."""
    results = []
    for g in graphs:
        grad, _ = fedsgd_gradient(model, [g], loss="bce")
        update = ObservedUpdate(round=1, client_key=0, global_weights=weights,
                                returned={k: v.numpy() for k, v in grad.items()}, kind="gradient",
                                num_examples=1, metrics={}, lr=0.01, local_steps=1, batch_size=1)
        start = time.perf_counter()
        try:
            info = attack.reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(budget)))[0].info
        except (AttackFailed, AttackTimeout) as exc:
            info = {"found": type(exc).__name__}
        results.append((g.num_nodes, time.perf_counter() - start, info))
        print(f"  n={g.num_nodes:3d} {results[-1][1]:7.2f} s  {info.get('found')}", flush=True)
    return results


def one_hop_inputs(g, ds, model):
    """What the 1-hop stage of GRAIN takes for molecule ``g``: T0's layer, degrees, layer 2's span."""
    grad, _ = fedsgd_gradient(model, [g], loss="bce")
    nodes = propose_nodes(ds.schema, grad["convs.0.lin.weight"].double(), tol=1e-7, tau=1e-3,
                          group_size=10_000, abort_size=2_000_000)
    deg = ds.schema.degrees(nodes.x.float())
    return StarLayer(copy.deepcopy(model).double(), 0, nodes.x), deg, RowSpace(grad["convs.1.lin.weight"], 1e-7)


def centres_speedup(results, ds, scenario, model, top: int = 5) -> None:
    """The 1-hop stage with every centre of a degree screened at once against one at a time."""
    graphs = [ds.graphs[int(i)] for i in scenario.clients[0]]
    ranked = sorted(zip(graphs, results), key=lambda p: -p[1][2].get("one_hop_candidates", 0))[:top]
    ratios = []
    for g, _ in ranked:
        layer1, deg, space = one_hop_inputs(g, ds, model)
        timings = {}
        for together in (True, False):
            start = time.perf_counter()
            blocks = one_hop_blocks(layer1, deg, space, tau=1e-2, max_combinations=1e8, expired=lambda: False,
                                    centres_together=together)
            timings[together] = (time.perf_counter() - start, len(blocks), blocks.candidates)
        same = timings[True][1:] == timings[False][1:]
        ratios.append(timings[False][0] / timings[True][0])
        print(f"1-hop stage, {g.num_nodes}-atom molecule, {timings[True][2]} candidates, same blocks: {same}: "
              f"one centre at a time / together = {ratios[-1]:.1f}x "
              f"({timings[False][0]:.2f} s / {timings[True][0]:.2f} s)")
    print(f"median ratio over {len(ratios)} molecules: {statistics.median(ratios):.1f}x")


def screen_speedup(results, ds, scenario, model) -> None:
    """The float32 screen of 1-hop candidates (GCN) against checking every candidate exactly."""
    n, _, _ = max(results, key=lambda r: r[2].get("one_hop_candidates", 0))
    g = max((ds.graphs[int(i)] for i in scenario.clients[0]), key=lambda h: h.num_nodes * (h.num_nodes <= n))
    layer1, deg, space = one_hop_inputs(g, ds, model)
    timings = {}
    for screen in (True, False):
        start = time.perf_counter()
        blocks = one_hop_blocks(layer1, deg, space, tau=1e-2, max_combinations=1e8,
                                expired=lambda: False, screen=screen)
        timings[screen] = (time.perf_counter() - start, len(blocks), blocks.candidates)
    print(f"1-hop blocks of a {g.num_nodes}-atom molecule ({timings[True][2]} candidates, "
          f"{timings[True][1]} kept either way: {timings[True][1] == timings[False][1]}): exact only / "
          f"screened = {timings[False][0] / timings[True][0]:.1f}x "
          f"({timings[False][0]:.1f} s / {timings[True][0]:.1f} s)")


if __name__ == "__main__":
    main()
