"""Result rows grouped per (dataset, attack, training setting, defense setting), with every number
the report shows.

Reconstruction metrics follow the tables' one convention (``rows.statistics.shown``): mean ± std over the
scored graphs, or over every attacked graph with failures as 0 for GRAIN's GSM family. Test
accuracy is a property of a federation, repeated on each of its rows, so it is averaged over the
distinct federations (seeds) of the setting, not over rows. Epsilon grows with the rounds, so it is
mean ± std over the rows that carry it.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from fedgraph_sim.rows.record import Row
from fedgraph_sim.rows.statistics import run_columns, shown


@dataclass
class Group:
    dataset: str
    attack: str
    defense: str
    family: str
    strength: float
    param: str | None = None
    order: tuple = ()  # sort key of the defense setting (see defense_order)
    rows: list[Row] = field(default_factory=list)
    setting: str = ""  # a sweep's settings-axis label ("" without one)

    @property
    def series(self) -> str:
        """What a figure draws as one line: the attack, and its training setting if any."""
        return f"{self.attack} [{self.setting}]" if self.setting else self.attack

    @property
    def ok(self) -> list[Row]:
        return [r for r in self.rows if r.get("status", "ok") == "ok"]

    @property
    def statuses(self) -> Counter:
        return Counter(r.get("status", "ok") for r in self.rows)

    def shown(self, name: str, alignment: str = "identity") -> dict:
        """What the tables show for catalogue metric ``name`` (``rows.statistics.shown``): ``mean``,
        ``std``, ``count``, the ``prior`` and the ``gain`` over it on the same graphs."""
        return shown(self.rows, name, alignment)

    def test_accuracy(self) -> dict[str, float]:
        """Mean ± std over the setting's federations of each one's test accuracy."""
        cols = run_columns(self.rows)
        return {"mean": cols["test_accuracy_mean"], "std": cols["test_accuracy_std"], "count": cols["federations"]}

    def test_auc(self) -> float:
        """Mean over the setting's federations of each one's test AUC (NaN without two classes)."""
        return run_columns(self.rows)["test_auc_mean"]

    def epsilon(self) -> float:
        """The largest DP-SGD epsilon any attacked client had spent (NaN without DP-SGD)."""
        return run_columns(self.rows)["defense_epsilon_max"]


def defense_order(rows: list[Row]) -> dict[str, tuple]:
    """Sort key per defense label: no defense first, then families in order of appearance, then
    strength (settings without one last, by label)."""
    families: dict[str, int] = {}
    keys = {}
    for row in rows:
        family, strength = row["defense_family"], row["defense_strength"]
        rank = -1 if family == "none" else families.setdefault(family, len(families))
        label = row.get("defense", "none")
        keys[label] = (rank, math.isnan(strength), 0.0 if math.isnan(strength) else strength, label)
    return keys


def setting_label(setting: str, defense: str) -> str:
    """A training and defense setting as one label: ``"batch_size=4,local_steps=5 prune(p=0.9)"``."""
    return f"{setting} {defense}".strip() if setting else defense


def group_rows(rows: list[Row]) -> list[Group]:
    """Groups ordered by dataset, attack and setting (first appearance), then defense order."""
    order = defense_order(rows)
    groups: dict[tuple, Group] = {}
    for row in rows:
        key = (row.get("dataset", ""), row.get("attack", "?"), row.get("defense", "none"), row.get("setting") or "")
        if key not in groups:
            groups[key] = Group(*key[:3], family=row["defense_family"], strength=row["defense_strength"],
                                param=row.get("defense_param"), order=order[key[2]], setting=key[3])
        groups[key].rows.append(row)
    firsts = [list(dict.fromkeys(k[i] for k in groups)) for i in (0, 1, 3)]
    return sorted(groups.values(), key=lambda g: (firsts[0].index(g.dataset), firsts[1].index(g.attack),
                                                  firsts[2].index(g.setting), g.order))


def by_setting(groups: list[Group]) -> dict[tuple[str, str, str], list[Group]]:
    """(dataset, training setting, defense setting) -> its groups, one per attack, in order."""
    out: dict[tuple[str, str, str], list[Group]] = {}
    for g in groups:
        out.setdefault((g.dataset, g.setting, g.defense), []).append(g)
    return out


def largest_epsilon(members: list[Group]) -> float:
    """The largest DP-SGD epsilon any of ``members`` records (NaN when none does)."""
    spent = [e for e in (g.epsilon() for g in members) if not math.isnan(e)]
    return max(spent, default=math.nan)


def defense_labels(groups: list[Group]) -> list[str]:
    """Every defense label of ``groups``, by family then strength."""
    order = {g.defense: g.order for g in groups}
    return sorted(order, key=order.__getitem__)
