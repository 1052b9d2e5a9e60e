"""A poisoning client for the non-finite-update test, loaded as a plugin: a defense that puts a NaN
into the update of about half the client turns (a coin from the turn's seeded generator, so the
same turns every time)."""

import math

from clients.defenses.base import Defense
from fedgraph_sim import registry


@registry.defenses.register
class NanUpdate(Defense):
    name = "nan_update"

    def __init__(self) -> None:  # no parameters (build_defenses reads them from the signature)
        pass

    def apply(self, update, rng):
        import torch

        if torch.rand(1, generator=rng).item() >= 0.5:
            return update
        first = next(iter(update))
        poisoned = update[first].clone()
        poisoned.view(-1)[0] = math.nan
        return {**update, first: poisoned}
