"""The client's side of Flower's SecAgg+ (``threat.secure_aggregation: secaggplus``).

Flower's ``secaggplus_mod`` runs the protocol's four stages on the client: it answers the setup,
key-sharing and unmasking messages itself, and in the masked-vector stage it calls the train
handler, then quantises, weights and masks the reply's arrays before they leave the client. The
mod speaks Flower's legacy fit layout (a ``FitIns`` in, a ``FitRes`` out, arrays without names),
while the project's train handler speaks the Message API; :func:`secaggplus_mods` translates
between them, the names travelling as ``array-keys`` in the fit config and the reply's metrics.

Flower's stochastic rounding draws from NumPy's global generator; it is seeded per turn from the
run's seed, the round and the client, so a run's aggregates do not depend on which process ran the
turn (the masks, drawn from the OS, cancel in the sum), and restored once Flower's mod has answered
the message. A turn that fails (an empty partition, a failing defense) drops out of the protocol,
as a client that crashed would: its reply is Flower's error reply naming the partition and the
reason, and the server removes its masks with its neighbours' shares (``server.secaggplus``).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Callable

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Error, Message, RecordDict
from flwr.client.mod import secaggplus_mod
from flwr.common import Code, FitRes, Status, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.common.constant import ErrorCode
from flwr.compat.common import recorddict_compat as compat

from clients.turn import turn_seed
from fedgraph_sim.config import RunConfig
from fedgraph_sim.numpy_state import restored_numpy_state
from fedgraph_sim.threat import ARRAY_KEYS

QUANTISATION_STREAM = 3  # the turn's defenses draw from streams 1 and 2 (clients.turn, clients.reply_mods)


class TurnFailed(Exception):
    """The turn behind the masked vector failed: the client drops out of the round's protocol."""


@lru_cache(maxsize=4)
def _secaggplus_seed(config_json: str) -> int | None:
    """The run's seed when it runs SecAgg+, else None."""
    config = RunConfig.model_validate_json(config_json)
    return config.seed if config.threat.secure_aggregation == "secaggplus" else None


def secaggplus_mods(config_for: Callable[[Context], str]):
    """The train handler's outermost mod: Flower's ``secaggplus_mod`` when the run's config asks for
    SecAgg+, else nothing; ``config_for(context)`` gives the run's config JSON."""

    def mod(msg: Message, context: Context, call_next) -> Message:
        seed = _secaggplus_seed(config_for(context))
        if seed is None:
            return call_next(msg, context)
        partition = int(context.node_config["partition-id"])

        def fit(legacy: Message, ctxt: Context) -> Message:
            keys = _as_train_message(legacy)
            reply = call_next(legacy, ctxt)
            if reply.has_error():
                raise TurnFailed(f"partition {partition} failed its turn: {reply.error.reason}")
            if reply.content["metrics"].get("failed", 0):
                raise TurnFailed(f"partition {partition} failed its turn: {reply.content['config']['error']}")
            round_ = int(legacy.content["config"]["server-round"])
            np.random.seed(turn_seed(seed, round_, partition, QUANTISATION_STREAM))  # the mod's rounding, next
            return Message(_as_fitres(reply, keys), reply_to=legacy)

        try:
            with restored_numpy_state():  # the rounding follows fit, inside Flower's mod
                return secaggplus_mod(msg, context, fit)
        except TurnFailed as exc:  # Flower's error reply, without the traceback Flower would log for it
            return Message(Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=str(exc)), reply_to=msg)

    return mod


def _as_train_message(legacy: Message) -> list[str]:
    """Rewrite ``legacy``'s content (a ``FitIns``) as the train handler's: named arrays and the
    config. Returns the arrays' names, in the order they came."""
    fitins = compat.recorddict_to_fitins(legacy.content, keep_input=True)
    config = dict(fitins.config)
    keys = json.loads(str(config.pop(ARRAY_KEYS)))
    arrays = {k: Array(v) for k, v in zip(keys, parameters_to_ndarrays(fitins.parameters), strict=True)}
    legacy.content = RecordDict({"arrays": ArrayRecord(arrays), "config": ConfigRecord(config)})
    return keys


def _as_fitres(reply: Message, sent_keys: list[str]) -> RecordDict:
    """The train handler's reply as the ``FitRes`` Flower's mod masks: the arrays in the order
    they were sent (a FedSGD gradient may name fewer), their names in the metrics."""
    arrays = reply.content["arrays"]
    keys = [k for k in sent_keys if k in arrays]
    metrics = {**dict(reply.content["metrics"]), ARRAY_KEYS: json.dumps(keys)}
    fitres = FitRes(status=Status(Code.OK, "ok"), parameters=ndarrays_to_parameters([arrays[k].numpy() for k in keys]),
                    num_examples=int(metrics["num-examples"]), metrics=metrics)
    return compat.fitres_to_recorddict(fitres, keep_input=True)
