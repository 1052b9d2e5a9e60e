"""Per defense family, the cheapest setting of its ladder that stops the exact attack.

A setting *stops* the exact attack when every attack that is not a prior rebuilds fewer than
``below`` of the attacked graphs exactly (``full_repo``, GRAIN's FULL: Drencheva et al., ICLR 2025;
over every attacked graph, an attack that fails counting 0, as the tables show it). Of the
settings of one family (and one dataset and training setting) that stop it, the *cheapest* is
the one whose global model is the most accurate; without test accuracy, the weakest. Its cost is
the accuracy (and, with two classes, the AUC) lost against the undefended federation of the same
training setting, and its ε the largest DP-SGD epsilon an attacked client had spent. An attack
that does not apply (``not_applicable``) attacked no graph and does not count either way; a
setting no attack was run on is left out.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from fedgraph_sim.metrics import PRIORS, metric
from fedgraph_sim.report.groups import Group, by_setting, largest_epsilon

STOP_METRIC = "full_repo"
STOP_BELOW = 0.01


@dataclass(frozen=True)
class Setting:
    """One (dataset, training setting, defense setting): its best attack and its utility."""

    defense: str
    family: str
    order: tuple
    value: float  # the best attack's mean of the stop metric
    attack: str
    accuracy: float
    auc: float  # test AUC (two classes; NaN otherwise)
    epsilon: float


@dataclass(frozen=True)
class Verdict:
    """One defense family in one (dataset, training setting)."""

    dataset: str
    setting: str
    family: str
    undefended: Setting | None
    cheapest: Setting | None  # None: no setting of the ladder stops the attack
    strongest: Setting  # the family's last setting (by strength)

    @property
    def cost(self) -> float:
        """Test accuracy lost against the undefended federation (NaN when either is unknown)."""
        if self.cheapest is None or self.undefended is None:
            return math.nan
        return self.undefended.accuracy - self.cheapest.accuracy

    @property
    def auc_cost(self) -> float:
        """Test AUC lost against the undefended federation (NaN when either is unknown)."""
        if self.cheapest is None or self.undefended is None:
            return math.nan
        return self.undefended.auc - self.cheapest.auc


def _settings(groups: list[Group], name: str) -> dict[tuple[str, str], list[Setting]]:
    """(dataset, training setting) -> its defense settings that some attack was run on."""
    out: dict[tuple[str, str], list[Setting]] = defaultdict(list)
    for (dataset, setting, defense), mine in by_setting(groups).items():
        values = [(g.shown(name)["mean"], g.attack) for g in mine if g.attack not in PRIORS]
        values = [(v, a) for v, a in values if not math.isnan(v)]
        if not values:
            continue
        value, attack = max(values)
        out[dataset, setting].append(Setting(
            defense, mine[0].family, mine[0].order, value, attack, mine[0].test_accuracy()["mean"],
            mine[0].test_auc(), largest_epsilon(mine)))
    return out


def verdicts(groups: list[Group], name: str = STOP_METRIC, below: float = STOP_BELOW) -> list[Verdict]:
    """One verdict per (dataset, training setting, defense family), in the groups' order."""
    out = []
    for (dataset, setting), settings in _settings(groups, name).items():
        undefended = next((s for s in settings if s.family == "none"), None)
        for family in dict.fromkeys(s.family for s in settings if s.family != "none"):
            ladder = sorted((s for s in settings if s.family == family), key=lambda s: s.order)
            stopping = [s for s in ladder if s.value < below]
            # the most accurate; equal (or unknown) accuracy: the weakest, the first of the ladder
            cheapest = max(stopping, key=lambda s: (-math.inf if math.isnan(s.accuracy) else s.accuracy,
                                                   -ladder.index(s)), default=None)
            out.append(Verdict(dataset, setting, family, undefended, cheapest, ladder[-1]))
    return out


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def _utility(setting: Setting) -> str:
    """Test accuracy, and the AUC beside it where the task has one."""
    if math.isnan(setting.accuracy):
        return "-"
    return f"{setting.accuracy:.3f}" + ("" if math.isnan(setting.auc) else f" (AUC {setting.auc:.3f})")


def _cost(verdict: Verdict) -> str:
    if math.isnan(verdict.cost):
        return "-"
    return f"{verdict.cost:+.3f}" + ("" if math.isnan(verdict.auc_cost) else f" (AUC {verdict.auc_cost:+.3f})")


def stopping_table(groups: list[Group], name: str = STOP_METRIC, below: float = STOP_BELOW) -> str:
    """The report's section: one markdown row per verdict, or "" when no defended setting was
    attacked with the stop metric."""
    found = verdicts(groups, name, below)
    if not found:
        return ""
    short = metric(name).short
    lines = ["## Cheapest defense that stops the exact attack\n",
             f"Per defense family: the setting of its ladder with the most accurate global model among "
             f"those where every attack rebuilds fewer than {100 * below:g}% of the attacked graphs "
             f"exactly ({short}, over every attacked graph, a failure counted as 0), beside the "
             "undefended federation of the same training setting; cost: the test accuracy (and AUC) lost; ε: the "
             "largest DP-SGD epsilon an attacked client had spent. \"none stops it\": the best attack's "
             f"{short} at the ladder's strongest setting instead.\n",
             f"| dataset | setting | family | undefended {short} (attack) | test acc | cheapest stopping setting "
             f"| its {short} (best attack) | test acc | cost | ε |", "|" + "---|" * 10]
    for v in found:
        base = v.undefended
        before = (f"{_percent(base.value)} ({base.attack})", _utility(base)) if base else ("-", "-")
        chosen = v.cheapest
        if chosen is None:
            after = (f"none stops it (at {v.strongest.defense})", f"{_percent(v.strongest.value)} "
                     f"({v.strongest.attack})", _utility(v.strongest), "-", "-")
        else:
            eps = "-" if math.isnan(chosen.epsilon) else f"{chosen.epsilon:.3g}"
            after = (chosen.defense, f"{_percent(chosen.value)} ({chosen.attack})", _utility(chosen),
                     _cost(v), eps)
        lines.append("| " + " | ".join([v.dataset, v.setting or "-", v.family, *before, *after]) + " |")
    return "\n".join(lines) + "\n"
