"""The facts of an audit (``audit.json``), from its rows: what the server learnt at each threat
level and round, what every attack gained over the priors, which attacks did not apply and why,
the global model's utility by round, and what each what-if setting cost and protected.

Exact means GRAIN's strictest criterion (Drencheva et al., ICLR 2025: ``gsm_full_iso``, the graph
up to node order, every node's features and every edge). Every verdict cell (a threat level at a
round, a what-if setting) has one of three outcomes, never two:

- ``leaks``: some attack rebuilt k >= 1 graphs exactly; the count is that of the attack with the
  most (one attack the server ran, not a union that would need the truth to pick from), over the
  graphs it attacked, a failed call counting 0, with the Wilson 95% interval of the rate;
- ``no leak found``: calls completed on n graphs and rebuilt none; n counts only graphs whose call
  completed (a failure is no evidence for the defender), with the Wilson 95% upper bound on the
  rate: an audit finds leaks, it cannot prove their absence;
- ``not measured``: no attack applies, every call failed, crashed or timed out before it was
  scored, or the federation diverged; with the reason.

Each cell counts its graphs whose call completed, failed and timed out. A what-if setting *stops*
the exact attacks only when it found no leak where the federation as configured leaked over the
same rounds and attacks, and a one-sided Fisher exact test says the difference is not chance
(p < 0.05); otherwise it is ``undecided``, ``leaks`` or ``not measured``. Gains are each attack's
mean information gain over the best gradient-free prior on the same graphs (``gain_*``), with
their intervals.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

from fedgraph_sim.atomic_files import write_text_atomically
from fedgraph_sim.metrics import PRIORS, bootstrap_ci, metric, wilson_interval
from fedgraph_sim.results import is_attempted

EXACT = "gsm_full_iso"
#: The evidence columns: GRAIN's GSM-2 (a graph right up to 2-hop neighbourhoods, failures 0), and
#: node types and edges under the Hungarian matching (fair under any node order).
GAINS = {"gsm_gsm2": "GSM-2", "matched_node_type_accuracy": "node types", "matched_adj_auc": "edges (AUC)"}
LEAKS, NO_LEAK, NOT_MEASURED = "leaks", "no leak found", "not measured"
#: Statuses of a call that completed: its graphs are evidence (``failed``: ran as designed and
#: recovered nothing). Any other attempted status is a fault or a timeout: not evidence.
COMPLETED = ("ok", "failed")
STOP_P = 0.05  # a stop claim's one-sided Fisher exact test against the as-configured leak
#: The evidence columns whose metric counts a failed call as 0 (``Metric.counts_failures``).
COUNTS_FAILURES = {c for c in GAINS if metric(c.split("_", 1)[1]).counts_failures}


def _finite(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _interval(values: list[float]) -> list[float | None]:
    """The bootstrap 95% interval of the mean; ``[None, None]`` without values (JSON has no NaN)."""
    return [_finite(v) for v in bootstrap_ci(values)]


def _rate(values: list[float]) -> dict:
    exact = int(sum(values))
    return {"exact": exact, "attacked": len(values), "rate": exact / len(values) if values else None,
            "ci": [_finite(v) for v in wilson_interval(exact, len(values))]}


def exact_by_attack(rows: list[dict]) -> dict[str, list[float]]:
    """Attack -> 1/0 per attacked graph (a failed call 0), priors and inapplicable rows left out."""
    out: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        if row["attack"] not in PRIORS and is_attempted(row):
            out[row["attack"]].append(1.0 if row.get(EXACT) == 1.0 else 0.0)
    return out


def cell(rows: list[dict], diverged: str | None = None) -> dict:
    """The outcome of one verdict cell from its rows (``diverged``: why the federation behind them
    trained nothing usable, which makes the cell ``not measured`` whatever the rows say)."""
    attempted = [r for r in rows if r["attack"] not in PRIORS and is_attempted(r)]
    counts = {"completed": sum(r["status"] in COMPLETED for r in attempted),
              "timed_out": sum(r["status"] == "timeout" for r in attempted)}
    counts["failed"] = len(attempted) - counts["completed"] - counts["timed_out"]
    if diverged:
        return {"outcome": NOT_MEASURED, "reason": diverged, **counts}
    leaking = {a: v for a, v in exact_by_attack(rows).items() if sum(v)}
    if leaking:
        name = min(leaking, key=lambda a: (-sum(leaking[a]), -len(leaking[a]), a))
        return {"outcome": LEAKS, "attack": name, **_rate(leaking[name]), **counts}
    completed: dict[str, int] = defaultdict(int)
    for row in attempted:
        completed[row["attack"]] += row["status"] in COMPLETED
    if not attempted or not max(completed.values(), default=0):
        reason = ("no attack applies" if not attempted else
                  "every call failed, crashed or timed out before it was scored")
        return {"outcome": NOT_MEASURED, "reason": reason, **counts}
    name = min(completed, key=lambda a: (-completed[a], a))  # the attack with the most evidence
    n = completed[name]
    return {"outcome": NO_LEAK, "attack": name, "exact": 0, "attacked": n, "rate": 0.0,
            "ci": [_finite(v) for v in wilson_interval(0, n)], **counts}


def exact_attacks(rows: list[dict]) -> tuple[list[str], list[int]]:
    """The attacks that rebuilt at least one graph exactly at the ``hints`` level, and the rounds
    in which one did: what the what-if tries to stop, and where."""
    at_hints = [r for r in rows if r.get("threat_level") == "hints"]
    counts = exact_by_attack(at_hints)
    rounds = {r["round"] for r in at_hints if r["attack"] in counts and r.get(EXACT) == 1.0}
    return sorted(name for name, values in counts.items() if sum(values)), sorted(rounds)


def _gain(row: dict, column: str) -> float | None:
    """A row's gain over the priors in ``column``; a call that did not complete scores 0 where the
    metric counts failures (GSM-2, as the exact count does), so its gain is minus the prior's."""
    gain = _finite(row.get(f"gain_{column}"))
    if gain is None and column in COUNTS_FAILURES and row["status"] not in COMPLETED:
        prior = _finite(row.get(f"prior_{column}"))
        gain = None if prior is None else -prior
    return gain


