r"""The curious server as a DP auditor: it scores every canary's membership from the updates it
observes, and the one-run bound (Steinke, Nasr and Jagielski, NeurIPS 2023) turns its guesses into
an epsilon the run cannot be below (:mod:`fedgraph_sim.dp_audit`).

The scores use what the server sees and what the auditor made (the canaries' graphs, clients and
weights), never which canaries were included:

- graph canaries (the replayed gradient): in each update of a canary's client, the cosine between
  the update (as a gradient, :attr:`~fedgraph_sim.threat.ObservedUpdate.gradient`) and the
  canary's own gradient replayed at the weights the server sent; a canary's score is its best
  round. One undefended graph per FedSGD step matches its replay exactly (cosine 1); the more
  graphs an update sums, or the more noise it carries, the less a single one shows.
- graph canaries (GRAIN's span checks, ``canaries.score: span``; Drencheva et al., "GRAIN: Exact
  Graph Reconstruction from Gradients", ICLR 2025): a GCN layer's weight gradient is
  :math:`\delta_k^\top \hat A H_{k-1}`, so its row space lies in the span of the rows
  :math:`(\hat A H_{k-1})_v` of the graphs behind the update. A canary's distance in an update is
  the largest relative distance of its own rows (at the sent weights) from those row spaces, over
  the layers; a layer whose row space holds every row there can be (its rank reaches the
  dimension the rows fill) is skipped. Its score is minus its smallest distance over the rounds
  (0: in some update, every row of it was in the span). The first layer alone cannot tell an
  unusual combination of common one-hot values (a sum of rows that are in the span): the deeper
  layers, after the nonlinearity, can, while the update's graphs hold fewer rows than the width.
- graph canaries (the loss, ``canaries.score: loss``): how much an update lowers the canary's
  training loss, its loss at the weights the server sent minus its loss at the weights the update
  gives (the returned weights, or the client's step ``W - lr g`` of a FedSGD gradient); its best
  round counts. The black-box score of input-space canaries (Steinke et al., Sec. 6).
- gradient canaries (Steinke et al.'s white-box Dirac canary): the update's value on the
  canary's weight, times the batch size, summed over the client's updates,

  .. math:: s_c = \sum_t B \, u_t[j_c],

  which a DP-SGD step moves by the clipping bound when the canary is in the batch, plus Gaussian
  noise of scale :math:`zC`.

Under secure aggregation every canary is scored on the round's aggregate.

The claim tested is the one made against the server: a defense's ``epsilon`` (DP-SGD's accountant,
the Gaussian mechanism of ``dp_gradients``) as each client last reported it, or Flower's local DP
mod's per-release epsilon composed over the rounds a client replied in (basic composition:
:math:`k\varepsilon` at :math:`k\delta`). The epsilon of Flower's central DP holds for the
released model only, against everyone but the server, so it is not tested here.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch_geometric.data import Batch

from fedgraph_sim.dp_audit.canaries import Canaries
from fedgraph_sim.dp_audit.one_run import guesses_from_scores
from fedgraph_sim.models import build_model
from fedgraph_sim.models.gradients import per_graph_gradients
from fedgraph_sim.models.loss import example_losses
from fedgraph_sim.threat import AGGREGATE, ObservedUpdate

DEFAULT_DELTA = 1e-5


class Scores:
    """Every canary's score, the claims the run made, and the audit's outcome from them."""

    def __init__(self, count: int, start: float = 0.0) -> None:
        self.scores = np.full(count, start)
        self.claims: dict[int, tuple[float, float]] = {}  # client -> its (epsilon, delta) so far
        self.updates = 0
        self.failed = 0  # client turns that failed: updates the scores never saw

    def claimed(self) -> tuple[float | None, float]:
        """The defense's claim: the largest epsilon any client last reported, at its delta."""
        if not self.claims:
            return None, DEFAULT_DELTA
        epsilon, delta = max(self.claims.values())
        return epsilon, delta

    def report(self, included: np.ndarray, confidence: float = 0.95, delta: float | None = None) -> dict:
        """The audit's outcome (what ``canaries.json`` holds). ``included``: the ground truth, read
        only here to count the correct guesses."""
        claimed, claimed_delta = self.claimed()
        delta = delta if delta is not None else claimed_delta
        scores = np.where(np.isfinite(self.scores), self.scores, -1.0)  # never observed: the least likely
        guesses = guesses_from_scores(scores.tolist(), included.tolist(), delta, confidence)
        refuted = claimed is not None and guesses.epsilon_lower_bound > claimed
        return {"kind": self.kind, "count": guesses.count, "delta": delta, "confidence": confidence,
                "epsilon_claimed": claimed, "epsilon_lower_bound": guesses.epsilon_lower_bound,
                "claim_refuted": refuted, "guesses": guesses.guesses, "correct": guesses.correct,
                # Mahloujifar et al.'s refinement: a refutation if the claim is read as Gaussian DP
                "gdp_epsilon_lower_bound": guesses.gdp_epsilon_lower_bound,
                "gdp_claim_refuted": claimed is not None and guesses.gdp_epsilon_lower_bound > claimed,
                "updates_scored": self.updates, "failed_turns": self.failed, "scores": [float(s) for s in scores],
                "included": [bool(i) for i in included]}


