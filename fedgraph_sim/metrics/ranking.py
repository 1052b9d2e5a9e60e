"""Ranking and classification scores for one small reconstruction, in plain numpy.

The same definitions as scikit-learn's ``roc_auc_score``, ``average_precision_score`` and
``f1_score(average="weighted")`` (tests compare them on random inputs with ties), without their
input validation, which costs 20-50x the arithmetic at molecule sizes and dominated scoring.
"""

from __future__ import annotations

import numpy as np


def _curve(truth: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """True and false positives above each distinct score, highest score first."""
    order = np.argsort(scores, kind="mergesort")[::-1]
    scores, truth = scores[order], truth[order].astype(np.float64)
    last_of_tie = np.r_[np.flatnonzero(np.diff(scores)), truth.size - 1]
    tps = np.cumsum(truth)[last_of_tie]
    return tps, (last_of_tie + 1) - tps


def roc_auc(truth: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve (trapezoids through tied scores); both classes must be present.

    Args:
        truth (np.ndarray): 0/1 labels ``[m]``.
        scores (np.ndarray): scores ``[m]``, higher meaning more likely 1.
    """
    tps, fps = _curve(np.asarray(truth), np.asarray(scores, dtype=np.float64))
    tpr, fpr = np.r_[0.0, tps / tps[-1]], np.r_[0.0, fps / fps[-1]]
    return float(np.trapezoid(tpr, fpr))


def average_precision(truth: np.ndarray, scores: np.ndarray) -> float:
    """Sum over thresholds of precision times the recall gained there (no interpolation).

    Args:
        truth (np.ndarray): 0/1 labels ``[m]``, at least one 1.
        scores (np.ndarray): scores ``[m]``, higher meaning more likely 1.
    """
    tps, fps = _curve(np.asarray(truth), np.asarray(scores, dtype=np.float64))
    precision = tps / (tps + fps)
    recall = tps / tps[-1]
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def weighted_f1(true: np.ndarray, pred: np.ndarray) -> float:
    """F1 per class present in ``true``, weighted by its support (0 where undefined).

    Args:
        true (np.ndarray): true classes ``[m]``, ``m >= 1``.
        pred (np.ndarray): predicted classes ``[m]``.
    """
    true, pred = np.asarray(true), np.asarray(pred)
    labels, support = np.unique(true, return_counts=True)
    hits = np.array([np.sum((true == c) & (pred == c)) for c in labels], dtype=np.float64)
    predicted = np.array([np.sum(pred == c) for c in labels], dtype=np.float64)
    denominator = support + predicted  # F1 = 2 tp / (2 tp + fp + fn)
    f1 = np.divide(2 * hits, denominator, out=np.zeros_like(hits), where=denominator > 0)
    return float(f1 @ support / support.sum())
