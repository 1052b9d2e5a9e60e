r"""The stop rule: what a set of attacked graphs shows, and when a defense is shown to stop a leak.

One rule for the audit (``report.audit_facts``) and the sweep report (``report.stopping``).
Exact means GRAIN's strictest criterion (Drencheva et al., ICLR 2025: ``gsm_full_iso``, the graph
up to node order, every node's features and every edge). A cell of rows has one of three
outcomes, never two:

- ``leaks``: some attack rebuilt k >= 1 graphs exactly; the count is that of the attack with the
  most (one attack the server ran, not a union that would need the truth to pick from), over the
  graphs it attacked, a failed call counting 0, with the Wilson 95% interval of the rate;
- ``no leak found``: n graphs whose call returned a reconstruction, none exact (a failed attack is
  no evidence for the defender), with the one-sided 95% upper bound on the rate,

  .. math:: p_{\max} = 1 - 0.05^{1/n},

  *decided* from n = 59 on (the bound at most 5%), *undecided at n* before;
- ``not measured``: no attack applies, every call failed, crashed or timed out before it was
  scored, or the federation diverged; with the reason.

A setting *stops* a leak only when it found no leak, decided, where the same attacks on the same
units (seeds and rounds) without it leaked, and a one-sided Fisher exact test (Fisher, "On the
interpretation of chi-square from contingency tables", JRSS 1922) of the two counts gives
p < 0.05.
"""

from __future__ import annotations

import math
from collections import defaultdict

from fedgraph_sim.metrics import PRIORS, none_seen_bound, wilson_interval
from fedgraph_sim.rows.record import Row
from fedgraph_sim.rows.statistics import is_attempted

EXACT = "gsm_full_iso"
LEAKS, NO_LEAK, NOT_MEASURED = "leaks", "no leak found", "not measured"
#: The status of a call that completed: it returned a reconstruction, so its graphs are evidence.
#: Any other attempted status is not: ``failed`` (the attack ran as designed and recovered
#: nothing, e.g. GRAIN refusing a full-rank noisy update), a fault, or a timeout. A failed attack
#: is no evidence for the defender.
COMPLETED = ("ok",)
STOP_P = 0.05  # a stop claim's one-sided Fisher exact test against the leak
DECIDED_BOUND = 0.05  # no leak found is decided once the rate's 95% upper bound is this low (n >= 59)
NOTHING_APPLIES = "no attack applies"


def finite_or_none(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _rate(values: list[float]) -> dict:
    exact = int(sum(values))
    return {"exact": exact, "attacked": len(values), "rate": exact / len(values) if values else None,
            "ci": [finite_or_none(v) for v in wilson_interval(exact, len(values))]}


def exact_by_attack(rows: list[Row]) -> dict[str, list[float]]:
    """Attack -> 1/0 per attacked graph (a failed call 0), priors and inapplicable rows left out."""
    out: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        if row["attack"] not in PRIORS and is_attempted(row):
            out[row["attack"]].append(1.0 if row.get(EXACT) == 1.0 else 0.0)
    return out


def cell(rows: list[Row], diverged: str | None = None) -> dict:
    """The outcome of one cell (a threat level at a round, a defense setting) from its rows
    (``diverged``: why the federation behind them trained nothing usable, which makes the cell
    ``not measured`` whatever the rows say)."""
    attempted = [r for r in rows if r["attack"] not in PRIORS and is_attempted(r)]
    counts = {"completed": sum(r["status"] in COMPLETED for r in attempted),
              "timed_out": sum(r["status"] == "timeout" for r in attempted)}
    counts["failed"] = len(attempted) - counts["completed"] - counts["timed_out"]
    if diverged:
        return {"outcome": NOT_MEASURED, "reason": diverged, **counts}
    leaking = {a: v for a, v in exact_by_attack(rows).items() if sum(v)}
    if leaking:
        name = min(leaking, key=lambda a: (-sum(leaking[a]), -len(leaking[a]), a))
        return {"outcome": LEAKS, "attack": name, **_rate(leaking[name]), "decided": True, **counts}
    completed: dict[str, int] = defaultdict(int)
    for row in attempted:
        completed[row["attack"]] += row["status"] in COMPLETED
    if not attempted or not max(completed.values(), default=0):
        reason = (NOTHING_APPLIES if not attempted else
                  "every call failed, crashed or timed out before it was scored")
        return {"outcome": NOT_MEASURED, "reason": reason, **counts}
    name = min(completed, key=lambda a: (-completed[a], a))  # the attack with the most evidence
    n = completed[name]
    bound = none_seen_bound(n)
    return {"outcome": NO_LEAK, "attack": name, "exact": 0, "attacked": n, "rate": 0.0, "ci": [0.0, bound],
            "decided": bound <= DECIDED_BOUND, **counts}


def not_attacked(reason: str, chosen: bool = True) -> dict:
    """A verdict cell the audit did not attack, and why: not measured, never evidence. ``chosen``:
    by the audit's rules (``skipped``: no claim rests on it), not because its budget ran out."""
    return {"outcome": NOT_MEASURED, "reason": reason, "skipped": chosen, "completed": 0, "failed": 0,
            "timed_out": 0}


def decided(cell_: dict) -> bool:
    """Whether a cell's claim is decided: a leak, or no leak found on enough graphs."""
    return cell_["outcome"] == LEAKS or (cell_["outcome"] == NO_LEAK and cell_["decided"])


def stop_claim(own: dict, other: dict) -> tuple[str, float | None]:
    """Whether the defended cell ``other`` stops the exact attacks that ``own`` (the same attacks
    on the same units without the defense) measured leaking, with the one-sided Fisher exact
    test's p-value: ``stops`` (no leak found on enough graphs to decide, and p < 0.05),
    ``undecided`` (no leak found, on too few graphs to bound the rate or to tell from the leak),
    ``leaks``, ``not measured``, or ``no leak to stop`` (own found none)."""
    if other["outcome"] != NO_LEAK:
        return other["outcome"], None
    if own["outcome"] != LEAKS:
        return "no leak to stop", None
    from scipy.stats import fisher_exact

    table = [[own["exact"], own["attacked"] - own["exact"]], [0, other["attacked"]]]
    p = float(fisher_exact(table, alternative="greater").pvalue)
    return ("stops" if p < STOP_P and other["decided"] else "undecided"), p


def unit_rows(rows: list[Row], like: list[Row]) -> list[Row]:
    """Those of ``rows`` on the units (seed and round) that ``like`` covers: a stop claim's leak
    is measured on the same units as the setting it is compared with."""
    covered = {(r.get("seed"), r["round"]) for r in like}
    return [r for r in rows if (r.get("seed"), r["round"]) in covered]


def outcome_text(cell_: dict) -> str:
    """A cell in a table cell: its outcome, count and interval, or why it was not measured."""
    if cell_["outcome"] == LEAKS:
        low, high = (round(100 * x) for x in cell_["ci"])
        return f"leaks: {cell_['exact']} of {cell_['attacked']} [{low}-{high}%]"
    if cell_["outcome"] == NO_LEAK:
        found = "no leak found" if cell_["decided"] else f"undecided at {cell_['attacked']}: no leak found in"
        return f"{found} 0 of {cell_['attacked']} [rate < {100 * cell_['ci'][1]:.0f}%]"
    return f"not measured: {cell_['reason']}"
