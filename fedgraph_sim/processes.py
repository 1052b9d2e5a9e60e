"""Process hygiene shared by the server's attack workers, the sweep runner's workers, the stop
handlers and the deployment launcher."""

from __future__ import annotations

import ast
import contextlib
import ctypes
import inspect
import os
import signal
import sys
from pathlib import Path
from typing import Iterator

from fedgraph_sim.errors import ConfigError


def die_with_parent(parent: int | None, sig: int = signal.SIGKILL) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent dies (Linux
    ``PR_SET_PDEATHSIG``; elsewhere a worker notices at its next read from a closed pipe), so a
    killed server, sweep runner or launcher leaves no orphan writing on. With the ``parent``'s PID,
    exit at once if it died before the request took effect (``None``: in a ``preexec_fn``, where
    the parent is still waiting for the exec)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, sig)
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def descendants(root: int | None = None) -> set[int]:
    """The process IDs below ``root`` (default: this process), read from ``/proc`` (Linux; empty
    elsewhere)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
    below, frontier = set(), {root or os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - below
        below |= frontier
    return below


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Torch on one intra-op thread for the block. Float reductions then run in the same order
    whichever process does the work (a worker, the server, a sweep job), so rows do not depend on
    it. At molecule sizes a second thread gains little when the cores are free and costs several
    times over when they are busy with Ray, clients and workers (``benchmarks/bench_scoring.py``)."""
    import torch  # here: the sweep runner and the launcher use this module without torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _under_main_guard(tree: ast.Module, line: int) -> bool:
    """Whether ``line`` lies inside an ``if __name__ == "__main__":`` block of the module."""
    for node in tree.body:
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__"
                and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in node.test.comparators)
                and node.lineno <= line <= (node.end_lineno or node.lineno)):
            return True
    return False


def check_main_guard(what: str) -> None:
    """Refuse to start spawned processes from a script's top level outside ``if __name__ ==
    "__main__":``. Each spawned interpreter re-imports the script to find its functions, and would
    run the call again (and again, in its own workers): one line saying what to add instead."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not path:
        return  # an interactive session or ``python -c``: nothing is re-imported
    for info in inspect.stack():
        frame = info.frame
        if frame.f_code.co_name == "<module>" and frame.f_code.co_filename == path:
            try:
                tree = ast.parse(open(path).read())
            except (OSError, SyntaxError, ValueError):
                return
            if not _under_main_guard(tree, frame.f_lineno):
                raise ConfigError(f"{path}:{frame.f_lineno}: {what} starts worker processes, which import this script "
                                  "again and would run it again; put the call under 'if __name__ == \"__main__\":'")
            return
