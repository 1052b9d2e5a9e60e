"""What the attacks that learn from auxiliary graphs cost: the first call (which trains the attack's
model on the aux set: GI-GAN's WGAN-GP generator, GRA-GFA's type generator, FedGIG's auto-encoder)
against every later call (the per-graph inversion alone), through the public attack API.

    python benchmarks/bench_aux_attacks.py [--dataset MUTAG] [--graphs 5] [--aux 90] \
        [--attacks gi_gan gra_gfa fedgig] [--hidden 16]

GraphDLG's victim by default (two-layer GCN, width 16, ReLU, mean pooling, at its initial
weights), the dataset's first ``graphs`` graphs attacked one at a time (node count and features
granted), the next ``aux`` graphs as the auxiliary set (GraphDLG's setting: about half of MUTAG);
one torch thread, as in the attack workers. Without ``FEDGRAPH_DATA_ROOT`` it falls back to the
synthetic molecules. Prints seconds and the ratio of the first call over a later one.
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from attacks.base import AttackContext, Budget, build_attack
from clients.training import fedsgd_gradient
from fedgraph_sim.data import load_dataset
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="MUTAG")
    parser.add_argument("--graphs", type=int, default=5)
    parser.add_argument("--aux", type=int, default=90)
    parser.add_argument("--attacks", nargs="+", default=["gi_gan", "gra_gfa", "fedgig"])
    parser.add_argument("--hidden", type=int, default=16)
    args = parser.parse_args()
    torch.set_num_threads(1)
    name = args.dataset if os.environ.get("FEDGRAPH_DATA_ROOT") else "synthetic"
    data = load_dataset(name)
    victims, aux = data.graphs[:args.graphs], data.graphs[args.graphs:args.graphs + args.aux]
    knowledge = AttackerKnowledge(model=dict(conv="gcn", hidden=args.hidden), num_features=data.schema.width,
                                  num_classes=data.num_classes, schema=data.schema, aux_graphs=list(aux))
    torch.manual_seed(0)
    model = knowledge.build_model()
    updates = []
    for graph in victims:
        grad, _ = fedsgd_gradient(model, [graph])
        updates.append((ObservedUpdate.fedsgd(model, grad),
                        knowledge.with_hints(node_counts=[graph.num_nodes], features=[graph.x])))
    print(f"{name}: {len(victims)} attacked graphs, {len(aux)} auxiliary graphs, GCN width {args.hidden}")
    for attack_name in args.attacks:
        attack = build_attack(attack_name)
        ctx = AttackContext(seed=0, budget=Budget(3600))
        seconds = []
        for update, hinted in updates:
            start = time.perf_counter()
            attack.reconstruct(update, hinted, ctx)
            seconds.append(time.perf_counter() - start)
            ctx.budget = Budget(3600)
        later = sum(seconds[1:]) / max(len(seconds) - 1, 1)
        print(f"{attack_name:>10}: first call {seconds[0]:.2f} s (trains on the aux set), later calls "
              f"{later:.3f} s per graph, ratio {seconds[0] / later:.0f}")


if __name__ == "__main__":
    main()
