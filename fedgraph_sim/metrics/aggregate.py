"""Aggregation over attacked graphs: compute per graph, then mean, std and count."""

from __future__ import annotations

import math
from typing import Iterable, Mapping


def aggregate(rows: Iterable[Mapping], metric: str) -> dict[str, float]:
    """``{"mean", "std", "count", "skipped"}`` of ``metric`` over rows; NaN or missing values
    (e.g. AUC on a one-class entry set) are skipped and counted, not averaged."""
    values, skipped = [], 0
    for row in rows:
        value = row.get(metric)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            skipped += 1
        else:
            values.append(float(value))
    if not values:
        return {"mean": float("nan"), "std": float("nan"), "count": 0, "skipped": skipped}
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / len(values)
    return {"mean": mean, "std": math.sqrt(var), "count": len(values), "skipped": skipped}