def gains(rows: list[dict]) -> dict[str, dict[str, dict]]:
    """Attack -> evidence column -> {mean, ci, graphs}: its gain over the priors, a failed call
    counting 0 where the metric counts failures (:func:`_gain`), over the same graphs as the
    attack's exact count there."""
    out: dict[str, dict[str, dict]] = {}
    by_attack: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        if row["attack"] not in PRIORS and is_attempted(row):
            by_attack[row["attack"]].append(row)
    for attack, attacked in sorted(by_attack.items()):
        out[attack] = {}
        for column in GAINS:
            values = [v for v in (_gain(r, column) for r in attacked) if v is not None]
            out[attack][column] = {"mean": sum(values) / len(values) if values else None,
                                   "ci": _interval(values), "graphs": len(values)}
    return out


def applicability(rows: list[dict]) -> dict[str, dict]:
    """Attack -> {levels it ran at, and where it never did, its own reason (the strongest level's)}."""
    out: dict[str, dict] = {}
    for row in rows:
        if row["attack"] in PRIORS:
            continue
        entry = out.setdefault(row["attack"], {"levels": [], "reason": None})
        if row.get("status") != "not_applicable":
            if row["threat_level"] not in entry["levels"]:
                entry["levels"].append(row["threat_level"])
        elif entry["reason"] is None or row["threat_level"] == "hints":
            entry["reason"] = row.get("message")
    for entry in out.values():
        entry["applies"] = bool(entry["levels"])
        if entry["applies"]:
            entry["reason"] = None
    return out


def _diverged(attacked: list[dict]) -> str | None:
    """Why a federation's rows measure nothing: its model's accuracy is not a number."""
    values = [r.get("test_accuracy") for r in attacked if "test_accuracy" in r]
    if values and all(_finite(v) is None for v in values):
        return "the federation diverged (its test accuracy is not a number)"
    return None


def stop_claim(own: dict, other: dict) -> tuple[str, float | None]:
    """Whether a what-if cell ``other`` stops the exact attacks that ``own`` (the federation as
    configured, same rounds and attacks) measured leaking, with the one-sided Fisher exact test's
    p-value: ``stops`` (no leak found, and p < 0.05), ``undecided`` (no leak found, too few graphs
    to tell from the leak), ``leaks``, ``not measured``, or ``no leak to stop`` (own found none)."""
    if other["outcome"] != NO_LEAK:
        return other["outcome"], None
    if own["outcome"] != LEAKS:
        return "no leak to stop", None
    from scipy.stats import fisher_exact

    table = [[own["exact"], own["attacked"] - own["exact"]], [0, other["attacked"]]]
    p = float(fisher_exact(table, alternative="greater").pvalue)
    return ("stops" if p < STOP_P else "undecided"), p


def what_if(rows: list[dict], base: list[dict]) -> list[dict]:
    """Per what-if setting (and the user's own, first, over the same rounds and attacks): the
    verdict cell at the ``hints`` level, final test accuracy and its cost against the user's,
    DP's epsilon, and the stop claim (:func:`stop_claim`)."""
    def row_of(label: str, attacked: list[dict]) -> dict:
        accuracy = next((_finite(r.get("test_accuracy")) for r in attacked if "test_accuracy" in r), None)
        epsilons = [_finite(r.get("defense_epsilon")) for r in attacked]
        return {"setting": label, "best": cell(attacked, _diverged(attacked)), "accuracy": accuracy,
                "epsilon": max((e for e in epsilons if e is not None), default=None)}

    rounds = {r["round"] for r in rows}
    attacks = {r["attack"] for r in rows}
    own = row_of("as configured", [r for r in base if r["round"] in rounds and r["attack"] in attacks
                                   and r["threat_level"] == "hints"])
    settings: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        settings[row["setting"]].append(row)
    out = [own] + [row_of(label, attacked) for label, attacked in settings.items()]
    for entry in out:
        entry["accuracy_cost"] = (own["accuracy"] - entry["accuracy"]
                                  if own["accuracy"] is not None and entry["accuracy"] is not None else None)
        entry["stop"], entry["stop_p"] = (None, None) if entry is own else stop_claim(own["best"], entry["best"])
        entry["stops"] = entry["stop"] == "stops"
    return out


