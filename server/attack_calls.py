"""What crosses between the attack runner and an executor: a call to an attack (:class:`Call`),
how it went (:class:`CallResult`) and what the executor reports while calls run
(:class:`Listener`).

Every executor (in this process, a pool of worker processes, Ray actors) takes the same calls and
gives back the same results; a call and its result are pickled on their way to a worker and back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Call", "CallResult", "Listener", "group_of"]


@dataclass
class Call:
    """One attack call: ``prepare`` (``payload`` = the round's updates) or ``reconstruct``
    (``payload`` = one update)."""

    index: int
    kind: str
    name: str
    payload: Any
    knowledge: Any
    seed: int
    budget: float
    fit_group: str = ""  # the attack whose fit this call shares (``attacks.base.fit_groups``); default its own

    def __post_init__(self) -> None:
        self.fit_group = self.fit_group or self.name

    def shares_fit_with(self, other: Call) -> bool:
        return (self.kind == other.kind == "reconstruct" and self.seed == other.seed
                and self.fit_group == other.fit_group)


@dataclass
class CallResult:
    status: str
    message: str = ""
    output: Any = None  # what ``reconstruct`` returned (not yet checked), or None
    seconds: float = 0.0
    hints_read: frozenset = frozenset()  # the granted hints ``reconstruct`` read
    info: dict = field(default_factory=dict)  # the diagnostics of an attack that stopped without output


class Listener:
    """What the executor tells the runner while calls run (progress bars)."""

    def started(self, call: Call) -> None: ...

    def progress(self, call: Call, done: int, total: int) -> None: ...

    def finished(self, call: Call) -> None: ...


def group_of(name: str) -> str:
    """An attack's variants share a worker and a ``ctx.shared`` store: ``graphdlg@refine`` ->
    ``graphdlg``."""
    return name.split("@")[0]
