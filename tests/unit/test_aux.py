import pytest

from attacks.base import AttackContext, AttackFailed, AttackTimeout, Budget
from attacks.common.aux import trained_once


def test_a_model_is_trained_once_per_key():
    ctx, calls = AttackContext(seed=0, budget=Budget(60)), []

    def train():
        calls.append(1)
        return object()

    first = trained_once(ctx, ("m", 1), train)
    assert trained_once(ctx, ("m", 1), train) is first and len(calls) == 1
    assert trained_once(ctx, ("m", 2), train) is not first and len(calls) == 2


def test_a_training_cut_by_the_budget_fails_the_later_calls_at_once():
    ctx, calls = AttackContext(seed=0, budget=Budget(0)), []

    def train():
        calls.append(1)
        ctx.budget.check()  # the budget is spent: AttackTimeout

    with pytest.raises(AttackTimeout):
        trained_once(ctx, ("m",), train)
    ctx.budget = Budget(60)
    with pytest.raises(AttackFailed, match="ran out of time in an earlier call"):
        trained_once(ctx, ("m",), train)
    assert len(calls) == 1
