"""The one process supervisor: how the server's attack workers, the sweep runner's jobs, the stop
handlers and the deployment launcher start, watch and end the processes they own.

Every process is started by :func:`spawn`, as the leader of its own process group (a terminal's
Ctrl-C reaches only the owner, which decides what stops), and by default dies with its owner
(:func:`die_with_parent`). :func:`end` stops processes for good: SIGTERM to each group, SIGKILL once
its grace has run out, to the groups and to every descendant that was seen below them (one that
left its group included), then waits until each is reaped or gone. :func:`kill_descendants` is the
last resort of a stop that owns no handle to its processes (a process pool's workers).
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import functools
import inspect
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterable, Iterator

from fedgraph_sim.errors import ConfigError


def die_with_parent(parent: int | None, sig: int = signal.SIGKILL) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent dies (Linux
    ``PR_SET_PDEATHSIG``; elsewhere a worker notices at its next read from a closed pipe), so a
    killed server, sweep runner or launcher leaves no orphan writing on. With the ``parent``'s PID,
    exit at once if it died before the request took effect (``None``: in a ``preexec_fn``, where
    the parent is still waiting for the exec).

    Args:
        parent (int, optional): the parent's PID, to exit with status 1 if it is gone already; None
            skips that check.
        sig (int, optional): the signal to receive. (default: ``signal.SIGKILL``)
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, sig)
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def descendants(root: int | None = None) -> set[int]:
    """The process IDs below ``root`` (default: this process), read from ``/proc`` (Linux; empty
    elsewhere).

    Args:
        root (int, optional): the PID whose children, grandchildren, ... are listed; None (or 0)
            means this process. (default: :obj:`None`)
    """
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
    below, frontier = set(), {root or os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - below
        below |= frontier
    return below


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not).

    Args:
        pid (int): the process ID. Without ``/proc`` (not Linux), whether a signal can reach it.
    """
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        with contextlib.suppress(OSError):
            os.kill(pid, 0)
            return not Path("/proc").exists()
        return False
    return state not in ("Z", "X")


def spawn(command: list[str], die_signal: int | None = signal.SIGKILL, **popen_args) -> subprocess.Popen:
    """Start ``command`` (``subprocess.Popen``'s keyword arguments passed on) as the leader of a
    new process group and session, which gets ``die_signal`` when the thread that started it dies
    (``None``: not at all; the attack workers watch a lifeline pipe instead, because the kernel's
    request follows the starting thread, and a worker restarted from a serving thread must outlive
    it).

    Args:
        command (list[str]): the program and its arguments.
        die_signal (int, optional): the signal the process gets when its starting thread dies; None
            for none. (default: ``signal.SIGKILL``)
        **popen_args: further keyword arguments of :class:`subprocess.Popen` (its ``preexec_fn``
            is replaced when ``die_signal`` is set).
    """
    if die_signal is not None:
        popen_args["preexec_fn"] = functools.partial(die_with_parent, None, die_signal)
    return subprocess.Popen(command, start_new_session=True, **popen_args)


def end(processes: Iterable[subprocess.Popen], grace: float, seen: Iterable[int] = ()) -> set[int]:
    """Stop ``processes`` and everything below them: SIGTERM to each one's group (none when
    ``grace`` is 0), SIGKILL after ``grace`` seconds to the groups, to their descendants and to the
    PIDs in ``seen`` (those seen below them earlier) still alive; each reaped. Returns every PID
    it stopped.

    Args:
        processes (Iterable[subprocess.Popen]): processes started by :func:`spawn`, in start order
            (SIGTERM goes to the last started first).
        grace (float): seconds the processes get to exit after SIGTERM; 0 sends SIGKILL at once.
        seen (Iterable[int], optional): PIDs seen below them earlier, killed too if still alive
            (e.g. one that left its group). (default: ``()``)
    """
    processes = list(processes)
    pids = set(seen) | {p.pid for p in processes}
    for proc in processes:
        pids |= descendants(proc.pid)
    if grace > 0:
        for proc in reversed(processes):  # the last started first: a run before the server it talks to
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for proc in processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    for proc in processes:
        _signal_group(proc, signal.SIGKILL)
    for pid in pids:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    for proc in processes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
    deadline = time.monotonic() + 5  # SIGKILL is delivered asynchronously
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pids


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc``'s process group now, without waiting (safe from another thread).

    Args:
        proc (subprocess.Popen): a process started by :func:`spawn` (the leader of its group).
    """
    _signal_group(proc, signal.SIGKILL)


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _is_resource_tracker(cmdline: bytes) -> bool:
    """Python's multiprocessing resource tracker, which exits by itself when its parent does."""
    return b"multiprocessing.resource_tracker" in cmdline


def kill_descendants(root: int | None = None) -> None:
    """SIGKILL every process below ``root`` (default: this process): a stopped sweep's jobs, with
    the Ray clusters and attack workers they started. This process's resource tracker is spared:
    killed, it is relaunched empty and prints a traceback for every semaphore the pool then
    releases.

    Args:
        root (int, optional): the PID whose descendants are killed; None means this process.
            (default: :obj:`None`)
    """
    for pid in descendants(root):
        with contextlib.suppress(OSError):
            if not _is_resource_tracker(Path(f"/proc/{pid}/cmdline").read_bytes()):
                os.kill(pid, signal.SIGKILL)


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
    run the call again (and again, in its own workers): one line saying what to add instead.

    Args:
        what (str): the function being called, for the message (e.g. ``"fedgraph_sim.runtime.sweep()"``).

    Raises:
        ConfigError: when the calling script's top-level line is outside the guard.
    """
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
