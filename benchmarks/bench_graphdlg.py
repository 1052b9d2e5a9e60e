"""GraphDLG timings on the Table 1 setup: GNFR per graph, refinement per graph, decoder training.

    python benchmarks/bench_graphdlg.py [--dataset MUTAG] [--graphs 50]

Uses the attacker's partition as auxiliary set and the victim's graphs at the initial model, as in
the first round of graphdlg_table1.yaml. Prints seconds; compare ratios across machines.
"""

from __future__ import annotations

import argparse
import time


import numpy as np
import torch

from attacks.base import AttackContext, Budget
from attacks.graphdlg import GraphDLG, gnfr
from clients.training import fedsgd_gradient
from fedgraph_sim.config import load_config
from fedgraph_sim.data import available_datasets
from fedgraph_sim.models import build_model
from fedgraph_sim.scenario import attacker_knowledge, build_scenario
from fedgraph_sim.threat import ObservedUpdate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", default="MUTAG" if "MUTAG" in available_datasets() else "synthetic")
    parser.add_argument("--graphs", type=int, default=50)
    args = parser.parse_args()
    config = load_config(None, [f"data.dataset={args.dataset}", "federation.num_clients=2",
                                "aux.source=client:1", "partition.min_partition_size=10"])
    scenario = build_scenario(config)
    knowledge = attacker_knowledge(config, scenario)
    ds = scenario.dataset
    torch.manual_seed(config.seed)
    model = build_model(config.model, ds.num_features, ds.num_classes)
    weights = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    victims = [ds.graphs[i] for i in scenario.clients[0][: args.graphs]]
    updates = []
    for g in victims:
        grad, _ = fedsgd_gradient(model, [g])
        updates.append(ObservedUpdate.fedsgd(model, grad))
    ctx = AttackContext(seed=0, budget=Budget(3600))

    paper, refine = GraphDLG(), GraphDLG(refine_features=True)
    paper.prepare(updates, knowledge, ctx)
    timed = GraphDLG(retrain_tol=0.0)  # retrains on any weight change: times a warm fine-tune
    start = time.perf_counter()
    timed.prepare(updates, knowledge, ctx)
    first_training = time.perf_counter() - start
    moved = {k: v - 0.01 * updates[0].gradient[k].float().numpy() for k, v in weights.items()}
    moved_updates = [ObservedUpdate(round=2, client_key=0, global_weights=moved, returned=u.returned,
                                    kind="gradient", num_examples=1, metrics={}, lr=0.01,
                                    local_steps=1, batch_size=1) for u in updates[:1]]
    start = time.perf_counter()
    timed.prepare(moved_updates, knowledge, ctx)
    warm_training = time.perf_counter() - start

    names = ["convs.0.lin.weight", "convs.1.lin.weight"]
    gnfr_times, attack_times, refine_times = [], [], []
    refine.prepare(updates, knowledge, ctx)
    for g, update in zip(victims, updates):
        k = knowledge.with_hints(node_counts=[g.num_nodes])
        adj = (paper.structure(paper.embedding(update, k), g.num_nodes, paper.decoder_state(k, ctx)) >= 0.5).double()
        start = time.perf_counter()
        gnfr([torch.as_tensor(weights[n]) for n in names], [update.gradient[n] for n in names],
             torch.as_tensor(weights["classifier.weight"]), update.gradient["classifier.bias"], adj)
        gnfr_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        paper.reconstruct(update, k, ctx)
        attack_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        refine.reconstruct(update, k, ctx)
        refine_times.append(time.perf_counter() - start)
    print(f"{args.dataset}: {len(victims)} victim graphs, {len(knowledge.aux_graphs)} aux graphs, "
          f"{torch.get_num_threads()} threads")
    print(f"  GNFR (closed form)            {np.mean(gnfr_times) * 1e3:8.2f} ms per graph")
    print(f"  GraphDLG paper mode (all steps){np.mean(attack_times) * 1e3:7.2f} ms per graph")
    print(f"  GraphDLG + refine_features    {np.mean(refine_times) * 1e3:8.2f} ms per graph"
          f"   (refine/paper = {np.mean(refine_times) / np.mean(attack_times):.1f})")
    print(f"  decoder training, first round {first_training:8.2f} s")
    print(f"  decoder warm fine-tune/round  {warm_training:8.2f} s   "
          f"(first/warm = {first_training / warm_training:.1f})")


if __name__ == "__main__":
    main()
