"""Captured updates: what the curious server observed, stored so attacks can run later.

A sweep runs one federation per (dataset, defense setting, seed) with capture on, then replays
the captured updates to every attack in separate processes (breaching's separation of the case
from the attack). ``<run>/capture/round_<r>.pt`` holds the round's selected
:class:`~fedgraph_sim.threat.ObservedUpdate` objects, exactly as the observer received them, and
the round's failed client turns (:class:`~fedgraph_sim.threat.ClientFailure`).
"""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path

import torch

from fedgraph_sim.threat import ClientFailure, ObservedUpdate

_FIELDS = [f.name for f in fields(ObservedUpdate) if f.init]


class CaptureStore:
    """The captured updates of one run, under ``<run_dir>/capture``.

    Args:
        run_dir (str or Path): the run's directory.
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.root = Path(run_dir) / "capture"

    def write(self, round: int, updates: list[ObservedUpdate], failures: list[ClientFailure] = ()) -> None:
        """Save one round's observed updates and failed turns as ``round_<r>.pt``, replacing any
        earlier file atomically.

        Args:
            round (int): the server round.
            updates (list[ObservedUpdate]): the updates the observer received, in its order.
            failures (list[ClientFailure], optional): the round's failed client turns.
                (default: ``()``)
        """
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / f"round_{round}.pt"
        tmp = path.with_suffix(".tmp")
        torch.save({"updates": [{name: getattr(u, name) for name in _FIELDS} for u in updates],
                    "failures": [asdict(f) for f in failures]}, tmp)
        tmp.replace(path)

    def rounds(self) -> list[int]:
        """The rounds captured so far, ascending."""
        return sorted(int(p.stem.split("_")[1]) for p in self.root.glob("round_*.pt"))

    def read(self, round: int) -> tuple[list[ObservedUpdate], list[ClientFailure]]:
        """One round's ``(observed updates, failed client turns)``, as written.

        Args:
            round (int): the server round; its file must exist.
        """
        blob = torch.load(self.root / f"round_{round}.pt", weights_only=False)
        return ([ObservedUpdate(**entry) for entry in blob["updates"]],
                [ClientFailure(**entry) for entry in blob["failures"]])
