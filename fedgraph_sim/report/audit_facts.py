"""The facts of an audit (``audit.json``), from its rows: what the server learnt at each threat
level and round, what every attack gained over the priors, which attacks did not apply and why,
the global model's utility by round, and what each what-if setting cost and protected.

Every verdict cell (a threat level at a round, a what-if setting) has one of three outcomes,
never two, and a what-if setting stops the exact attacks only by the one stop rule
(``report.stop_rule``): no leak found on at least 59 graphs, against a leak of the federation as
configured on the same seeds and rounds, by a one-sided Fisher exact test. A what-if's accuracy
and its cost against the federation as configured are means over seeds with Student-t 95%
intervals (the cost paired by seed). Gains are each attack's mean information gain over the best
gradient-free prior on the same graphs (``gain_*``), with their intervals.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

from fedgraph_sim.atomic_files import write_text_atomically
from fedgraph_sim.metrics import PRIORS, bootstrap_ci, mean_interval, metric
from fedgraph_sim.report.stop_rule import (COMPLETED, EXACT, LEAKS, NO_LEAK, NOT_MEASURED, cell, exact_by_attack,
                                           finite_or_none, not_attacked, stop_claim, unit_rows)
from fedgraph_sim.rows.record import Row, gain_column, prior_column
from fedgraph_sim.rows.statistics import is_attempted

#: The evidence columns: GRAIN's GSM-2 (a graph right up to 2-hop neighbourhoods, failures 0), and
#: node types and edges under the Hungarian matching (fair under any node order).
GAINS = {"gsm_gsm2": "GSM-2", "matched_node_type_accuracy": "node types", "matched_adj_auc": "edges (AUC)"}
AS_CONFIGURED = "as configured"  # the what-if's name for the user's own federation
OUT_OF_TIME = "not attacked: the audit's wall budget ended first"
#: The evidence columns whose metric counts a failed call as 0 (``Metric.counts_failures``).
COUNTS_FAILURES = {c for c in GAINS if metric(c.split("_", 1)[1]).counts_failures}


def _interval(values: list[float]) -> list[float | None]:
    """The bootstrap 95% interval of the mean; ``[None, None]`` without values (JSON has no NaN)."""
    return [finite_or_none(v) for v in bootstrap_ci(values)]


def exact_attacks(rows: list[Row]) -> tuple[list[str], list[int]]:
    """The attacks that rebuilt at least one graph exactly at the ``hints`` level, and the rounds
    in which one did: what the what-if tries to stop, and where."""
    at_hints = [r for r in rows if r.get("threat_level") == "hints"]
    counts = exact_by_attack(at_hints)
    rounds = {r["round"] for r in at_hints if r["attack"] in counts and r.get(EXACT) == 1.0}
    return sorted(name for name, values in counts.items() if sum(values)), sorted(rounds)


def _gain(row: Row, column: str) -> float | None:
    """A row's gain over the priors in ``column``; a call that did not complete scores 0 where the
    metric counts failures (GSM-2, as the exact count does), so its gain is minus the prior's."""
    gain = finite_or_none(row.get(gain_column(column)))
    if gain is None and column in COUNTS_FAILURES and row["status"] not in COMPLETED:
        prior = finite_or_none(row.get(prior_column(column)))
        gain = None if prior is None else -prior
    return gain


def gains(rows: list[Row]) -> dict[str, dict[str, dict]]:
    """Attack -> evidence column -> {mean, ci, graphs}: its gain over the priors, a failed call
    counting 0 where the metric counts failures (:func:`_gain`), over the same graphs as the
    attack's exact count there."""
    out: dict[str, dict[str, dict]] = {}
    by_attack: dict[str, list[Row]] = defaultdict(list)
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


def applicability(rows: list[Row]) -> dict[str, dict]:
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


def _diverged(attacked: list[Row]) -> str | None:
    """Why a federation's rows measure nothing: its model's accuracy is not a number."""
    values = [r.get("test_accuracy") for r in attacked if "test_accuracy" in r]
    if values and all(finite_or_none(v) is None for v in values):
        return "the federation diverged (its test accuracy is not a number)"
    return None


def _interval_of(values: list[float]) -> dict:
    mean, low, high = mean_interval(values)
    return {"mean": finite_or_none(mean), "ci": [finite_or_none(low), finite_or_none(high)], "seeds": len(values)}


