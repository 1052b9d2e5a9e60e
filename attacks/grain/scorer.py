"""The whole-graph test: replay the client's FedSGD step on a candidate graph and compare
gradients (GRAIN, Drencheva et al., ICLR 2025, Sec. 5.3).

``distance(types, edges)`` runs the attacked model (the round's global weights, float64) on the
candidate, takes the parameter gradient of the configured loss for every possible label, and
returns the smallest mean over parameter tensors of ``||grad_candidate - grad_client||_F`` (the
official code's distance; the paper writes the Frobenius norm), with the label that attains it.
``label_gradients`` and ``batch_distance`` do the same for the members of a batch, whose mean
gradient the client sent (``batch.py``). A FedAvg update (``steps`` > 1) is matched by replaying
the client's local training: ``steps`` plain SGD steps of ``lr`` on the candidate from the round's
weights, compared as the pseudo-gradient ``(W_0 - W_K) / (lr * steps)``
(``local_training.py``). When each step trained a different batch of ``per_step`` graphs
(``train.sampling`` random or epoch), a candidate graph's column is its one-step gradient (the
batch fit is then first-order in the weights' drift) and a batch is replayed in every order of its
members over the steps (at most ``max_orders``), the closest order counting. A node classifier's
candidate carries one labelling, read from the gradient (``node_labels.py``), and the loss is the
mean over its nodes.
"""

from __future__ import annotations

import itertools

import torch
from torch import Tensor

from torch.func import functional_call

from attacks.grain.node_labels import NodeLabelReader
from fedgraph_sim.models import DenseForward, GraphClassifier, classification_loss


