"""FedGIG's costs: training its masked graph auto-encoder on an auxiliary set, and one attacked
graph (AMC's 1000 Adam steps, then the auto-encoder's pass), beside the same fit without AMC.

    python benchmarks/bench_fedgig.py [--dataset MUTAG] [--graphs 5] [--iterations 1000] [--aux 200]

FedGIG's victim (two-layer GCN, width 100, ReLU, mean pooling), the dataset's first ``graphs``
graphs attacked one at a time with their features granted, the next ``aux`` graphs (0: all the
rest) as the auto-encoder's auxiliary set; one torch thread, as in the attack workers. Without
``FEDGRAPH_DATA_ROOT`` it falls back to the synthetic molecules. Prints seconds and the ratio of
the AMC fit over the unconstrained one (what the constraint costs per step).
"""

from __future__ import annotations

import argparse
import os
import time

import torch
from torch_geometric.utils import to_dense_adj

from attacks.base import AttackContext, Budget, build_attack
from attacks.fedgig.mgae import Training, train_mgae
from clients.training import fedsgd_gradient
from fedgraph_sim.data import load_dataset
from fedgraph_sim.metrics.ranking import roc_auc
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate


def upper_bound(mgae, graphs) -> str:
    """What SR can do at best: the auto-encoder fed each attacked graph's true adjacency, thresholded
    at 0.5 as the paper does (the share of pairs it calls edges, edge accuracy) and its AUC."""
    share, accuracy, auc = [], [], []
    for graph in graphs:
        adj = to_dense_adj(graph.edge_index, max_num_nodes=graph.num_nodes)[0]
        with torch.no_grad():
            scores = mgae(graph.x.float(), adj)
        iu = torch.triu_indices(graph.num_nodes, graph.num_nodes, 1)
        s, a = scores[iu[0], iu[1]], adj[iu[0], iu[1]]
        share.append(float((s >= 0.5).float().mean()))
        accuracy.append(float(((s >= 0.5).float() == a).float().mean()))
        auc.append(roc_auc(a.numpy(), s.numpy()))
    mean = lambda v: sum(v) / len(v)  # noqa: E731
    return (f"the auto-encoder on the true graphs: {mean(share):.2f} of the pairs at >= 0.5 "
            f"(truth {mean([g.num_edges / (g.num_nodes * (g.num_nodes - 1)) for g in graphs]):.2f}), "
            f"edge accuracy {mean(accuracy):.3f}, AUC {mean(auc):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="MUTAG")
    parser.add_argument("--graphs", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--aux", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)
    name = args.dataset if os.environ.get("FEDGRAPH_DATA_ROOT") else "synthetic"
    data = load_dataset(name)
    victims, aux = data.graphs[:args.graphs], data.graphs[args.graphs:args.graphs + args.aux if args.aux else None]
    start = time.perf_counter()
    mgae = train_mgae(aux, data.schema.width, Training())
    mgae_seconds = time.perf_counter() - start
    print(f"{name}: auto-encoder on {len(aux)} auxiliary graphs, 200 epochs: {mgae_seconds:.1f} s")
    print(upper_bound(mgae, victims))
    knowledge = AttackerKnowledge(model=dict(conv="gcn", hidden=100), num_features=data.schema.width,
                                  num_classes=data.num_classes, schema=data.schema, aux_graphs=list(aux))
    torch.manual_seed(0)
    model = knowledge.build_model()
    seconds = {"fedgig": 0.0, "without amc": 0.0}
    nodes = sum(g.num_nodes for g in victims) / len(victims)
    for graph in victims:
        grad, _ = fedsgd_gradient(model, [graph])
        update = ObservedUpdate.fedsgd(model, grad)
        hinted = knowledge.with_hints(node_counts=[graph.num_nodes], features=[graph.x])
        for label, params in (("fedgig", {"sr": False}), ("without amc", {"sr": False, "amc": False})):
            attack = build_attack("fedgig", {**params, "iterations": args.iterations})
            start = time.perf_counter()
            attack.reconstruct(update, hinted, AttackContext(seed=0, budget=Budget(3600)))
            seconds[label] += time.perf_counter() - start
    per = {k: v / len(victims) for k, v in seconds.items()}
    print(f"per attacked graph ({len(victims)} graphs, {nodes:.1f} nodes on average, {args.iterations} steps): "
          f"AMC fit {per['fedgig']:.2f} s, "
          f"without AMC {per['without amc']:.2f} s, ratio {per['fedgig'] / per['without amc']:.2f}")


if __name__ == "__main__":
    main()
