"""Flower's central-DP strategy wrappers as the server halves of our ``flwr_*`` defenses, and
the one guard every ``flwr_*`` defense puts on Flower's clipping.

Flower 1.41's clipping (``flwr.supercore.differential_privacy``) scales an update by
``min(1, C / norm)``: an update of norm 0 raises ``ZeroDivisionError`` and ends the round (at the
server) or the turn (in a client mod). A zero update is ordinary in a federation that DP noise has
wrecked: a model whose sigmoid saturated returns a gradient of exactly 0 in float32 (seen in a
MUTAG federation under ``flwr_server_dp`` at C 1 and z 1, round 5). :func:`guard_zero_norm_clipping`
leaves such an update as it is, which is what clipping means for it (it is within any norm), as
proposed upstream (flwrlabs/flower pull request 7631, "Guard DP clipping against zero-norm
updates"); every other update goes through Flower's own function.

Two things are ours, in a mixin over Flower's classes: the wrappers draw their noise from NumPy's
global generator, which is seeded per round from the run's seed (so a run's utility does not depend
on what else the server process drew) and restored after the round's aggregation (so no other draw
depends on the seeding); and the curious strategy's ``witness`` sees every reply first, also in a
round Flower refuses to aggregate (it skips any round with an error reply), while Flower's wrapper
gets the replies of the turns that trained (a failed turn's reply, a row of ours, carries no arrays
and none of the metrics Flower's adaptive clipping reads).
"""

from __future__ import annotations

import numpy as np
from flwr.serverapp.strategy import (DifferentialPrivacyClientSideAdaptiveClipping,
                                     DifferentialPrivacyClientSideFixedClipping,
                                     DifferentialPrivacyServerSideFixedClipping)

from fedgraph_sim.numpy_state import restored_numpy_state

SERVER_NOISE_STREAM = 3  # a turn's own defenses draw from stream 1, Flower's client mods from 2


class SeededRounds:
    """Mixin over one of Flower's DP strategy wrappers: seeded noise, witnessed skipped rounds."""

    seed: int = 0

    def aggregate_train(self, server_round, replies):
        replies = list(replies)
        if hasattr(self.strategy, "witness"):  # the curious server sees every reply, Flower's wrapper
            replies = self.strategy.witness(server_round, replies)  # those of the turns that trained
        with restored_numpy_state():
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
    """``wrapper`` (a class above, built) with its seed, Flower's clipping guarded."""
    guard_zero_norm_clipping()
    wrapper.seed = seed
    return wrapper


def guard_zero_norm_clipping() -> None:
    """Make Flower's two clipping functions leave an update of norm 0 as it is (idempotent; in the
    process that clips: the server for the wrappers, the client's for the mods)."""
    from flwr.supercore import differential_privacy as flower_dp

    if getattr(flower_dp.clip_inputs_inplace, "guards_zero_norm", False):
        return
    clip, adaptive_clip = flower_dp.clip_inputs_inplace, flower_dp.adaptive_clip_inputs_inplace

    def clip_inputs_inplace(input_arrays, clipping_norm: float) -> None:
        if flower_dp.get_norm(input_arrays) > 0:
            clip(input_arrays, clipping_norm)

    def adaptive_clip_inputs_inplace(input_arrays, clipping_norm: float) -> bool:
        return adaptive_clip(input_arrays, clipping_norm) if flower_dp.get_norm(input_arrays) > 0 else False

    for guarded, flowers in ((clip_inputs_inplace, clip), (adaptive_clip_inputs_inplace, adaptive_clip)):
        guarded.guards_zero_norm, guarded.flowers = True, flowers  # Flower's own, kept for the tests
        setattr(flower_dp, guarded.__name__, guarded)
