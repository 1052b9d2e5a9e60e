"""The defenses that are Flower client mods (``Defense.reply_mod``), run on a turn's reply.

The ClientApp's train handler carries one mod, :func:`defense_mods`, which reads the run's
defenses and runs their Flower mods, in the stack's order, over the reply the turn produced: the
first mod listed sees the turn's reply, the last one's output goes to the server. A failed turn's
reply (no arrays, its reason) goes to the server untouched, so it stays a ``client_failed`` row.

Flower's mods draw their noise from NumPy's global generator; it is seeded per turn from the run's
seed, the round and the client, so a run's rows do not depend on which process ran the turn, and
restored once the mods have run.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

import numpy as np
from flwr.app import Context, Message

from clients.defenses import build_defenses
from clients.turn import turn_seed
from fedgraph_sim.config import RunConfig
from fedgraph_sim.numpy_state import restored_numpy_state
from fedgraph_sim.plugins import load_plugins

MOD_NOISE_STREAM = 2  # the turn's own defenses draw from stream 1 (clients.turn)


@lru_cache(maxsize=4)
def _run_mods(config_json: str) -> tuple[int, list]:
    """The run's seed and its defenses' Flower mods, built once per process and run."""
    config = RunConfig.model_validate_json(config_json)
    load_plugins(config.plugins)  # a plugin may define a defense
    return config.seed, build_defenses(config.defenses, config.model.task).mods()


def defense_mods(config_for: Callable[[Context], str]):
    """The train handler's mod; ``config_for(context)`` gives the run's config JSON."""

    def mod(msg: Message, context: Context, call_next) -> Message:
        reply = call_next(msg, context)
        seed, mods = _run_mods(config_for(context))
        if not mods or reply.has_error() or "failed" in reply.content["metrics"]:
            return reply
        partition_id = int(context.node_config["partition-id"])

        def handler(_msg: Message, _context: Context) -> Message:
            return reply  # the turn already ran: the mods rewrite its reply

        for flower_mod in mods:  # the first listed wraps the turn most closely: it rewrites first
            handler = _wrapped(flower_mod, handler)
        with restored_numpy_state():
            np.random.seed(turn_seed(seed, int(msg.content["config"]["server-round"]), partition_id,
                                     MOD_NOISE_STREAM))
            return handler(msg, context)

    return mod


def _wrapped(flower_mod, call_next):
    return lambda msg, context: flower_mod(msg, context, call_next)
