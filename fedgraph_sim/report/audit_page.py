"""``audit.html`` and ``audit.json`` of an audit directory (``fedgraph-sim audit``): the facts
(``audit_facts``) and one self-contained page (``html``) showing them: the verdict per threat
level, the evidence (gains over the priors with intervals), which attacks did not apply and why,
reconstructions beside the truth, leakage against round beside utility, and the what-if."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from fedgraph_sim.atomic_files import write_text_atomically
from fedgraph_sim.provenance import provenance_line
from fedgraph_sim.report.artifacts import new_figure
from fedgraph_sim.report.audit_facts import GAINS, audit_facts, points, verdict_lines, write_facts
from fedgraph_sim.report.html import Page
from fedgraph_sim.report.stop_rule import outcome_text
from fedgraph_sim.rows.store import read_rows
from fedgraph_sim.utility import read_utility

DRAWN = 3  # reconstructions drawn beside the truth


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _interval(entry: dict) -> str:
    if entry["mean"] is None:
        return "-"
    low, high = entry["ci"]
    return f"{entry['mean']:+.3f} [{low:+.3f}, {high:+.3f}]"


def _accuracy(interval: dict) -> str:
    if interval["mean"] is None:
        return "-"
    low, high = interval["ci"]
    spread = f" [{low:.2f}, {high:.2f}]" if low is not None else " (one seed)"
    return f"{interval['mean']:.2f}{spread}, {interval['seeds']} seeds"


def _claim(setting: dict) -> str:
    if setting["stop"] is None:
        return "-"
    return setting["stop"] + ("" if setting["stop_p"] is None else f" (p = {setting['stop_p']:.3g})")


def _calls(cell: dict) -> str:
    return f"{cell['completed']} / {cell['failed']} / {cell['timed_out']}"


def _leakage_figure(facts: dict):
    figure = new_figure(10.0, 3.6)
    left, right = figure.subplots(1, 2)
    rounds = facts["rounds"]
    styles = [("-", "o", 9), ("--", "s", 6), (":", "^", 4)]  # levels that coincide stay visible
    for (level, entry), (line, marker, size) in zip(facts["levels"].items(), styles * len(facts["levels"])):
        rates = [entry["rounds"][str(r)].get("rate") for r in rounds]  # not measured: a gap, never a 0
        left.plot(rounds, [100 * v if v is not None else float("nan") for v in rates], linestyle=line, marker=marker,
                  markersize=size, label=level)
    left.set_xlabel("round"), left.set_ylabel("graphs rebuilt exactly (%)"), left.set_ylim(-3, 103)
    left.set_title("leakage (best attack per round)", fontsize=10), left.legend(title="threat level", fontsize=8)
    points = [(u["round"], u["test_accuracy"]) for u in facts["utility"] if u.get("test_accuracy") is not None]
    if points:
        right.plot(*zip(*points), color="black")
    right.set_xlabel("round"), right.set_ylabel("test accuracy"), right.set_title("utility", fontsize=10)
    return figure


def _drawings(cell_dirs: list[Path], out: Path) -> list[tuple[Path, str]]:
    """Up to ``DRAWN`` figures from the cells' drawings: exact reconstructions first."""
    from fedgraph_sim.report.drawings import drawing_figure

    files = [p for cell in cell_dirs for p in sorted((Path(cell) / "drawings").glob("*.json"))]
    drawings = [json.loads(p.read_text()) for p in files]
    # exact first, and of those the one renumbered onto the truth (<attack>_exact.json, GSM alignment)
    drawings.sort(key=lambda d: (not d.get("exact"), d.get("alignment") != "gsm", d.get("round", 0)))
    distinct = {}  # one drawing per graph (every threat level may have rebuilt the same one)
    for d in drawings:
        distinct.setdefault((d.get("round"), d.get("client"), d.get("graph_id")), d)
    drawings = list(distinct.values())
    out_files = []
    for i, drawing in enumerate(drawings[:DRAWN]):
        saved = drawing_figure(drawing["attack"], [drawing], out / f"drawing_{i}.png")
        out_files.append((saved.path, saved.caption))
    return out_files


