"""Flower's central-DP strategy wrappers as the server halves of our ``flwr_*`` defenses.

Two things are ours, in a mixin over Flower's classes: the wrappers draw their noise from NumPy's
global generator, which is seeded per round from the run's seed (so a run's utility does not
depend on what else the server process drew); and the curious strategy's ``witness`` sees every
reply first, also in a round Flower refuses to aggregate (it skips any round with an error
reply), while Flower's wrapper gets the replies of the turns that trained (a failed turn's reply,
a row of ours, carries no arrays and none of the metrics Flower's adaptive clipping reads).
"""

from __future__ import annotations

import numpy as np
from flwr.serverapp.strategy import (DifferentialPrivacyClientSideAdaptiveClipping,
                                     DifferentialPrivacyClientSideFixedClipping,
                                     DifferentialPrivacyServerSideFixedClipping)

SERVER_NOISE_STREAM = 3  # a turn's own defenses draw from stream 1, Flower's client mods from 2


class SeededRounds:
    """Mixin over one of Flower's DP strategy wrappers: seeded noise, witnessed skipped rounds."""

    seed: int = 0

    def aggregate_train(self, server_round, replies):
        replies = list(replies)
        if hasattr(self.strategy, "witness"):  # the curious server sees every reply, Flower's wrapper
            replies = self.strategy.witness(server_round, replies)  # those of the turns that trained
        np.random.seed(int(np.random.SeedSequence([self.seed, server_round, SERVER_NOISE_STREAM])
                           .generate_state(1)[0]))
        return super().aggregate_train(server_round, replies)


class SeededFixedClipping(SeededRounds, DifferentialPrivacyClientSideFixedClipping):
    """``DifferentialPrivacyClientSideFixedClipping``, seeded per round."""


class SeededAdaptiveClipping(SeededRounds, DifferentialPrivacyClientSideAdaptiveClipping):
    """``DifferentialPrivacyClientSideAdaptiveClipping``, seeded per round."""


class SeededServerSideFixedClipping(SeededRounds, DifferentialPrivacyServerSideFixedClipping):
    """``DifferentialPrivacyServerSideFixedClipping``, seeded per round; the curious strategy
    witnesses the replies before this wrapper clips them, as the server holds them."""


def seeded(wrapper, seed: int):
    """``wrapper`` (a class above, built) with its seed."""
    wrapper.seed = seed
    return wrapper
