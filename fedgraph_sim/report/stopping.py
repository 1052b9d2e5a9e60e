"""Per defense family, the cheapest setting of its ladder shown to stop the exact attacks.

A setting *stops* them only by the one stop rule (``report.stop_rule``): no graph rebuilt exactly
(GRAIN's FULL up to isomorphism: Drencheva et al., ICLR 2025) in at least 59 graphs whose call
returned a reconstruction, where the undefended federation of the same dataset and training
setting, on the same seeds and rounds, leaked, and a one-sided Fisher exact test of the two
counts gives p < 0.05. Of the settings of one family that stop them, the *cheapest* is the one
whose global model is the most accurate; without test accuracy, the weakest. Its cost is the
accuracy (and, with two classes, the AUC) lost against the undefended federation, and its ε the
largest DP-SGD epsilon an attacked client had spent. Every other setting says what was measured:
a leak, no leak found on too few graphs (undecided), or not measured (no attack applies, every
call failed); a setting no attack was run on is left out.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field, replace

from fedgraph_sim.metrics import PRIORS
from fedgraph_sim.report.groups import Group, by_setting, largest_epsilon
from fedgraph_sim.report.stop_rule import EXACT, cell, outcome_text, stop_claim, unit_rows


@dataclass(frozen=True)
class Setting:
    """One (dataset, training setting, defense setting): what its attacks rebuilt (``cell``, by
    the stop rule, from ``rows``) and its utility; ``claim`` and ``p``: its stop claim against the
    undefended federation."""

    defense: str
    family: str
    order: tuple
    rows: list[dict] = field(repr=False)
    cell: dict
    accuracy: float
    auc: float  # test AUC (two classes; NaN otherwise)
    epsilon: float
    claim: str | None = None
    p: float | None = None


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


def _settings(groups: list[Group]) -> dict[tuple[str, str], list[Setting]]:
    """(dataset, training setting) -> its defense settings that some attack scored exactly."""
    out: dict[tuple[str, str], list[Setting]] = defaultdict(list)
    for (dataset, setting, defense), mine in by_setting(groups).items():
        rows = [r for g in mine if g.attack not in PRIORS for r in g.rows]
        if not any(EXACT in r for r in rows):
            continue
        out[dataset, setting].append(Setting(defense, mine[0].family, mine[0].order, rows, cell(rows),
                                             mine[0].test_accuracy()["mean"], mine[0].test_auc(),
                                             largest_epsilon(mine)))
    return out


def _claimed(setting: Setting, undefended: Setting | None) -> Setting:
    """``setting`` with its stop claim against the undefended federation on the same units."""
    if undefended is None:
        return replace(setting, claim="no undefended federation to compare with")
    claim, p = stop_claim(cell(unit_rows(undefended.rows, setting.rows)), setting.cell)
    return replace(setting, claim=claim, p=p)


def verdicts(groups: list[Group]) -> list[Verdict]:
    """One verdict per (dataset, training setting, defense family), in the groups' order."""
    out = []
    for (dataset, setting), settings in _settings(groups).items():
        undefended = next((s for s in settings if s.family == "none"), None)
        for family in dict.fromkeys(s.family for s in settings if s.family != "none"):
            ladder = [_claimed(s, undefended) for s in sorted((s for s in settings if s.family == family),
                                                             key=lambda s: s.order)]
            stopping = [(i, s) for i, s in enumerate(ladder) if s.claim == "stops"]
            # the most accurate; equal (or unknown) accuracy: the weakest, the first of the ladder
            best = max(stopping, key=lambda item: (-math.inf if math.isnan(item[1].accuracy) else item[1].accuracy,
                                                   -item[0]), default=None)
            cheapest = best[1] if best else None
            out.append(Verdict(dataset, setting, family, undefended, cheapest, ladder[-1]))
    return out


def _utility(setting: Setting) -> str:
    """Test accuracy, and the AUC beside it where the task has one."""
    if math.isnan(setting.accuracy):
        return "-"
    return f"{setting.accuracy:.3f}" + ("" if math.isnan(setting.auc) else f" (AUC {setting.auc:.3f})")


def _cost(verdict: Verdict) -> str:
    if math.isnan(verdict.cost):
        return "-"
    return f"{verdict.cost:+.3f}" + ("" if math.isnan(verdict.auc_cost) else f" (AUC {verdict.auc_cost:+.3f})")


def _claim(setting: Setting) -> str:
    return setting.claim + ("" if setting.p is None else f" (p = {setting.p:.2g})")


def stopping_table(groups: list[Group]) -> str:
    """The report's section: one markdown row per verdict, or "" when no defended setting was
    scored exactly."""
    found = verdicts(groups)
    if not found:
        return ""
    lines = ["## Cheapest defense shown to stop the exact attacks\n",
             "Per defense family: the setting of its ladder with the most accurate global model among those "
             "that stop the exact attacks by the stop rule (no graph rebuilt exactly in at least 59 graphs whose "
             "call returned a reconstruction, against a leak of the undefended federation on the same seeds and "
             "rounds, one-sided Fisher exact p < 0.05; a failed call is no evidence), beside the undefended "
             "federation; cost: the test accuracy (and AUC) lost; ε: the largest DP-SGD epsilon an attacked "
             "client had spent. \"none shown\": the ladder's strongest setting and what it measured instead.\n",
             "| dataset | setting | family | undefended | test acc | cheapest stopping setting | what it measured "
             "(stop claim) | test acc | cost | ε |", "|" + "---|" * 10]
    for v in found:
        base = v.undefended
        before = (outcome_text(base.cell), _utility(base)) if base else ("-", "-")
        chosen = v.cheapest
        if chosen is None:
            strongest = v.strongest
            after = (f"none shown (at {strongest.defense})", f"{outcome_text(strongest.cell)} ({_claim(strongest)})",
                     _utility(strongest), "-", "-")
        else:
            eps = "-" if math.isnan(chosen.epsilon) else f"{chosen.epsilon:.3g}"
            after = (chosen.defense, f"{outcome_text(chosen.cell)} ({_claim(chosen)})", _utility(chosen), _cost(v),
                     eps)
        lines.append("| " + " | ".join([v.dataset, v.setting or "-", v.family, *before, *after]) + " |")
    return "\n".join(lines) + "\n"
