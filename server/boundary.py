"""The threat boundary around attack code: which paths the attack workers must not see, and
whether they run in :mod:`server.sandbox`'s namespaces (``attack.boundary``).

What the workers see is what they need to run, read-only, and nothing else: the system's
directories, the Python installation's own folders, and a code view of each package they import
(the project's ``attacks``, ``clients``, ``server`` and ``fedgraph_sim``, every plugin, every
top-level module the server has imported from outside the installation): a copy of its code files
alone, so that a checkout's runs, caches, data and results are not there at all, wherever they
lie (:func:`server.sandbox.plan`). Covered besides, where they fall inside what is bound: the
data root (``FEDGRAPH_DATA_ROOT``), the dataset cache (``FEDGRAPH_CACHE``), the output base
(``output.dir``), the run's own directory and a replayed federation's.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path

from fedgraph_sim.config import RunConfig
from fedgraph_sim.data.store import cache_root, data_root
from fedgraph_sim.errors import ConfigError
from server import sandbox

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Boundary:
    """``isolate``: run the workers in the sandbox; ``hidden``: paths they must not see;
    ``modules``: what they import (the project's packages and plugins), each seen as a code view
    of its own folder or file."""

    isolate: bool = True
    hidden: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()

    def hiding(self, *paths: Path | str | None) -> Boundary:
        """This boundary, hiding ``paths`` too (a run's directory, a replayed federation)."""
        return dataclasses.replace(self, hidden=self.hidden + tuple(str(p) for p in paths if p is not None))

    def layout(self, conn_fd: int, lifeline_fd: int) -> dict:
        """The worker's layout (:func:`server.sandbox.plan`), with its end of the pipes."""
        hidden = list(self.hidden) if self.isolate else []
        try:
            return sandbox.plan(hidden, list(self.modules), conn_fd, lifeline_fd, self.isolate)
        except sandbox.BoundaryError as exc:
            raise ConfigError(f"attack.boundary: {exc}") from None


def boundary_for(config: RunConfig) -> Boundary:
    """The boundary ``attack.boundary`` asks for on this machine; a :class:`ConfigError` when it
    cannot be had (namespaces asked where the kernel refuses them, or a hidden path that holds the
    code)."""
    mode = config.attack.boundary
    if config.attack.workers == 0:  # every call in the server's process: no boundary to build
        return Boundary(isolate=False)
    why_not = sandbox.namespaces_available() if mode != "process" else ""
    if mode == "namespaces" and why_not:
        raise ConfigError(f"attack.boundary: namespaces cannot be had here ({why_not}); "
                          "attack.boundary: process runs the workers as plain processes")
    if mode == "auto" and why_not:
        log.warning("attack workers run as plain processes, outside any namespace (%s): attack code can "
                    "read what this user can", why_not)
    hidden = [str(p) for p in (data_root(), cache_root(), Path(config.output.dir).absolute()) if p is not None]
    user = ()
    if config.model.module is not None:  # a user's model: its file or package, as a code view too
        from fedgraph_sim.models.user import code_of
        user = (code_of(config.model.module),)
    boundary = Boundary(isolate=mode != "process" and not why_not, hidden=tuple(hidden),
                        modules=("attacks", "clients", "server", "fedgraph_sim", *config.plugins, *user))
    boundary.layout(-1, -1)  # refuses a hidden path that holds the code now, before anything is written
    return boundary

