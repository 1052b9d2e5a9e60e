"""The facts of an audit (``audit.json``), from its rows: what the server learnt at each threat
level and round, what every attack gained over the priors, which attacks did not apply and why,
the global model's utility by round, and what each what-if setting cost and protected.

Exact means GRAIN's strictest criterion (Drencheva et al., ICLR 2025: ``gsm_full_iso``, the graph
up to node order, every node's features and every edge). A level's count at a round is that of the
attack with the most exact graphs there (one attack the server ran, not a union that would need
the truth to pick from), over the graphs it attacked, a failed call counting 0, with the
percentile bootstrap 95% interval of the rate. Gains are each attack's mean information gain over
the best gradient-free prior on the same graphs (``gain_*``), with their intervals.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

from fedgraph_sim.atomic_files import write_text_atomically
from fedgraph_sim.metrics import PRIORS, bootstrap_ci, wilson_interval
from fedgraph_sim.results import is_attempted

EXACT = "gsm_full_iso"
#: The evidence columns: GRAIN's GSM-2 (a graph right up to 2-hop neighbourhoods, failures 0), and
#: node types and edges under the Hungarian matching (fair under any node order).
GAINS = {"gsm_gsm2": "GSM-2", "matched_node_type_accuracy": "node types", "matched_adj_auc": "edges (AUC)"}
STOP_BELOW = 0.01  # a setting stops the exact attacks when no attack rebuilds 1% of its graphs


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


def best_attack(rows: list[dict]) -> dict | None:
    """The attack with the most exact graphs (ties: the most attacked graphs, then its name);
    ``attack`` None when none rebuilt a graph (then over the most graphs any attack attacked)."""
    counts = exact_by_attack(rows)
    if not counts:
        return None
    name = min(counts, key=lambda a: (-sum(counts[a]), -len(counts[a]), a))
    return {"attack": name if sum(counts[name]) else None, **_rate(counts[name])}


def exact_attacks(rows: list[dict]) -> tuple[list[str], list[int]]:
    """The attacks that rebuilt at least one graph exactly at the ``hints`` level, and the rounds
    in which one did: what the what-if tries to stop, and where."""
    at_hints = [r for r in rows if r.get("threat_level") == "hints"]
    counts = exact_by_attack(at_hints)
    rounds = {r["round"] for r in at_hints if r["attack"] in counts and r.get(EXACT) == 1.0}
    return sorted(name for name, values in counts.items() if sum(values)), sorted(rounds)


def gains(rows: list[dict]) -> dict[str, dict[str, dict]]:
    """Attack -> evidence column -> {mean, ci, graphs}: its gain over the priors."""
    out: dict[str, dict[str, dict]] = {}
    by_attack: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        if row["attack"] not in PRIORS and is_attempted(row):
            by_attack[row["attack"]].append(row)
    for attack, attacked in sorted(by_attack.items()):
        out[attack] = {}
        for column in GAINS:
            values = [v for v in (_finite(r.get(f"gain_{column}")) for r in attacked) if v is not None]
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


def what_if(rows: list[dict], base: list[dict]) -> list[dict]:
    """Per what-if setting (and the user's own, first, over the same rounds and attacks): the
    best attack's exact count at the ``hints`` level, final test accuracy and its cost against
    the user's, DP's epsilon."""
    def row_of(label: str, attacked: list[dict]) -> dict:
        best = best_attack(attacked)
        accuracy = next((_finite(r.get("test_accuracy")) for r in attacked if "test_accuracy" in r), None)
        epsilons = [_finite(r.get("defense_epsilon")) for r in attacked]
        return {"setting": label, "best": best, "accuracy": accuracy,
                "epsilon": max((e for e in epsilons if e is not None), default=None),
                # no attack that applies is no attack that rebuilds (the page says which)
                "stops": best is None or best["rate"] < STOP_BELOW}

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
    return out


def cheapest_stop(settings: list[dict]) -> dict | None:
    """Of the what-if settings that stop the exact attacks, the one whose model is most accurate."""
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
                         "rounds": {str(rnd): best_attack([r for r in at_level if r["round"] == rnd])
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


def verdict_lines(facts: dict) -> list[str]:
    """The verdict in plain words, one line per threat level."""
    lines = []
    for level, entry in facts["levels"].items():
        if not any(entry["rounds"].values()):
            lines.append(f"From {entry['text']}, no registered attack applies: nothing was attacked.")
            continue
        parts = []
        for rnd, best in entry["rounds"].items():
            if best is None:
                parts.append(f"nothing at round {rnd}, where no attack applied")
                continue
            low, high = (round(100 * x) for x in best["ci"])
            by = f" ({best['attack']})" if best["attack"] else ", by any attack"
            parts.append(f"{best['exact']} of {best['attacked']} graphs exactly (95% CI {low}-{high}%) at round "
                         f"{rnd}{by}")
        lines.append(f"From {entry['text']}, the server reconstructs " + "; ".join(parts) + ".")
    stop = facts.get("cheapest_stop")
    if facts.get("what_if_note"):
        lines.append(f"What if: {facts['what_if_note']}.")
    elif facts.get("what_if"):
        if stop:
            cost, own = stop["accuracy_cost"], facts["what_if"][0]["best"]
            if cost is None:
                price = "an accuracy cost not measured"
            elif cost >= 0:
                price = f"a cost of {100 * cost:.1f} points of test accuracy"
            else:  # one federation each: a defended model may well end more accurate
                price = f"no accuracy cost (its test accuracy ended {-100 * cost:.1f} points higher, one run each)"
            rebuilt = f"{stop['best']['exact']} of {stop['best']['attacked']} graphs rebuilt" if stop["best"] else \
                "no attack applies"
            against = f", against {own['exact']} of {own['attacked']} as configured" if own else ""
            lines.append(f"The cheapest tried setting that stops the exact attacks ({_rounds(facts)}) is "
                         f"{stop['setting']} ({rebuilt}{against}), at {price}.")
        else:
            lines.append(f"None of the tried settings stops the exact attacks ({_rounds(facts)}).")
    return [line for line in lines if line]


def write_facts(path: str | Path, facts: dict) -> Path:
    import json

    return write_text_atomically(path, json.dumps(facts, indent=2, default=str))
