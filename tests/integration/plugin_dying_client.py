"""Client processes that die, for the dead-client test, loaded as a plugin: a defense that kills
the process running its turn (SIGKILL, as the kernel's out-of-memory killer would).

``FEDGRAPH_TEST_DEATH`` lists one mode per victim, ``always`` or ``once`` (comma-separated). The
first turn to reach the defense claims ``<FEDGRAPH_TEST_DEATH_DIR>/victim_0`` and dies, the next
other turn ``victim_1``, and so on. A turn is recognised by its first seeded draw, the same in
every attempt of the turn: an ``always`` victim dies again every time its turn is run, a ``once``
victim only the first time."""

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
        folder = Path(os.environ["FEDGRAPH_TEST_DEATH_DIR"])
        for i, mode in enumerate(os.environ["FEDGRAPH_TEST_DEATH"].split(",")):
            victim = folder / f"victim_{i}"
            try:
                with open(victim, "x") as file:
                    file.write(turn)
            except FileExistsError:
                if victim.read_text() != turn:
                    continue  # another turn's victim
                if mode != "always":
                    return update  # a once victim's second attempt
            os.kill(os.getpid(), signal.SIGKILL)
        return update
