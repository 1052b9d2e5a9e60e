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
from fedgraph_sim.results import is_attempted

EXACT = metric_column("gsm", "full_iso")


def exact_counts(rows: list[dict]) -> dict[str, tuple[int, int]]:
    """Per attack (priors left out), in row order: (graphs rebuilt exactly, graphs attacked)."""
    counts: dict[str, list[int]] = {}
    for row in rows:
        if row["attack"] in PRIORS or not is_attempted(row):
            continue
        count = counts.setdefault(row["attack"], [0, 0])
        count[0] += row.get(EXACT) == 1.0
        count[1] += 1
    return {attack: (exact, attacked) for attack, (exact, attacked) in counts.items()}


def headline(rows: list[dict]) -> str:
    """One sentence per attack, the attack with the most exact graphs first."""
    counts = sorted(exact_counts(rows).items(), key=lambda item: -item[1][0])
    if not counts:
        return "No attack was run on a graph, so nothing was reconstructed."
    parts = [f"{attack} {exact} of {attacked}" for attack, (exact, attacked) in counts]
    lead = counts[0][1][0]
    verdict = (f"The server reconstructed {lead} of the {counts[0][1][1]} attacked graphs exactly (every node's "
               f"features and every edge, up to node order) from the updates alone"
               if lead else "No attacked graph was reconstructed exactly")
    return f"{verdict}: {', '.join(parts)}."


def draw_exact(run_dir: str | Path) -> list[Path]:
    """``drawings/<attack>_exact.png`` for every attack that rebuilt a graph exactly."""
    out = []
    for path in sorted(Path(run_dir, "drawings").glob("*_exact.json")):
        drawing = json.loads(path.read_text())
        saved = drawing_figure(drawing["attack"], [drawing], path.with_suffix(".png"))
        out.append(saved.path)
    return out
