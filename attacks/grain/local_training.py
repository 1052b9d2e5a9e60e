"""FedAvg updates for GRAIN (our extension, [ext] ``local_steps``): what the client's local
training does to the span checks and to the exactness test, from what the server knows of it.

A client that trains ``K`` plain SGD steps of learning rate :math:`\\eta` returns :math:`W_K`; the
server reads the pseudo-gradient

.. math::
    \\hat g = \\frac{W_0 - W_K}{\\eta K} = \\frac{1}{K} \\sum_{t=0}^{K-1} \\nabla_W \\mathcal{L}(W_t).

Layer 1's input is the data at every step, so its part of :math:`\\hat g` stays in the span of the
node rows, as in FedSGD (DAGER, Petrov et al., NeurIPS 2024, arXiv 2405.15586, Sec. 5, makes the
same observation for token embeddings). Two perturbations remain, both bounded from the update:

- **rounding**: the client stores its weights in the dtype the server sent (float32), and every
  step rounds each weight it changes to within half a unit in the last place (ulp). After ``K``
  steps each changed entry of the pseudo-gradient carries noise of standard deviation
  :math:`\\sigma = \\sqrt{K \\, \\overline{\\mathrm{ulp}(W)^2} / 12} / (\\eta K)` (the mean over the
  changed entries; an entry the client never moved, e.g. the weight of a feature its graph lacks,
  carries none): independent of the data, and far above a float32 gradient's own rounding. Its
  spectral norm is at most about :math:`\\sigma (\\sqrt m + \\sqrt n)` (``spancheck.RowSpace``),
  its Frobenius norm :math:`\\sigma \\sqrt{\\text{changed entries}}` (the exactness tolerance).
- **drift**: the inputs of deeper layers change while the weights below them move; to first order
  their relative change is at most the summed relative change of those weights,
  :math:`\\sum_{k<l} \\lVert W_{K,k} - W_{0,k} \\rVert / \\lVert W_{0,k} \\rVert`.

The exactness test replays the known local training on the candidate (``scorer.py``), so a
candidate is exact when its replayed pseudo-gradient is within the rounding's expected distance.
Nothing here reads the client's data: ``lr`` and ``local_steps`` are the server's own training
configuration, the rest comes from the weights it sent and got back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fedgraph_sim.threat import ObservedUpdate


#: A float32 gradient's rounding, per entry, in units of float32's machine epsilon times the
#: gradient's RMS entry: a sum over nodes of products rounds each term, so its error grows with
#: the terms, not with the sum. Measured on MUTAG with a 3-layer GIN of width 64 (sum pooling): the
#: rounding's singular values reach 0.6 of ``eps rms (sqrt m + sqrt n)``, the signal's smallest
#: stay above 20 times ``4 eps rms (sqrt m + sqrt n)``.
GRADIENT_ROUNDING_EPS = 4.0


def gradient_rounding(grad) -> float:
    """The per-entry rounding noise of a float32 FedSGD gradient ([ext] ``float32_rounding``): the
    paper's absolute rank tolerances (1e-7, 1e-8) sit at that rounding once gradients are large
    (sum pooling, no degree normalisation), where they count rounding as rank."""
    g = np.asarray(grad, np.float64)
    return GRADIENT_ROUNDING_EPS * float(np.finfo(np.float32).eps) * float(np.sqrt(np.mean(g ** 2)))


@dataclass(frozen=True)
class LocalTraining:
    """The client's local training as the server knows it.

    Args:
        lr: the learning rate the server configured.
        steps: the local SGD steps (1 for a FedSGD gradient).
        noise: per tensor, the rounding noise's standard deviation in a changed entry of the
            pseudo-gradient.
        changed: per tensor, the entries the client changed.
        change: per tensor, ``||W_K - W_0||_F / ||W_0||_F`` (empty for a gradient).
    """

    lr: float
    steps: int
    noise: dict[str, float] = field(default_factory=dict)
    changed: dict[str, int] = field(default_factory=dict)
    change: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, update: ObservedUpdate) -> "LocalTraining":
        """A gradient reply has neither perturbation; a weights reply has both."""
        if update.kind == "gradient":
            return cls(update.lr, 1)
        noise, changed, change = {}, {}, {}
        for name, back in update.returned.items():
            sent = np.asarray(update.global_weights[name])
            if not np.issubdtype(sent.dtype, np.floating):
                continue
            back = np.asarray(back, np.float64)
            moved = back != sent
            ulp = np.spacing(np.abs(back[moved]).astype(sent.dtype)).astype(np.float64)
            noise[name] = float(np.sqrt(update.local_steps * np.mean(ulp ** 2) / 12)
                                / (update.lr * update.local_steps)) if ulp.size else 0.0
            changed[name] = int(moved.sum())
            change[name] = float(np.linalg.norm(back - sent) / max(np.linalg.norm(sent), 1e-300))
        return cls(update.lr, update.local_steps, noise, changed, change)

    @property
    def replays(self) -> bool:
        """True when the exactness test must replay several steps, not one gradient."""
        return self.steps > 1

    def drift(self, name: str, order: list[str]) -> float:
        """The relative drift of the input of the layer that owns ``name``: the summed relative
        change of the tensors before that layer in the forward ``order`` of parameter names."""
        layer = name.rsplit(".", 1)[0]
        below = []
        for other in order:
            if other.rsplit(".", 1)[0] == layer:
                break
            below.append(other)
        return float(sum(self.change.get(n, 0.0) for n in below))

    def exact_slack(self, names: list[str]) -> float:
        """Twice the expected official distance (the mean over the tensors ``names`` of the
        Frobenius norm) of the rounding noise alone: what an exact replay may still differ by."""
        if not self.noise:
            return 0.0
        return 2 * float(np.mean([self.noise.get(n, 0.0) * self.changed.get(n, 0) ** 0.5 for n in names]))