def cheapest_stop(settings: list[dict]) -> dict | None:
    """Of the what-if settings that stop the exact attacks (:func:`stop_claim`), the one whose
    model is most accurate; never one that was not measured or is undecided."""
    stopping = [s for s in settings[1:] if s["stops"] and s["accuracy"] is not None]
    return max(stopping, key=lambda s: s["accuracy"]) if stopping else None


def audit_facts(rows: list[dict], utility: list[dict], plan: dict, what_if_note: str | None = None) -> dict:
    """Everything the page and ``--fail-on`` read, JSON-ready."""
    base = [r for r in rows if not r.get("setting")]
    others = [r for r in rows if r.get("setting")]
    levels = {}
    for level in plan["levels"]:
        at_level = [r for r in base if r.get("threat_level") == level]
        levels[level] = {"text": plan["level_text"][level],
                         "rounds": {str(rnd): cell([r for r in at_level if r["round"] == rnd])
                                    for rnd in plan["rounds"]},
                         "gains": gains(at_level)}
    settings = what_if(others, base) if others else []
    tried = sorted({r["round"] for r in others})
    return {"config": plan["config"], "rounds": plan["rounds"], "budget": plan["budget"], "levels": levels,
            "attacks": applicability(base), "utility": utility, "what_if": settings,
            "skipped_what_if": plan.get("skipped", {}), "what_if_note": what_if_note, "what_if_rounds": tried,
            "cheapest_stop": cheapest_stop(settings) if settings else None}


def _rounds(facts: dict) -> str:
    rounds = facts.get("what_if_rounds") or []
    return ("round " if len(rounds) == 1 else "rounds ") + ", ".join(map(str, rounds))


def describe(cell_: dict) -> str:
    """One cell in words: its outcome, count and interval, and its calls' fates."""
    fates = f"graphs whose call completed {cell_['completed']}, failed {cell_['failed']}, " \
            f"timed out {cell_['timed_out']}"
    if cell_["outcome"] == LEAKS:
        low, high = (round(100 * x) for x in cell_["ci"])
        return (f"leaks: {cell_['exact']} of {cell_['attacked']} graphs rebuilt exactly by {cell_['attack']} "
                f"(95% CI {low}-{high}%; {fates})")
    if cell_["outcome"] == NO_LEAK:
        return (f"no leak found: 0 of {cell_['attacked']} graphs ({cell_['attack']}; the rate is below "
                f"{100 * cell_['ci'][1]:.0f}% with 95% confidence; {fates})")
    return f"not measured: {cell_['reason']} ({fates})"


def verdict_lines(facts: dict) -> list[str]:
    """The verdict in plain words, one line per threat level, then the what-if's stop claim."""
    lines = []
    for entry in facts["levels"].values():
        cells = list(entry["rounds"].values())
        if all(c["outcome"] == NOT_MEASURED and c["reason"] == cells[0]["reason"] for c in cells):
            lines.append(f"From {entry['text']}: not measured in any round: {cells[0]['reason']}.")
            continue
        parts = [f"round {rnd}: {describe(c)}" for rnd, c in entry["rounds"].items()]
        lines.append(f"From {entry['text']}: " + "; ".join(parts) + ".")
    stop = facts.get("cheapest_stop")
    if facts.get("what_if_note"):
        lines.append(f"What if: {facts['what_if_note']}.")
    elif facts.get("what_if"):
        own = facts["what_if"][0]["best"]
        if stop:
            cost = stop["accuracy_cost"]
            if cost is None:
                price = "an accuracy cost not measured"
            elif cost >= 0:
                price = f"a cost of {100 * cost:.1f} points of test accuracy (one run each)"
            else:  # one federation each: a defended model may well end more accurate
                price = (f"no accuracy cost detected (its test accuracy ended {-100 * cost:.1f} points higher, "
                         "one run each)")
            lines.append(f"The cheapest tried setting that stops the exact attacks ({_rounds(facts)}) is "
                         f"{stop['setting']}: {describe(stop['best'])}, against {describe(own)} as configured "
                         f"(one-sided Fisher exact p = {stop['stop_p']:.3g}), at {price}.")
        else:
            claims = ", ".join(f"{s['setting']} {s['stop']}" for s in facts["what_if"][1:])
            lines.append(f"No tried setting is shown to stop the exact attacks ({_rounds(facts)}): {claims}. "
                         "A setting that found no leak is a stop only against a leak measured at the same "
                         "rounds, with enough graphs to tell them apart.")
    lines.append("An audit finds leaks; it cannot prove their absence: these attacks, this budget, give a lower "
                 "bound on what the server learns.")
    return [line for line in lines if line]


def write_facts(path: str | Path, facts: dict) -> Path:
    import json

    return write_text_atomically(path, json.dumps(facts, indent=2, default=str))