def render_audit(facts: dict, drawings: list[tuple[Path, str]]) -> str:
    config = facts["config"]
    page = Page(f"Audit of {config['name']}: {config['dataset']}, {config['clients']} clients, "
                f"{config['rounds']} rounds")
    page.heading("Verdict", "verdict")
    for line in verdict_lines(facts):
        page.paragraph(line, css="verdict")  # never a green "safe": no leak found is not no leak
    page.table(["threat level", "what the server has", *(f"round {r}" for r in facts["rounds"]),
                "graphs completed / failed / timed out"],
               [[level, entry["text"], *(outcome_text(entry["rounds"][str(r)]) for r in facts["rounds"]),
                 ", ".join(_calls(entry["rounds"][str(r)]) for r in facts["rounds"])]
                for level, entry in facts["levels"].items()])
    page.paragraph("Three outcomes. Leaks: k graphs rebuilt exactly (the graph up to node order, every node's "
                   "features and every edge: GRAIN's strictest criterion, Drencheva et al., ICLR 2025) by the one "
                   "attack with the most, over the graphs it attacked, failures counting 0, with the Wilson 95% "
                   "interval. No leak found: 0 of the n graphs whose call returned a reconstruction, with the "
                   "one-sided 95% upper bound on the rate, decided from n = 59 on (the bound below 5%) and "
                   "'undecided at n' before; a failed or timed-out call is no evidence either way. Not measured: "
                   "no attack applies, every call failed, the federation diverged, or the audit did not attack the "
                   "cell (the reason says why: the weaker levels are attacked only where the strongest rebuilt "
                   "graphs). An audit finds leaks; it cannot prove their absence: these attacks, this budget, give a "
                   "lower bound on what the server learns.", css="note")
    page.paragraph("Rows named <attack>@ext run the attack with options beyond its paper, this "
                   "project's extensions that widen where it applies (FedAvg updates, batches, noisy updates); each "
                   "attack module's documentation names them (docs/audit.md, 'Attacks beyond their papers').",
                   css="note")
    page.heading("Evidence: what each attack learnt beyond the priors", "evidence")
    page.paragraph("Mean gain over the best gradient-free prior on the same graphs (auxiliary graphs and the node "
                   "count), with its bootstrap 95% interval; + means the update taught the server something. GSM-2 "
                   "counts a failed call as 0, as the exact count does; node types and edges are over the graphs "
                   "a call returned. "
                   + ", ".join(f"{label}: {column}" for column, label in GAINS.items()) + ".", css="note")
    for level, entry in facts["levels"].items():
        if not entry["gains"]:
            continue
        page.paragraph(f"Threat level '{level}': {entry['text']}.")
        page.table(["attack", *GAINS.values()],
                   [[attack, *(_interval(g[c]) for c in GAINS)] for attack, g in entry["gains"].items()])
    page.heading("Attacks that did not apply", "not-applicable")
    missing = [[a, e["reason"] or "-"] for a, e in sorted(facts["attacks"].items()) if not e["applies"]]
    page.table(["attack", "why not (and what would make it apply)"], missing) if missing else \
        page.paragraph("Every registered attack applied.")
    page.heading("Reconstructions beside the truth", "drawings")
    for path, caption in drawings:
        page.figure(path, caption)
    if not drawings:
        page.paragraph("No attack produced a reconstruction to draw.")
    page.heading("Leakage against round, beside utility", "rounds")
    page.figure(_leakage_figure(facts), "Left: graphs rebuilt exactly by the best attack at each audited round "
                "and threat level. Right: the global model's test accuracy by round.")
    page.heading("What if", "what-if")
    if facts["what_if"]:
        rounds = ", ".join(map(str, facts["what_if_rounds"]))
        seeds = len(facts["what_if"][0]["seeds"])
        page.paragraph(f"Your federation as configured and with one change each, trained to the end over {seeds} "
                       "seeds, then attacked at the strongest threat level on every client's update by the attacks "
                       f"that rebuilt graphs exactly in your federation, one seed's round at a time (rounds {rounds}), "
                       "until each claim was decided: a leak, or no leak found on at least 59 graphs (the rate below "
                       "5%). A setting stops the leak only against the federation as configured on the same seeds "
                       "and rounds, by a one-sided Fisher exact test (p < 0.05). Accuracy and its cost (paired by "
                       "seed) are means with Student-t 95% intervals; 'no cost detected' is said with its interval.",
                       css="note")
        page.table(["setting", "exact at the strongest level", "attack", "as configured on the same units",
                    "stop claim (one-sided Fisher p)", "test accuracy [95% CI]", "accuracy cost [95% CI]", "epsilon",
                    "epsilon lower bound (canaries)"],
                   [[s["setting"], outcome_text(s["best"]), s["best"].get("attack") or "-",
                     "-" if s["against"] is None else outcome_text(s["against"]), _claim(s), _accuracy(s["accuracy"]),
                     "-" if s["accuracy_cost"] is None else points(s["accuracy_cost"]),
                     "-" if s["epsilon"] is None else f"{s['epsilon']:.3g}", claim_check_text(s.get("claim_check"))]
                    for s in facts["what_if"]])
        if facts.get("majority_rate") is not None:
            page.paragraph(f"Always predicting the majority class scores {facts['majority_rate']:.2f} on the test "
                           "split: a model below it has learnt nothing usable.", css="note")
        for label, reason in facts["skipped_what_if"].items():
            page.paragraph(f"Not tried: {label} ({reason}).", css="note")
    else:
        page.paragraph(f"What if: {facts['what_if_note'] or 'not run'}.")
    budget = facts["budget"]
    page.paragraph(f"Budget: {budget['seconds']:g} s per attack call, {budget['clients']} clients attacked per round "
                   f"in the first stage (every client in the what-if), {budget['graphs']} graphs scored per update, "
                   f"{budget.get('seeds', 1)} seeds per what-if setting, {budget.get('minutes', '-')} minutes of wall "
                   f"time. {provenance_line()}", css="note")
    return page.render()