class GradientScorer:
    """Args:
        model: the attacked model at the round's weights (float64).
        observed: the client's gradient (or pseudo-gradient), by parameter name.
        type_rows: the node feature rows that candidates index (T0).
        loss: the training loss; num_classes: the labels a candidate may carry.
        steps, lr: the client's local training (1 step: a gradient).
        per_step: the graphs each step trained when the steps trained different batches (0: every
            step trained the whole batch).
        max_orders: the most orders of a batch's members over the steps a replay tries.
        node_labels: a node classifier's label reader (one FedSGD gradient of one graph).
        fit_scale: compare ``alpha`` times a candidate's gradient, ``alpha`` in (0, 1] fitted by
            least squares: a clipped update is the gradient scaled down (noise-aware GRAIN).
    """

    def __init__(self, model: GraphClassifier, observed: dict[str, Tensor], type_rows: Tensor,
                 loss: str, num_classes: int, steps: int = 1, lr: float = 1.0, per_step: int = 0,
                 max_orders: int = 720, node_labels: NodeLabelReader | None = None,
                 fit_scale: bool = False) -> None:
        self.model, self.loss, self.num_classes = model, loss, num_classes
        self.steps, self.lr, self.per_step, self.max_orders = steps, lr, per_step, max_orders
        # the tensors the update carries: a crafted round's member update leaves out those its
        # members share (``fedgraph_sim.crafting``), which no one member's gradient explains
        named = [(n, p) for n, p in model.named_parameters() if n in observed]
        self.names = [n for n, _ in named]
        self.params = [p for _, p in named]
        self.target = [observed[name].to(torch.float64) for name in self.names]
        self.type_rows = type_rows.to(torch.float64)
        self.node_labels = node_labels
        self.fit_scale = fit_scale
        self.evaluations = 0

    def dense(self, types, edges) -> tuple[Tensor, Tensor]:
        n = len(types)
        adj = torch.zeros(n, n, dtype=torch.float64)
        if edges:
            index = torch.tensor(edges).T
            adj[index[0], index[1]] = 1.0
            adj[index[1], index[0]] = 1.0
        return self.type_rows[list(types)], adj

    def label_gradients(self, types, edges) -> list[list[Tensor]]:
        """The candidate's parameter gradients for each possible label: ``[label][tensor]``."""
        self.evaluations += 1
        x, adj = self.dense(types, edges)
        if self.steps > 1 and not self.per_step:
            return [self.replay([(x, adj, torch.tensor([c]), None)] * self.steps) for c in range(self.num_classes)]
        logits = self.model.forward_dense(x, adj)
        out = []
        for c in range(self.num_classes):
            loss = classification_loss(logits, torch.tensor([c]), self.loss)
            out.append([g.detach() for g in torch.autograd.grad(loss, self.params,
                                                                retain_graph=c < self.num_classes - 1)])
        return out

    def replay(self, batches: list[tuple[Tensor, Tensor, Tensor, Tensor | None]]) -> list[Tensor]:
        """The pseudo-gradient of one SGD step on each of ``batches`` in turn (``(x [B, N, F], adj,
        labels, mask)``, or one graph ``x [N, F]`` without mask), as the client trains."""
        dense = DenseForward(self.model)
        weights = {f"model.{n}": p.detach() for n, p in zip(self.names, self.params)}
        for x, adj, labels, mask in batches:
            weights = {k: w.requires_grad_() for k, w in weights.items()}
            logits = functional_call(dense, weights, (x, adj, mask))
            grads = torch.autograd.grad(classification_loss(logits, labels, self.loss), list(weights.values()))
            weights = {k: (w - self.lr * g).detach() for (k, w), g in zip(weights.items(), grads)}
        scale = self.lr * len(batches)
        return [(p.detach() - weights[f"model.{n}"]) / scale for n, p in zip(self.names, self.params)]

    def gap(self, grads: list[Tensor]) -> float:
        """The official distance between ``grads`` and the client's gradient."""
        if self.fit_scale:
            norm = sum(float(g.pow(2).sum()) for g in grads)
            alpha = sum(float((g * t).sum()) for g, t in zip(grads, self.target)) / max(norm, 1e-300)
            grads = [g * min(max(alpha, 0.0), 1.0) for g in grads]
        return float(torch.stack([(g - t).norm() for g, t in zip(grads, self.target)]).mean())

    def batch_distance(self, members: list[tuple[tuple, list, int, int]]) -> float:
        """The distance to the client's update of a batch, each member given as ``(types, edges,
        label, multiplicity)``: the mean of the members' gradients, or, after several local steps
        (which couple the members through the weights), the replayed training of the whole batch."""
        total = sum(k for *_, k in members)
        if self.steps == 1:
            grads = [(self.label_gradients(types, edges)[y], k) for types, edges, y, k in members]
            return self.gap([sum(g[i] * k for g, k in grads) / total for i in range(len(self.target))])
        self.evaluations += 1
        graphs = [(self.dense(types, edges), y) for types, edges, y, k in members for _ in range(k)]
        if not self.per_step:
            return self.gap(self.replay([self.padded(graphs)] * self.steps))
        owner = [m for m, (*_, k) in enumerate(members) for _ in range(k)]
        best, seen = float("inf"), set()
        for order in itertools.islice(itertools.permutations(range(len(graphs))), self.max_orders):
            chunks = [order[t:t + self.per_step] for t in range(0, len(order), self.per_step)]
            key = tuple(tuple(sorted(owner[i] for i in chunk)) for chunk in chunks)
            if key in seen:  # the same batches in the same order of steps
                continue
            seen.add(key)
            best = min(best, self.gap(self.replay([self.padded([graphs[i] for i in chunk]) for chunk in chunks])))
        return best

    def padded(self, graphs: list[tuple[tuple[Tensor, Tensor], int]]) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``((x, adj), label)`` pairs as one padded dense batch ``(x, adj, labels, mask)``."""
        n = max(x.size(0) for (x, _), _ in graphs)
        x = torch.zeros(len(graphs), n, self.type_rows.size(1), dtype=torch.float64)
        adj = torch.zeros(len(graphs), n, n, dtype=torch.float64)
        mask = torch.zeros(len(graphs), n, dtype=torch.bool)
        for b, ((xb, ab), _) in enumerate(graphs):
            x[b, : xb.size(0)], adj[b, : ab.size(0), : ab.size(0)], mask[b, : xb.size(0)] = xb, ab, True
        return x, adj, torch.tensor([y for _, y in graphs]), mask

    def node_distance(self, types, edges) -> float:
        """A node classifier's distance: the candidate's nodes labelled as the gradient reads them."""
        self.evaluations += 1
        x, adj = self.dense(types, edges)
        labels = self.node_labels(x, adj)
        loss = classification_loss(self.model.forward_dense(x, adj)[0], labels, self.loss)
        return self.gap([g.detach() for g in torch.autograd.grad(loss, self.params)])

    def distance(self, types, edges) -> tuple[float, int | None]:
        """The smallest distance over the labels, and the label that attains it (None for a node
        classifier, whose nodes carry the labels)."""
        if self.node_labels is not None:
            return self.node_distance(types, edges), None
        gaps = [self.gap(grads) for grads in self.label_gradients(types, edges)]
        label = min(range(len(gaps)), key=gaps.__getitem__)
        return gaps[label], label
