"""The report's DP-audit section: each run's epsilon lower bound from its canaries beside the
epsilon its defense claims (``canaries.json``, written by the run)."""

from __future__ import annotations

import json
from pathlib import Path


HEADER = ["run", "canaries", "claimed epsilon", "delta", "lower bound (95%)", "guesses right", "f-DP bound (Gaussian)",
          "finding"]


def finding(outcome: dict) -> str:
    """What the bound says about the claim: a refutation is loud; agreement proves nothing."""
    claimed = outcome["epsilon_claimed"]
    if claimed is None:
        return "no claim to test (no DP defense reports an epsilon against the server)"
    if outcome["claim_refuted"]:
        return "**CLAIM REFUTED**: the defense or its accountant is wrong"
    if outcome["epsilon_lower_bound"] == 0:
        return "not measured: the canaries told nothing, which is no evidence for the claim"
    return f"consistent with the claim (the audit reaches {outcome['epsilon_lower_bound'] / claimed:.0%} of it)"


def dp_audit_section(directory: str | Path) -> list[str]:
    """Markdown lines for every ``canaries.json`` under ``directory`` (none: no lines)."""
    directory = Path(directory)
    found = sorted(directory.glob("canaries.json")) + sorted(directory.glob("**/*/canaries.json"))
    if not found:
        return []
    rows = []
    for path in found:
        outcome = json.loads(path.read_text())
        claimed = outcome["epsilon_claimed"]
        rows.append([path.parent.relative_to(directory).as_posix() or ".",
                     f"{outcome['count']} {outcome['kind']}", "none" if claimed is None else f"{claimed:.3g}",
                     f"{outcome['delta']:g}", f"{outcome['epsilon_lower_bound']:.2f}",
                     f"{outcome['correct']} of {outcome['guesses']}",
                     f"{outcome['gdp_epsilon_lower_bound']:.2f}" if "gdp_epsilon_lower_bound" in outcome else "-",
                     finding(outcome)])
    return ["## DP audit", "",
            "Each run's canaries (each included by a fair coin) and the server's guesses about them give an epsilon "
            "the run cannot be below, at 95% confidence (Steinke, Nasr and Jagielski, \"Privacy Auditing with One (1) "
            "Training Run\", NeurIPS 2023). A bound above the claim refutes it; a bound below it does not confirm it. "
            "The f-DP bound (Mahloujifar, Melis and Chaudhuri, arXiv:2410.22235) tests the stronger reading that the "
            "run is as private as the Gaussian mechanism with the claimed epsilon: tighter where the noise is "
            "Gaussian, no refutation of an (epsilon, delta) claim on its own.",
            "", _table(rows), ""]


def _table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    return "\n".join(lines + ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows])
