"""Which attack worker runs which call, shared by the process pool and the Ray actors: how many
workers to start (:func:`slots`), the groups of attacks that keep state, each pinned to one worker
(:func:`stateful_groups`), and the queue a free worker takes its next calls from (:class:`CallQueue`).
"""

from __future__ import annotations

from typing import Any

from attacks.base import Attack
from server.attack_calls import Call, group_of

__all__ = ["CallQueue", "slots", "stateful_groups"]


def stateful_groups(attacks: dict[str, Attack]) -> list[str]:
    """The groups of attacks that keep state between calls, each pinned to one worker."""
    return list(dict.fromkeys(group_of(n) for n, a in attacks.items() if a.keeps_state))


def slots(attacks: dict[str, Attack], workers: int) -> int:
    """How many workers to start: ``workers``, but no more than the stateful groups when every
    attack keeps state (the others would have nothing to do)."""
    if attacks and all(a.keeps_state for a in attacks.values()):
        workers = min(workers, len(stateful_groups(attacks)))
    return max(1, workers)


class CallQueue:
    """Which call a worker takes next: the first pending one it may take (a stateful group's calls
    only the worker ``pinned`` to the group, in the server's order), together with the later calls
    that share its fit (``Call.shares_fit_with``), which must run after it on the same worker."""

    def __init__(self, pinned: dict[str, Any]) -> None:
        self.pinned = pinned
        self.pending: list[Call] = []

    def take(self, worker: Any) -> list[Call]:
        for i, call in enumerate(self.pending):
            if self.pinned.get(group_of(call.name), worker) is worker:
                self.pending.pop(i)
                if group_of(call.name) in self.pinned:  # a pinned group keeps the server's order
                    return [call]
                sharing = [c for c in self.pending if c.shares_fit_with(call)]
                self.pending = [c for c in self.pending if not c.shares_fit_with(call)]
                return [call, *sharing]
        return []
