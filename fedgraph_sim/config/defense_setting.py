"""A defense stack as tables and figures group it: :class:`DefenseSetting` and its label."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class DefenseSetting:
    """A defense stack with what tables and figures group it by: its ``family`` (the names
    joined by ``+``; ``none`` without defenses) and its ``strength``, the value of ``param``: the
    swept parameter in a sweep grid, else the stack's only numeric parameter (NaN when it has
    none or several; 0 without defenses)."""

    stack: list
    family: str
    param: str | None
    strength: float

    @property
    def label(self) -> str:
        """The stack's compact name (:func:`defense_label`)."""
        return defense_label(self.stack)

    @classmethod
    def of(cls, stack: list[dict[str, Any]], swept: str | None = None) -> "DefenseSetting":
        """The setting of ``stack``, its family and strength read from the entries.

        Args:
            stack (list[dict[str, Any]]): the defense entries, each ``{"name": ..., <param>: ...}``.
            swept (str, optional): the parameter a sweep grid varies; its (first) value is the
                strength. None takes the stack's only numeric parameter. (default: :obj:`None`)
        """
        if not stack:
            return cls([], "none", None, 0.0)
        family = "+".join(str(entry.get("name", "?")) for entry in stack)
        numbers = [(k, v) for entry in stack for k, v in entry.items() if k != "name" and _numeric(v)]
        if swept is not None:
            numbers = [(k, v) for k, v in numbers if k == swept][:1]
        if len(numbers) != 1:
            return cls(stack, family, None, math.nan)
        param, strength = numbers[0]
        return cls(stack, family, param, float(strength))


def defense_label(entries: list[dict[str, Any]]) -> str:
    """A compact name for a defense stack, e.g. ``prune(p=0.9)+dp_gradients(sigma=0.1)``;
    ``none`` for an empty one.

    Args:
        entries (list[dict[str, Any]]): the defense entries, each with a ``name``.
    """
    if not entries:
        return "none"
    parts = []
    for entry in entries:
        params = ",".join(f"{k}={v}" for k, v in entry.items() if k != "name")
        parts.append(f"{entry['name']}({params})" if params else entry["name"])
    return "+".join(parts)
