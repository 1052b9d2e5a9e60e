"""An attack worker's life, inside the process :mod:`server.sandbox` starts (it runs :data:`ENTRY`):
build the attacks from their classes and parameters (:func:`attack_specs`), then answer calls
until told to stop.

On its socket the worker first receives ``(specs, plugins)``, then one pickled
:class:`~server.attack_calls.Call` at a time (``None``: stop). For each call it sends
``("started",)``, any number of ``("progress", done, total)`` and ``("checkpoint", graphs)``,
then ``("done", result)``; a result that cannot be pickled comes back as ``invalid_output``.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections import defaultdict
from multiprocessing import connection

import torch

from attacks.base import Attack, AttackContext, Budget
from server.attack_calls import CallResult
from server.attack_execution import execute, shared_store

__all__ = ["ENTRY", "attack_specs", "serve"]

#: What the sandbox runs in the worker once it is inside (``module:function``, called with the socket).
ENTRY = "server.worker_loop:serve"


def serve(conn_fd: int) -> None:
    """A worker's life (in :mod:`server.sandbox`'s process): receive its attacks' classes,
    parameters and plugins, build the attacks, then answer calls until told to stop."""
    conn = connection.Connection(conn_fd)
    torch.set_num_threads(1)
    from fedgraph_sim.plugins import load_plugins

    specs, plugins = pickle.loads(conn.recv_bytes())
    load_plugins(plugins)
    instances = {name: cls(**params) for name, (cls, params) in specs.items()}
    shared: dict[str, dict] = defaultdict(dict)
    fits: dict[str, dict] = defaultdict(dict)

    def send(message) -> None:
        conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))

    while True:
        try:
            blob = conn.recv_bytes()
        except (EOFError, OSError):
            return  # the server is gone
        call = pickle.loads(blob)
        if call is None:
            return
        send(("started",))
        attack = instances[call.name]
        ctx = AttackContext(call.seed, Budget(call.budget), lambda d, t: send(("progress", d, t)),
                            shared=shared_store(shared, attack, call), fits=fits[call.fit_group],
                            stream=lambda recs: send(("checkpoint", recs)))
        result = execute(attack, call, ctx)
        try:
            send(("done", result))
        except Exception as exc:  # e.g. an output that cannot be pickled
            send(("done", CallResult("invalid_output", f"could not be sent back: {type(exc).__name__}: {exc}",
                                     seconds=result.seconds)))


def attack_specs(attacks: dict[str, Attack]) -> dict[str, tuple[type, dict]]:
    """What a worker rebuilds the attacks from: each one's class and parameters."""
    return {name: (type(a), dataclasses.asdict(a.params)) for name, a in attacks.items()}