def claim_check_text(check: dict | None) -> str:
    """A setting's DP claim against its canaries' lower bound, in one cell."""
    if check is None:
        return "-"
    if "not_measured" in check:
        return f"not measured: {check['not_measured']}"
    claimed = "no claim" if check["epsilon_claimed"] is None else f"claim {check['epsilon_claimed']:.3g}"
    verdict = ("CLAIM REFUTED: " if check["claim_refuted"] else
               "not measured (the canaries told nothing): " if check["epsilon_lower_bound"] == 0 else "")
    gdp = f"; f-DP {check['gdp_epsilon_lower_bound']:.2f}" if "gdp_epsilon_lower_bound" in check else ""
    return (f"{verdict}{check['epsilon_lower_bound']:.2f} ({check['correct']} of {check['guesses']} guesses right, "
            f"{check['count']} {check['kind']} canaries; {claimed} at delta {check['delta']:g}{gdp})")


def write_audit(audit_dir: str | Path, plan: dict, cell_dirs: list[Path], federation_dir: Path,
                what_if_dir: Path | None = None, what_if_note: str | None = None,
                what_if_federations: list[dict] = (), claims: dict[str, dict] | None = None) -> dict:
    """``audit.json`` and ``audit.html`` in ``audit_dir`` (its rows, and the what-if stage's in
    ``what_if_dir`` when it ran, with its trained federations' accuracies and each setting's DP
    claim checked with canaries, ``claims``: ``runtime.dp_checks``), described by ``plan``
    (``runtime.audit_plan.describe``), the drawings of ``cell_dirs``, the utility of
    ``federation_dir``; returns the facts."""
    audit_dir = Path(audit_dir)
    rows = read_rows(audit_dir) + (read_rows(what_if_dir) if what_if_dir is not None else [])
    facts = audit_facts(rows, read_utility(federation_dir), plan, what_if_note, what_if_federations, claims)
    write_facts(audit_dir / "audit.json", facts)
    with tempfile.TemporaryDirectory() as tmp:
        page = render_audit(facts, _drawings(cell_dirs, Path(tmp)))
    write_text_atomically(audit_dir / "audit.html", page)
    return facts
