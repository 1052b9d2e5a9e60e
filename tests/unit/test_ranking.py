import numpy as np
import pytest
from sklearn.metrics import average_precision_score, f1_score, roc_auc_score

from fedgraph_sim.metrics.ranking import average_precision, roc_auc, weighted_f1


def _cases():
    rng = np.random.default_rng(0)
    for n in (2, 5, 17, 120):
        for levels in (2, 4, None):  # few distinct scores (ties) or continuous
            truth = rng.integers(0, 2, n)
            truth[:2] = (0, 1)  # both classes
            scores = rng.random(n) if levels is None else rng.integers(0, levels, n) / levels
            yield truth, scores


@pytest.mark.parametrize("truth,scores", list(_cases()))
def test_auc_and_ap_are_sklearns(truth, scores):
    assert roc_auc(truth, scores) == pytest.approx(roc_auc_score(truth, scores), abs=1e-12)
    assert average_precision(truth, scores) == pytest.approx(average_precision_score(truth, scores), abs=1e-12)


def test_hand_made_rankings():
    assert roc_auc(np.array([0, 0, 1, 1]), np.array([0.1, 0.2, 0.8, 0.9])) == 1.0
    assert roc_auc(np.array([1, 1, 0, 0]), np.array([0.1, 0.2, 0.8, 0.9])) == 0.0
    assert roc_auc(np.array([0, 1]), np.array([0.5, 0.5])) == 0.5  # a tie is half right
    # positives ranked 1st and 3rd: precision 1 at recall 1/2, 2/3 at recall 1
    assert average_precision(np.array([1, 0, 1]), np.array([0.9, 0.8, 0.7])) == pytest.approx((1 + 2 / 3) / 2)


def test_weighted_f1_is_sklearns():
    rng = np.random.default_rng(1)
    for _ in range(20):
        true, pred = rng.integers(0, 4, 30), rng.integers(0, 5, 30)  # a class only predicted, too
        expected = f1_score(true, pred, average="weighted", zero_division=0.0)
        assert weighted_f1(true, pred) == pytest.approx(expected, abs=1e-12)
    assert weighted_f1(np.array([0, 0, 1]), np.array([0, 0, 1])) == 1.0
    assert weighted_f1(np.array([0, 0]), np.array([1, 1])) == 0.0
