"""Process hygiene shared by the server's attack workers and the sweep runner's workers."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from typing import Iterator

import torch


def die_with_parent(parent: int) -> None:
    """Ask the kernel to SIGKILL this process when ``parent`` dies (Linux ``PR_SET_PDEATHSIG``;
    elsewhere a worker notices at its next read from a closed pipe), so a killed server or sweep
    runner leaves no orphan writing on."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Torch on one intra-op thread for the block. Float reductions then run in the same order
    whichever process does the work (a worker, the server, a sweep job), so rows do not depend on
    it. At molecule sizes a second thread gains little when the cores are free and costs several
    times over when they are busy with Ray, clients and workers (``benchmarks/bench_scoring.py``)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
