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
- gradient canaries (Steinke et al.'s white-box Dirac canary): the update's value on the
  canary's weight, times the batch size, summed over the client's updates,

  .. math:: s_c = \sum_t B \, u_t[j_c],

  which a DP-SGD step moves by the clipping bound when the canary is in the batch, plus Gaussian
  noise of scale :math:`zC`.

Under secure aggregation every canary is scored on the round's aggregate.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from fedgraph_sim.dp_audit.canaries import Canaries
from fedgraph_sim.dp_audit.one_run import guesses_from_scores
from fedgraph_sim.models import build_model
from fedgraph_sim.models.gradients import per_graph_gradients
from fedgraph_sim.threat import AGGREGATE, ObservedUpdate

DEFAULT_DELTA = 1e-5


class CanaryScorer:
    """An observer of the rounds' updates (beside the attack runner) that keeps every canary's score.

    Args:
        canaries: the audit's canaries (their graphs, clients and Dirac weights).
        model: the run's model config (``config.model``), to replay gradients at the sent weights.
        num_features: the dataset's node-feature width.
        num_classes: the dataset's number of classes.
        loss: the training loss (``train.loss``).
    """

    def __init__(self, canaries: Canaries, model, num_features: int, num_classes: int,
                 loss: str = "cross_entropy") -> None:
        self.canaries, self.loss = canaries, loss
        self.model = build_model(model, num_features, num_classes)
        self.names = [n for n, _ in self.model.named_parameters()]
        graph = canaries.kind == "graph"
        self.scores = np.full(len(canaries.graphs), -math.inf if graph else 0.0)
        self.claims: dict[int, tuple[float, float]] = {}  # client -> its last (epsilon, delta) report
        self.updates = 0

    def __call__(self, updates: list[ObservedUpdate], failures=()) -> None:
        for update in updates:
            self.updates += 1
            if "defense-epsilon" in update.metrics:
                self.claims[update.client_key] = (float(update.metrics["defense-epsilon"]),
                                                  float(update.metrics.get("defense-delta", DEFAULT_DELTA)))
            ids = (list(range(len(self.canaries.graphs))) if update.client_key == AGGREGATE
                   else self.canaries.of_client(update.client_key))
            if ids:
                self._score(update, ids)

    def _flat(self, gradient: dict[str, np.ndarray]) -> np.ndarray:
        return np.concatenate([np.asarray(gradient[n], dtype=np.float64).ravel() for n in self.names])

    def _score(self, update: ObservedUpdate, ids: list[int]) -> None:
        flat = self._flat(update.gradient)
        if self.canaries.kind == "gradient":
            weights = [int(self.canaries.graphs[i].dirac) for i in ids]
            self.scores[ids] += update.batch_size * flat[weights]
            return
        self.model.load_state_dict({k: torch.as_tensor(np.asarray(v)) for k, v in update.global_weights.items()})
        replayed, _ = per_graph_gradients(self.model, [self.canaries.graphs[i] for i in ids], self.loss)
        rows = torch.cat([replayed[n].flatten(1).double() for n in self.names], dim=1).numpy()
        norms = np.linalg.norm(rows, axis=1) * max(np.linalg.norm(flat), 1e-300)
        cosines = rows @ flat / np.where(norms > 0, norms, 1.0)
        self.scores[ids] = np.maximum(self.scores[ids], cosines)

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
        return {"kind": self.canaries.kind, "count": guesses.count, "delta": delta, "confidence": confidence,
                "epsilon_claimed": claimed, "epsilon_lower_bound": guesses.epsilon_lower_bound,
                "claim_refuted": refuted, "guesses": guesses.guesses, "correct": guesses.correct,
                "updates_scored": self.updates, "scores": [float(s) for s in scores],
                "included": [bool(i) for i in included], "clients": list(self.canaries.clients)}
