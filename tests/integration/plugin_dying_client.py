"""Client processes that die, for the dead-client test, loaded as a plugin: a defense that kills
the process running its turn (SIGKILL, as the kernel's out-of-memory killer would). The first turn
to reach it claims ``<FEDGRAPH_TEST_DEATH_DIR>/victim`` and dies; with ``FEDGRAPH_TEST_DEATH=always``
that turn dies again every time it is run (recognised by its first seeded draw, the same in every
attempt of the turn), with ``once`` it dies only the first time."""

import os
import signal
from pathlib import Path

import torch

from clients.defenses.base import Defense
from fedgraph_sim import registry


@registry.defenses.register
class Dies(Defense):
    name = "dies"

    def __init__(self) -> None:  # no parameters (build_defenses reads them from the signature)
        pass

    def apply(self, update, rng):
        turn = repr(torch.rand(1, generator=rng.clone_state() if hasattr(rng, "clone_state") else
                                torch.Generator().set_state(rng.get_state())).item())
        victim = Path(os.environ["FEDGRAPH_TEST_DEATH_DIR"]) / "victim"
        try:
            with open(victim, "x") as file:
                file.write(turn)
        except FileExistsError:
            if os.environ["FEDGRAPH_TEST_DEATH"] != "always" or victim.read_text() != turn:
                return update
        os.kill(os.getpid(), signal.SIGKILL)