def what_if(rows: list[Row], federations: list[dict], claims: dict[str, dict] | None = None) -> list[dict]:
    """Per what-if setting, the federation as configured first: the verdict cell at the ``hints``
    level (pooled over its seeds and rounds), its test accuracy over seeds and the cost against
    the federation as configured (paired by seed), DP's epsilon, and the stop claim
    (:func:`stop_claim`). ``federations``: each trained what-if federation's ``setting``, ``seed``
    and final ``accuracy``. A setting with no rows was not attacked: a more accurate one already
    stops the exact attacks, or the wall budget ended first. ``claims``: setting -> its DP claim
    checked with canaries (``runtime.dp_checks``), as ``claim_check``."""
    accuracy: dict[str, dict[int, float | None]] = defaultdict(dict)
    for fed in federations:
        accuracy[fed["setting"]][fed["seed"]] = finite_or_none(fed.get("accuracy"))
    by_setting: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_setting[row["setting"]].append(row)
    own_accuracy = accuracy.get(AS_CONFIGURED, {})
    out = []
    for label in [AS_CONFIGURED] + [s for s in accuracy if s != AS_CONFIGURED]:
        seeds = accuracy.get(label, {})
        values = [v for v in seeds.values() if v is not None]
        costs = [own_accuracy[s] - v for s, v in seeds.items()
                 if v is not None and own_accuracy.get(s) is not None]
        diverged = ("the federation diverged (its test accuracy is not a number)"
                    if seeds and not values else None)
        attacked = by_setting.get(label, [])
        epsilons = [finite_or_none(r.get("defense_epsilon")) for r in attacked]
        out.append({"setting": label, "seeds": sorted(seeds), "accuracy": _interval_of(values),
                    "accuracy_cost": None if label == AS_CONFIGURED else _interval_of(costs),
                    "epsilon": max((e for e in epsilons if e is not None), default=None),
                    "claim_check": _check_summary((claims or {}).get(label)),
                    "best": cell(attacked, diverged) if attacked or diverged else None,
                    "rounds": sorted({r["round"] for r in attacked})})
    own, own_rows = out[0], by_setting.get(AS_CONFIGURED, [])
    own["best"] = own["best"] or not_attacked(OUT_OF_TIME, chosen=False)
    own.update(stop=None, stop_p=None, against=None, stops=False)
    for entry in out[1:]:  # each claim against the leak on the same units
        if entry["best"] is not None:
            entry["against"] = cell(unit_rows(own_rows, by_setting[entry["setting"]])) if own_rows else own["best"]
            entry["stop"], entry["stop_p"] = stop_claim(entry["against"], entry["best"])
            entry["stops"] = entry["stop"] == "stops"
    for entry in out[1:]:
        if entry["best"] is None:
            accurate = entry["accuracy"]["mean"] if entry["accuracy"]["mean"] is not None else -math.inf
            cheaper = [o for o in out[1:] if o.get("stops") and (o["accuracy"]["mean"] or 0) >= accurate]
            entry["best"] = (not_attacked(f"not attacked: {cheaper[0]['setting']}, as accurate or more, already "
                                          "stops the exact attacks") if cheaper else not_attacked(OUT_OF_TIME, False))
            entry.update(against=own["best"], stops=False)
            entry["stop"], entry["stop_p"] = stop_claim(own["best"], entry["best"])
    return out


def _check_summary(check: dict | None) -> dict | None:
    """A canary check without its per-canary scores (``canaries.json`` keeps them)."""
    return None if check is None else {k: v for k, v in check.items() if k not in ("scores", "included")}


def cheapest_stop(settings: list[dict]) -> dict | None:
    """Of the what-if settings that stop the exact attacks (:func:`stop_claim`), the one whose
    model is most accurate (mean over seeds); never one that was not measured or is undecided."""
    stopping = [s for s in settings[1:] if s["stops"] and s["accuracy"]["mean"] is not None]
    return max(stopping, key=lambda s: s["accuracy"]["mean"]) if stopping else None


def audit_facts(rows: list[Row], utility: list[dict], plan: dict, what_if_note: str | None = None,
                what_if_federations: list[dict] = (), claims: dict[str, dict] | None = None) -> dict:
    """Everything the page and ``--fail-on`` read, JSON-ready. ``plan["not_attacked"]``: level ->
    round -> why the audit did not attack that cell; ``what_if_federations``: see :func:`what_if`."""
    base = [r for r in rows if not r.get("setting")]
    others = [r for r in rows if r.get("setting")]
    skipped = plan.get("not_attacked", {})
    levels = {}
    for level in plan["levels"]:
        at_level = [r for r in base if r.get("threat_level") == level]
        reasons = skipped.get(level, {})
        levels[level] = {"text": plan["level_text"][level],
                         "rounds": {str(rnd): not_attacked(reasons[str(rnd)]) if str(rnd) in reasons else
                                    cell([r for r in at_level if r["round"] == rnd]) for rnd in plan["rounds"]},
                         "gains": gains(at_level)}
    settings = what_if(others, list(what_if_federations), claims) if what_if_federations else []
    return {"config": plan["config"], "rounds": plan["rounds"], "budget": plan["budget"], "levels": levels,
            "caught": caught([r for r in base if r.get("threat_level") == "malicious"]),
            "attacks": applicability(base), "utility": utility, "majority_rate": plan.get("majority_rate"),
            "unfinished": plan.get("unfinished", 0),
            "what_if": settings, "skipped_what_if": plan.get("skipped", {}), "what_if_note": what_if_note,
            "what_if_rounds": sorted({r["round"] for r in others}),
            "cheapest_stop": cheapest_stop(settings) if settings else None}


