"""Seeding NumPy's global generator for a library call that takes no generator, without leaking.

Flower's DP noise (``flwr.supercore.differential_privacy``, its adaptive clipping's count) and
SecAgg+'s stochastic rounding draw from ``np.random``, the process's global generator, and take
no ``Generator`` to draw from instead. The bench seeds that generator before such a call, so a
run's noise depends on its seed alone; :func:`restored_numpy_state` puts the generator back as it
was once the call is over, so the seeding changes no draw of other code in the same process.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np


@contextlib.contextmanager
def restored_numpy_state() -> Iterator[None]:
    """Inside, seed and draw from ``np.random`` freely; on leaving (by an exception too), its state
    is what it was on entering."""
    state = np.random.get_state()
    try:
        yield
    finally:
        np.random.set_state(state)
