"""The aggregate statistics the reports and the audit state claims with: the bound on a rate
when none was seen, and the Student-t interval of a mean over a few seeds."""

import math

import pytest

from fedgraph_sim.metrics import mean_interval, none_seen_bound


def test_the_bound_when_none_was_seen_is_at_most_5_percent_from_59_trials_on():
    assert none_seen_bound(58) > 0.05 >= none_seen_bound(59)
    assert none_seen_bound(1) == pytest.approx(0.95)
    assert none_seen_bound(300) == pytest.approx(3 / 300, rel=0.01)  # the rule of three
    assert math.isnan(none_seen_bound(0))


def test_the_interval_of_a_mean_over_seeds_is_students_t():
    mean, low, high = mean_interval([0.70, 0.72, 0.74])
    assert mean == pytest.approx(0.72)
    half = 4.302652729911275 * 0.02 / math.sqrt(3)  # t(0.975, 2) * s / sqrt(n)
    assert (low, high) == pytest.approx((0.72 - half, 0.72 + half))
    assert mean_interval([0.5, float("nan")])[0] == 0.5 and math.isnan(mean_interval([0.5])[1])
    assert all(math.isnan(v) for v in mean_interval([]))
