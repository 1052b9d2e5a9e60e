"""The run's answer in plain words: which graphs the server rebuilt exactly from the updates.

Exact means GRAIN's strictest criterion (Drencheva et al., ICLR 2025): the reconstruction is the
client's graph up to node order, every node's features and every edge (``full_iso`` = 1, a
feature-preserving isomorphism). No gradient-free prior ever builds one on real data, so each exact
graph is something the server learnt from the update alone. The attack's first exact
reconstruction is drawn beside the truth (``drawings/<attack>_exact.png``).
"""

from __future__ import annotations

import json
from pathlib import Path

from fedgraph_sim.metrics import PRIORS, metric_column
from fedgraph_sim.report.drawings import drawing_figure
from fedgraph_sim.rows.record import Row
from fedgraph_sim.rows.statistics import is_attempted

EXACT = metric_column("gsm", "full_iso")


def exact_counts(rows: list[Row]) -> dict[str, tuple[int, int]]:
    """Per attack (priors left out), in row order: (graphs rebuilt exactly, graphs attacked)."""
    counts: dict[str, list[int]] = {}
    for row in rows:
        if row["attack"] in PRIORS or not is_attempted(row):
            continue
        count = counts.setdefault(row["attack"], [0, 0])
        count[0] += row.get(EXACT) == 1.0
        count[1] += 1
    return {attack: (exact, attacked) for attack, (exact, attacked) in counts.items()}


def headline(rows: list[Row]) -> str:
    """The verdict first, in one of three outcomes (``leaks``, ``no leak found``, ``not measured``:
    :func:`fedgraph_sim.report.audit_facts.cell`), then each attack's count, most exact first."""
    from fedgraph_sim.report.audit_facts import LEAKS, NO_LEAK, cell

    verdict = cell(rows)
    counts = sorted(exact_counts(rows).items(), key=lambda item: -item[1][0])
    each = ", ".join(f"{attack} {exact} of {attacked}" for attack, (exact, attacked) in counts)
    if verdict["outcome"] == LEAKS:
        low, high = (round(100 * x) for x in verdict["ci"])
        return (f"Verdict: leaks. The server reconstructed {verdict['exact']} of {verdict['attacked']} attacked "
                f"graphs exactly (every node's features and every edge, up to node order; 95% CI {low}-{high}%) "
                f"from the updates alone, by {verdict['attack']}: {each}.")
    if verdict["outcome"] == NO_LEAK:
        return (f"Verdict: no leak found. No attack reconstructed a graph exactly: 0 of {verdict['attacked']} "
                f"graphs whose call completed ({verdict['attack']}; the rate is below {100 * verdict['ci'][1]:.0f}% "
                f"with 95% confidence; failed {verdict['failed']}, timed out {verdict['timed_out']}): {each}. "
                "These attacks found nothing; that is not proof that nothing leaks.")
    return f"Verdict: not measured ({verdict['reason']})" + (f": {each}." if each else ".")


def draw_exact(run_dir: str | Path) -> list[Path]:
    """``drawings/<attack>_exact.png`` for every attack that rebuilt a graph exactly."""
    out = []
    for path in sorted(Path(run_dir, "drawings").glob("*_exact.json")):
        drawing = json.loads(path.read_text())
        saved = drawing_figure(drawing["attack"], [drawing], path.with_suffix(".png"))
        out.append(saved.path)
    return out
