"""Seeding NumPy's global generator inside ``restored_numpy_state`` draws as seeding it outside
does, and leaves the generator as it found it, an exception included."""

import numpy as np
import pytest

from fedgraph_sim.numpy_state import restored_numpy_state


def _state() -> tuple:
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return kind, keys.tolist(), pos, has_gauss, cached


def test_the_draws_are_the_seeds_and_the_global_state_is_restored():
    np.random.seed(123)
    np.random.normal()  # a cached Gaussian is part of the state too
    before = _state()
    with restored_numpy_state():
        np.random.seed(7)
        inside = np.random.normal(size=5)
    assert _state() == before
    np.random.seed(7)
    assert np.array_equal(inside, np.random.normal(size=5))


def test_the_state_is_restored_when_the_call_raises():
    before = _state()
    with pytest.raises(RuntimeError), restored_numpy_state():
        np.random.seed(7)
        np.random.rand(3)
        raise RuntimeError("the wrapped call failed")
    assert _state() == before
