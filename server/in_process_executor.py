"""The executor of ``attack.workers: 0``: every attack call in the server's own process, one after
the other, for stepping through an attack in a debugger.

No isolation and no hard limit: a call ends when its attack returns. The calls still get copies of
what they may see (as a worker gets them), and run on one torch thread, so results are the same
as a pool's.
"""

from __future__ import annotations

import pickle
from collections import defaultdict
from typing import Iterator

from attacks.base import Attack, AttackContext, Budget
from fedgraph_sim.processes import one_torch_thread
from server.attack_calls import Call, CallResult, Listener
from server.attack_execution import execute, shared_store

__all__ = ["InProcess"]


class InProcess:
    """``attack.workers: 0``: every call in this process, one after the other (debugging)."""

    def __init__(self, attacks: dict[str, Attack]) -> None:
        self.attacks = attacks
        self.shared: dict[str, dict] = defaultdict(dict)
        self.fits: dict[str, dict] = defaultdict(dict)

    def run(self, calls: list[Call], listener: Listener) -> Iterator[tuple[Call, CallResult]]:
        for original in calls:
            call = pickle.loads(pickle.dumps(original))  # copies, as a worker gets them
            listener.started(call)
            attack = self.attacks[call.name]
            ctx = AttackContext(call.seed, Budget(call.budget), lambda d, t, c=call: listener.progress(c, d, t),
                                shared=shared_store(self.shared, attack, call), fits=self.fits[call.fit_group])
            with one_torch_thread():
                result = execute(attack, call, ctx)
            listener.finished(call)
            yield original, result

    def close(self) -> None:
        pass

    def stop(self) -> None:
        pass  # a call in this process cannot be interrupted: it ends when its attack returns
