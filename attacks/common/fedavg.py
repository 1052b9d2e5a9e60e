"""A FedAvg update read as one gradient, for attacks their papers define on FedSGD gradients.

After ``K`` local SGD steps of learning rate ``lr`` the server reads the pseudo-gradient

.. math::
    \\tilde g = \\frac{W_{sent} - W_{back}}{lr \\cdot K},

the mean of the ``K`` gradients the client took, each at its own weights: the gradient of one
batch at ``W_sent`` only when ``K = 1``, an approximation otherwise (the error grows with
``lr * K``). ``fedavg: pseudo_gradient`` (ours, off in paper mode, where such updates are
``not_applicable``) lets an attack run on it; its rows say ``attack_input: pseudo_gradient``.
"""

from __future__ import annotations

from dataclasses import replace

from fedgraph_sim.errors import ConfigError
from fedgraph_sim.threat import ObservedUpdate

#: The values of an attack's ``fedavg`` parameter.
FEDAVG_INPUTS = ("not_applicable", "pseudo_gradient")


def check_fedavg(attack: str, value: str) -> None:
    """One clear line for an unknown ``attack.params.<attack>.fedavg``."""
    if value not in FEDAVG_INPUTS:
        raise ConfigError(f"attack.params.{attack}.fedavg: unknown '{value}'; valid: {', '.join(FEDAVG_INPUTS)}")


def read_as_gradient(update: ObservedUpdate, fedavg: str) -> ObservedUpdate:
    """``update`` as the attack reads it: a FedAvg update as one gradient (its pseudo-gradient)
    under ``pseudo_gradient``, anything else unchanged. For requirement checks: the attack still
    reads ``update.gradient``, which is the pseudo-gradient already."""
    if update.exact or fedavg != "pseudo_gradient":
        return update
    return replace(update, kind="gradient", returned={k: v.numpy() for k, v in update.gradient.items()},
                   local_steps=1)