class CanaryScorer(Scores):
    """An observer of the rounds' updates (beside the attack runner) that keeps every canary's score.

    Args:
        canaries: the audit's canaries (their graphs, clients and Dirac weights).
        model: the run's model config (``config.model``), to replay gradients at the sent weights.
        num_features: the dataset's node-feature width.
        num_classes: the dataset's number of classes.
        loss: the training loss (``train.loss``).
        score: graph canaries' rule, ``replay``, ``span`` or ``loss``.
    """

    def __init__(self, canaries: Canaries, model, num_features: int, num_classes: int,
                 loss: str = "cross_entropy", score: str = "replay") -> None:
        super().__init__(len(canaries.graphs), -math.inf if canaries.kind == "graph" else 0.0)
        self.canaries, self.kind, self.loss = canaries, canaries.kind, loss
        self.model = build_model(model, num_features, num_classes)
        self.names = [n for n, _ in self.model.named_parameters()]
        self.releases: dict[int, int] = {}  # client -> replies seen (local DP's releases)
        self.score = score
        if score == "span":
            self.layers = _gcn_layers(model, self.model)
            self.widths = [conv.lin.weight.shape[1] for conv in self.model.convs][1:]
            # the dimension the first layer's rows can fill (one-hot blocks: fewer than the columns)
            firsts = _layer_rows(self.model, list(canaries.graphs), layers=1)[0]
            self.row_dimension = len(_row_space(np.concatenate(firsts)))

    def __call__(self, updates: list[ObservedUpdate], failures=()) -> None:
        self.failed += len(failures)
        for update in updates:
            self.updates += 1
            self._note_claim(update.client_key, update.metrics)
            ids = (list(range(len(self.canaries.graphs))) if update.client_key == AGGREGATE
                   else self.canaries.of_client(update.client_key))
            if ids:
                self._score(update, ids)

    def _note_claim(self, client: int, metrics: dict) -> None:
        self.releases[client] = self.releases.get(client, 0) + 1
        if "defense-epsilon" in metrics:
            self.claims[client] = (float(metrics["defense-epsilon"]),
                                   float(metrics.get("defense-delta", DEFAULT_DELTA)))
        elif "defense-flwr-local-dp-epsilon" in metrics:
            k = self.releases[client]
            self.claims[client] = (k * float(metrics["defense-flwr-local-dp-epsilon"]),
                                   k * float(metrics.get("defense-flwr-local-dp-delta", DEFAULT_DELTA)))

    def _flat(self, gradient: dict[str, np.ndarray]) -> np.ndarray:
        return np.concatenate([np.asarray(gradient[n], dtype=np.float64).ravel() for n in self.names])

    def _score(self, update: ObservedUpdate, ids: list[int]) -> None:
        if self.canaries.kind == "gradient":
            weights = [int(self.canaries.graphs[i].dirac) for i in ids]
            self.scores[ids] += update.batch_size * self._flat(update.gradient)[weights]
            return
        self.model.load_state_dict({k: torch.as_tensor(np.asarray(v)) for k, v in update.global_weights.items()})
        if self.score == "span":
            self._span(update, ids)
            return
        if self.score == "loss":
            self._loss_drop(update, ids)
            return
        flat = self._flat(update.gradient)  # only the replay reads the whole update
        replayed, _ = per_graph_gradients(self.model, [self.canaries.graphs[i] for i in ids], self.loss)
        rows = torch.cat([replayed[n].flatten(1).double() for n in self.names], dim=1).numpy()
        norms = np.linalg.norm(rows, axis=1) * max(np.linalg.norm(flat), 1e-300)
        cosines = rows @ flat / np.where(norms > 0, norms, 1.0)
        self.scores[ids] = np.maximum(self.scores[ids], cosines)

    @torch.no_grad()
    def _loss_drop(self, update: ObservedUpdate, ids: list[int]) -> None:
        batch = Batch.from_data_list([self.canaries.graphs[i] for i in ids])
        before = example_losses(*self.model.logits_and_targets(batch), self.loss)
        if update.kind == "weights":
            after_weights = update.returned
        else:  # the client's own step: W - lr * gradient
            after_weights = {k: np.asarray(w) - update.lr * np.asarray(update.returned[k]) if k in update.returned
                             else w for k, w in update.global_weights.items()}
        self.model.load_state_dict({k: torch.as_tensor(np.asarray(v)) for k, v in after_weights.items()})
        after = example_losses(*self.model.logits_and_targets(batch), self.loss)
        self.scores[ids] = np.maximum(self.scores[ids], (before - after).double().numpy())

    def _span(self, update: ObservedUpdate, ids: list[int]) -> None:
        rows = _layer_rows(self.model, [self.canaries.graphs[i] for i in ids])
        distances = np.zeros(len(ids))
        informative = False
        for layer, (name, dimension) in enumerate(zip(self.layers, [self.row_dimension, *self.widths])):
            basis = _row_space(np.asarray(update.gradient[name], dtype=np.float64))
            if len(basis) >= dimension:  # it spans every row there can be: it tells nothing
                continue
            informative = True
            for j, canary_rows in enumerate(rows[layer]):
                off = canary_rows - (canary_rows @ basis.T) @ basis
                norms = np.maximum(np.linalg.norm(canary_rows, axis=1), 1e-300)
                distances[j] = max(distances[j], float(np.max(np.linalg.norm(off, axis=1) / norms)))
        if informative:
            self.scores[ids] = np.maximum(self.scores[ids], -distances)


