r"""``rescaled_layers``: the same function, with the layers an attack reads made small, so a float32
client's FedAvg update stands clear of its rounding.

Idea. A ReLU network computes the same function when a layer's weights and bias are multiplied by
:math:`s > 0` and the next layer's weights by :math:`1/s` (the rescaling symmetry of ReLU networks:
Neyshabur, Salakhutdinov and Srebro, "Path-SGD: Path-Normalized Optimization in Deep Neural
Networks", NeurIPS 2015; Dinh, Pascanu, Bengio and Bengio, "Sharp Minima Can Generalize for Deep
Nets", ICML 2017). The server uses it against the float32 rounding that hides a FedAvg epoch's rows
from an honest server. A client returns :math:`W_K = W_0 - \eta \sum_k g_k` rounded to float32,
whose error per entry is of the order of :math:`|W| \cdot 2^{-24}`; after the rescaling a tensor
scaled by :math:`s` has gradients scaled by :math:`1/s` (its downstream weights grew by the
inverse), so its update's signal over its rounding grows by :math:`1/s^2`. Here every
message-passing layer and the readout's first layer (the tensors GRAIN's span checks read) are
scaled by ``scale``:

.. math::
    W_k \to s W_k,\; b_k \to s b_k \;(k < L), \qquad
    W_r \to \big[\, s^{L+1} W_r^{x} \;\big|\; s W_r^{h} \,\big],\; b_r \to s^{L+1} b_r,

where :math:`W_r^{h}` are the readout's columns over the last layer's states and :math:`W_r^{x}`
those over the input features (GRAIN's ``concat_input``); the readout's remaining linear maps take
the inverse :math:`s^{-(L+1)}` in equal shares. Every client receives the same weights, and the
model computes what the honest one computes on every input (``tests/unit/test_rescaled_layers.py``),
so a client's accuracy, dead units and zero counts are unchanged; what moves is each rescaled
map's norm, which ``crafted_check`` measures against the architecture's initialisation.

The attack reads the reply as an honest update of the weights it sent (:meth:`members` returns the
update itself): GRAIN's FedAvg reading ([ext] ``local_steps`` with ``batches``) replays the local
training from them.

Limits. The larger inverse weights of the readout's later layers round worse, so their share of
the exactness test's distance grows; a relative step grown by :math:`1/s^2` moves the checked
layers' inputs further over the local steps (the drift GRAIN allows for), which caps how small
``scale`` may go. It needs a positively homogeneous activation (ReLU), GCN layers without
attention or skips, and a readout with a linear map after the first (an MLP). It changes no
graph's share of the update, so it does not separate a batch.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from fedgraph_sim.crafting import Crafting
from fedgraph_sim.threat import AttackerKnowledge, CraftedRound, ObservedUpdate

#: The checked layers' factor ``s``: their update's signal over its float32 rounding grows by
#: ``1 / s**2`` (10 here, an lr ten times larger for these layers only).
SCALE = 10 ** -0.5


class RescaledLayers(Crafting):
    """Every slot receives the honest model, rescaled (see the module's docstring)."""

    name = "rescaled_layers"
    paper = "Neyshabur et al., NeurIPS 2015 (the rescaling symmetry of ReLU networks)"

    def problem(self, model: dict, clients: int) -> str | None:
        """Refuses a user's model, an activation that is not ReLU, a conv other than single-head
        GCN without skips, and a readout without a linear map after its first (``readout: mlp``).

        Args:
            model (dict): the ``model`` section.
            clients (int): the clients a round sends crafted weights to (any number).
        """
        if model.get("module") is not None:
            return "rescales the bench's GraphClassifier; a user's model (model.module) is not one"
        if model.get("activation", "relu") != "relu":
            return f"needs ReLU, which commutes with a positive scale (model.activation is {model.get('activation')})"
        if model.get("conv", "gcn") != "gcn" or model.get("heads", 1) != 1 or model.get("residual", False):
            return f"needs GCN layers without heads or skips (model.conv is {model.get('conv', 'gcn')})"
        if model.get("readout", "linear") != "mlp" or model.get("pool") == "flatten":
            return ("needs an MLP readout (model.readout: mlp), whose later layers take the inverse scale, "
                    "and a pooling or per-node readout")
        return None

    def craft(self, weights: dict[str, np.ndarray], model: dict, clients: int,
              seed: int) -> tuple[CraftedRound, list[dict[str, np.ndarray]]]:
        """The honest ``weights`` rescaled, the same for every slot.

        Args:
            weights (dict[str, np.ndarray]): the honest global model's state by name.
            model (dict): the ``model`` section (:meth:`problem` None).
            clients (int): the slots to craft.
            seed (int): unused: nothing is drawn.
        """
        sent = rescale(weights, model, SCALE)
        return CraftedRound(self.name, sent, {}, {"scale": SCALE}), [dict(sent) for _ in range(clients)]

    def members(self, update: ObservedUpdate,
                knowledge: AttackerKnowledge) -> list[tuple[ObservedUpdate, AttackerKnowledge]]:
        """The update itself, an honest update of the weights it was sent (which it carries).

        Args:
            update (ObservedUpdate): a client's reply or a secure aggregate of a crafted round.
            knowledge (AttackerKnowledge): the attacker's knowledge of the model.
        """
        return [(replace(update, crafted=None), knowledge)]


def rescale(weights: dict[str, np.ndarray], model: dict, scale: float) -> dict[str, np.ndarray]:
    """``weights`` of a GCN classifier with an MLP readout, rescaled by ``scale`` as the module's
    docstring writes; the function the model computes is unchanged.

    Args:
        weights (dict[str, np.ndarray]): a state dict of the model ``model``.
        model (dict): its ``model`` section.
        scale (float): ``s > 0``.
    """
    out = {k: np.array(v, copy=True) for k, v in weights.items()}
    layers = int(model.get("layers", 2))
    for k in range(layers):
        for name in (f"convs.{k}.lin.weight", f"convs.{k}.bias"):
            if name in out:
                out[name] = out[name] * scale
    first = out["classifier.0.weight"]
    # its columns over the input features (concat_input) come first, those over the states after
    inputs = weights["convs.0.lin.weight"].shape[1] if model.get("readout_input", "last") == "concat_input" else 0
    output = scale ** (layers + 1)  # the readout's first layer's output scale
    first[:, inputs:] *= scale  # its inputs already carry scale**layers
    first[:, :inputs] *= output
    out["classifier.0.bias"] = out["classifier.0.bias"] * output
    later = sorted({n.rsplit(".", 1)[0] for n in out if n.startswith("classifier.")} - {"classifier.0"},
                   key=lambda n: int(n.split(".")[1]))
    share = output ** (-1.0 / len(later))  # the inverse, in equal shares, keeping each ReLU's input scaled
    for k, layer in enumerate(later, 1):
        out[f"{layer}.weight"] = out[f"{layer}.weight"] * share
        out[f"{layer}.bias"] = out[f"{layer}.bias"] * output * share ** k  # the scale its output carries
    return {k: v.astype(weights[k].dtype) for k, v in out.items()}