def caught(rows: list[Row]) -> dict | None:
    """Of the malicious level's attacked updates, how many its clients' ``crafted_check`` flagged
    (an aggregate: when one of its clients did); None where the level ran no check."""
    flags = {}
    for row in rows:
        flag = row.get("defense_crafted_flag")
        if flag is not None and flag == flag:  # not NaN: the check ran
            flags[(row["round"], row["client"])] = float(flag)
    if not flags:
        return None
    return {"flagged": sum(flag == 1.0 for flag in flags.values()), "updates": len(flags)}


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
        bound = f"{100 * cell_['ci'][1]:.0f}%"
        if cell_["decided"]:
            return (f"no leak found: 0 of {cell_['attacked']} graphs ({cell_['attack']}; the rate is below {bound} "
                    f"with 95% confidence; {fates})")
        return (f"undecided at {cell_['attacked']}: no leak found in 0 of {cell_['attacked']} graphs "
                f"({cell_['attack']}; the rate may still be up to {bound}; {fates})")
    if cell_.get("skipped"):
        return f"not measured: {cell_['reason']}"
    return f"not measured: {cell_['reason']} ({fates})"


def points(interval: dict) -> str:
    """An accuracy or a cost over seeds in points, with its interval (none from one seed)."""
    if interval["mean"] is None:
        return "not measured"
    low, high = interval["ci"]
    spread = f"[{100 * low:+.1f}, {100 * high:+.1f}]" if low is not None else "no interval from one seed"
    return f"{100 * interval['mean']:+.1f} points {spread}, {interval['seeds']} seeds"


def price(cost: dict) -> str:
    """What a what-if setting costs in test accuracy, said only as far as its interval goes."""
    if cost["mean"] is None:
        return "an accuracy cost not measured"
    low, high = cost["ci"]
    if low is None:
        return f"a test-accuracy cost of {points(cost)} (one seed: no interval)"
    if low > 0:
        return f"a test-accuracy cost of {points(cost)}"
    return f"no test-accuracy cost detected ({points(cost)})"


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
    if facts.get("caught"):
        found = facts["caught"]
        lines.append(f"Would the clients catch a malicious server? Their crafted_check flagged {found['flagged']} of "
                     f"{found['updates']} crafted updates (a client flags weights most of whose units are dead on "
                     "its batch or zeroed, or whose norms stand far from the architecture's initialisation).")
    stop = facts.get("cheapest_stop")
    for setting in facts.get("what_if") or []:
        check = setting.get("claim_check") or {}
        if check.get("claim_refuted"):
            lines.append(f"DP CLAIM REFUTED for {setting['setting']}: its canaries show epsilon >= "
                         f"{check['epsilon_lower_bound']:.2f} where it claims {check['epsilon_claimed']:.3g}: the "
                         "defense or its accountant is wrong.")
    if facts.get("what_if_note"):
        lines.append(f"What if: {facts['what_if_note']}.")
    elif facts.get("what_if"):
        own = facts["what_if"][0]
        seeds = len(own["seeds"])
        if stop:
            lines.append(f"The cheapest tried setting that stops the exact attacks ({_rounds(facts)}, {seeds} seeds) "
                         f"is {stop['setting']}: {describe(stop['best'])}, against {describe(stop['against'])} as "
                         "configured on the same seeds and rounds (one-sided Fisher exact p = "
                         f"{stop['stop_p']:.3g}), at {price(stop['accuracy_cost'])}.")
        else:
            claims = ", ".join(f"{s['setting']} {s['stop']}" for s in facts["what_if"][1:])
            lines.append(f"No tried setting is shown to stop the exact attacks ({_rounds(facts)}, {seeds} seeds): "
                         f"{claims}. A setting that found no leak is a stop only against a leak measured at the "
                         "same rounds, on at least 59 graphs, with a one-sided Fisher exact p < 0.05.")
        accuracy, majority = own["accuracy"], facts.get("majority_rate")
        if accuracy["mean"] is not None:
            low, high = accuracy["ci"]
            spread = f" [{low:.2f}, {high:.2f}]" if low is not None else ""
            beside = f"; always predicting the majority class scores {majority:.2f}" if majority is not None else ""
            lines.append(f"As configured, the global model's test accuracy is {accuracy['mean']:.2f}{spread} over "
                         f"{accuracy['seeds']} seeds{beside}.")
    if facts.get("unfinished"):
        lines.append(f"The wall budget ended with {facts['unfinished']} job(s) unfinished: the claims they would have "
                     "decided are undecided (fedgraph-sim audit --resume continues).")
    lines.append("An audit finds leaks; it cannot prove their absence: these attacks, this budget, give a lower "
                 "bound on what the server learns.")
    return [line for line in lines if line]


def write_facts(path: str | Path, facts: dict) -> Path:
    import json

    return write_text_atomically(path, json.dumps(facts, indent=2, default=str))