def _gcn_layers(spec, model) -> list[str]:
    """The GCN layers' weight names, whose span checks the score reads."""
    from fedgraph_sim.errors import ConfigError

    if spec.conv != "gcn":
        raise ConfigError(f"canaries.score: span reads GCN layers (model.conv: gcn), not {spec.conv}")
    return [f"convs.{k}.lin.weight" for k in range(len(model.convs))]


@torch.no_grad()
def _layer_rows(model, graphs, layers: int | None = None) -> list[list[np.ndarray]]:
    """Per GCN layer, each graph's input rows to it, :math:`\\hat A H_{k-1}` (GCN's
    normalisation; :math:`H_0 = X`), at the model's current weights."""
    from fedgraph_sim.models.classifier import to_dense
    from fedgraph_sim.models.convs import gcn_normalised

    convs = list(zip(model.convs, model.acts))[:layers]
    out: list[list[np.ndarray]] = [[] for _ in convs]
    for g in graphs:
        x, adj, _ = to_dense(g)
        a_hat, h = gcn_normalised(adj[0]), x[0]
        for k, (conv, act) in enumerate(convs):
            rows = a_hat @ h
            out[k].append(rows.double().numpy())
            h = act(conv.lin(rows) + (conv.bias if conv.bias is not None else 0))
    return out


def _row_space(gradient: np.ndarray, tolerance: float = 1e-5) -> np.ndarray:
    """An orthonormal basis of the row space of a weight gradient ``[out, in]`` (singular values
    above ``tolerance`` times the largest: float32 gradients), ``[rank, in]``."""
    _, singular, vt = np.linalg.svd(gradient, full_matrices=False)
    if not singular.size or singular[0] == 0:
        return vt[:0]
    return vt[singular > tolerance * singular[0]]


class CanaryClientScorer(Scores):
    r"""Canary clients (Andrew et al., "One-shot Empirical Privacy Estimation for Federated
    Learning", ICLR 2024) scored on the released global models: canary :math:`c`'s score is the
    projection of every round's model change on its direction,

    .. math:: s_c = \sum_t \langle w_t - w_{t-1}, d_c \rangle,

    which an included canary moves by its clipped norm over the round's number of replies. The
    claim tested is the client-level epsilon of Flower's central DP for the released model (the
    smaller of Flower's and Opacus' accountants, each a valid claim), as the clients last reported it.

    Args:
        directions: the canary clients' unit directions, ``[count, parameters]``.
        names: the model's parameter names, in the order the directions flatten them.
    """

    kind = "client"

    def __init__(self, directions: np.ndarray, names: list[str]) -> None:
        super().__init__(len(directions))
        self.directions, self.names = directions, names
        self.last: np.ndarray | None = None

    def __call__(self, updates: list[ObservedUpdate], failures=()) -> None:
        self.failed += len(failures)
        for update in updates:
            self.updates += 1
            accountants = [k for k in update.metrics if k.startswith("defense-flwr-")
                           and k.endswith(("-epsilon-opacus", "-epsilon-flower"))]
            if accountants:
                prefix = accountants[0].rsplit("-epsilon-", 1)[0]
                self.claims[update.client_key] = (min(float(update.metrics[k]) for k in accountants),
                                                  float(update.metrics.get(f"{prefix}-delta", DEFAULT_DELTA)))

    def release(self, arrays: dict[str, np.ndarray]) -> None:
        """A global model the server released (round 0's included): score its change."""
        flat = np.concatenate([np.asarray(arrays[n], dtype=np.float64).ravel() for n in self.names])
        if self.last is not None:
            self.scores += self.directions @ (flat - self.last)
        self.last = flat
