"""GLG's attacks: seconds per attacked graph by variant and size, and what the shared engine
costs over a hand-written loop of the same attack.

    python benchmarks/bench_glg.py [--iterations 500] [--repeats 3]

GLG's victim (2-layer GraphSAGE-mean, sigmoid, width 100, the flatten readout), a random graph of
N = 20 and N = 50 nodes (average degree 4, D = 32 features N(0, 1)), one exact gradient. Prints
seconds per graph for Graph-a, -b and -c through ``attacks.glg.optim.invert_graph`` (the shared
engine: parametrised dummies, ``GradientMatcher``, ``minimise`` with best-iterate tracking, time
budget, projection and progress), then the same Graph-a written out by hand (autograd, Adam,
clamp; nothing else) and the ratio engine / hand. Then the node attackers on a node classifier
(the same layers, per-node logits) and a 3-hop ball of the synthetic generator capped at N nodes:
Node-1 (the paper's depth-2 tree, 10 children per node: 111 dummy nodes whatever N) and
Node-2a/b/c, whose per-node gradients (observed and dummy) are one ``torch.func.jacrev`` each.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch_geometric.utils import dense_to_sparse

from attacks.base import AttackContext, Budget
from attacks.glg.node import invert_subgraph, invert_target
from attacks.glg.optim import invert_graph
from clients.training import mean_gradient, per_node_gradients
from fedgraph_sim.data import load_dataset
from fedgraph_sim.models import GraphClassifier


def case(n: int, d: int = 32, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    upper = torch.triu((torch.rand(n, n, generator=gen) < 4 / (n - 1)).float(), diagonal=1)
    a, x = upper + upper.t(), torch.randn(n, d, generator=gen)
    torch.manual_seed(seed)
    model = GraphClassifier(d, 2, conv="sage", activation="sigmoid", hidden=100, pool="flatten", flatten_nodes=n)
    loss = torch.nn.functional.cross_entropy(model(x, dense_to_sparse(a)[0]), torch.tensor([1]))
    grads = torch.autograd.grad(loss, list(model.parameters()))
    return model, {name: g for (name, _), g in zip(model.named_parameters(), grads)}, x, a


def by_hand(model, observed, x, n, iterations, lr=0.01):
    """Graph-a without the engine: the paper's plain adjacency matrix, the cosine distance, Adam,
    the clamp."""
    params = list(model.parameters())
    target = [observed[name] for name, _ in model.named_parameters()]
    adj = torch.bernoulli(torch.full((n, n), 0.5), generator=torch.Generator().manual_seed(0))
    adj.requires_grad_()
    opt = torch.optim.Adam([adj], lr=lr)
    mask = torch.ones(1, n, dtype=torch.bool)
    for _ in range(iterations):
        opt.zero_grad()
        logits = model.forward_dense(x.unsqueeze(0), adj.unsqueeze(0), mask)
        g = torch.autograd.grad(torch.nn.functional.cross_entropy(logits, torch.tensor([1])), params,
                                create_graph=True)
        dot = sum((a * b).sum() for a, b in zip(g, target))
        norm = torch.sqrt(sum((a * a).sum() for a in g)) * torch.sqrt(sum((b * b).sum() for b in target))
        (1 - dot / norm).backward()
        opt.step()
        with torch.no_grad():
            adj.clamp_(0, 1)


def timed(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)  # as in the attack workers
    it = args.iterations
    print(f"GLG, {it} Adam iterations, one torch thread, best of {args.repeats}")
    for n in (20, 50):
        model, observed, x, a = case(n)

        def ctx():
            return AttackContext(seed=0, budget=Budget(3600))

        variants = {"graph_a": dict(x=x), "graph_b": dict(adj=a), "graph_c": {}}
        seconds = {name: timed(lambda kw=kw: invert_graph(model, observed, n, 1, ctx(), iterations=it, **kw),
                               args.repeats) for name, kw in variants.items()}
        hand = timed(lambda: by_hand(model, observed, x, n, it), args.repeats)
        print(f"N = {n:>2}: " + ", ".join(f"{k} {v:6.2f} s" for k, v in seconds.items())
              + f"; graph_a by hand {hand:6.2f} s; engine / hand {seconds['graph_a'] / hand:.2f}")
    for n in (20, 50):
        print(f"N = {n:>2} (node classifier): "
              + ", ".join(f"{k} {v:6.2f} s" for k, v in node_seconds(n, it, args.repeats).items()))


def node_seconds(n: int, iterations: int, repeats: int, d: int = 32) -> dict[str, float]:
    graph = load_dataset("random_graph_balls", num_subgraphs=2, subgraph_nodes=n, features=d)[0]
    torch.manual_seed(0)
    model = GraphClassifier(d, 2, conv="sage", activation="sigmoid", hidden=100, task="node")
    leaked = per_node_gradients(model, graph)
    target = graph.clone()
    target.train_mask = torch.arange(graph.num_nodes) == 0
    one, _ = mean_gradient(model, [target])
    a = torch.zeros(graph.num_nodes, graph.num_nodes)
    a[graph.edge_index[0], graph.edge_index[1]] = 1

    def ctx():
        return AttackContext(seed=0, budget=Budget(3600))

    out = {"node_1": timed(lambda: invert_target(model, one, ctx(), iterations=iterations), repeats)}
    for name, kw in {"node_2a": dict(x=graph.x), "node_2b": dict(adj=a), "node_2c": {}}.items():
        out[name] = timed(lambda kw=kw: invert_subgraph(model, leaked, ctx(), iterations=iterations, **kw), repeats)
    return out


if __name__ == "__main__":
    main()
