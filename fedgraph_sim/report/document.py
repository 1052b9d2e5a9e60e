"""``report.md`` of a run or sweep directory: overview, tables, then every figure with its caption.

A figure that cannot be drawn (no defended rows, no test accuracy, no drawings, or an unexpected
error) leaves one line in its section saying why; the report itself is always written.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from fedgraph_sim.atomic_files import write_text_atomically
from fedgraph_sim.report.artifacts import Saved, Skipped, failure
from fedgraph_sim.report.dp_audit import dp_audit_section
from fedgraph_sim.report.groups import Group, defense_labels, defense_order, group_rows
from fedgraph_sim.report.inputs import ReportInput, load, paper_row
from fedgraph_sim.report.stopping import stopping_table
from fedgraph_sim.report.tables import caption, markdown, summary_grid
from fedgraph_sim.rows.statistics import federation_key, summarize

REPORT = "report.md"
FIGURES = "figures"


@dataclass
class Report:
    path: Path
    figures: list[Saved] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def _outcomes(name: str, build: Callable[[], Iterable]) -> list[Saved | Skipped]:
    """Every outcome of a builder (each of its figures is guarded by ``attempt``); should the
    builder itself fail, what it yielded so far is kept and one Skipped line says why."""
    outcomes: list[Saved | Skipped] = []
    try:
        for outcome in build():
            outcomes.append(outcome)
    except Exception as exc:  # noqa: BLE001 - the tables and the other figures still get written
        outcomes.append(failure(name, exc))
    return outcomes


def _overview(data: ReportInput, groups: list[Group]) -> list[str]:
    statuses = Counter(r.get("status", "ok") for r in data.rows)
    status_text = ", ".join(f"{n} {s}" for s, n in statuses.most_common())
    defenses = defense_labels(groups)
    lines = [f"# Privacy audit report: {data.name}", "",
             f"{data.kind.capitalize()} directory `{data.directory}`: {len(data.rows)} result rows "
             f"({status_text or 'none'}) from {len({federation_key(r) for r in data.rows})} federation(s).", "",
             f"- datasets: {', '.join(dict.fromkeys(g.dataset for g in groups)) or '-'}",
             f"- attacks: {', '.join(dict.fromkeys(g.attack for g in groups)) or '-'}",
             *([f"- training settings: {', '.join(dict.fromkeys(g.setting for g in groups))}"]
               * any(g.setting for g in groups)),
             f"- defense settings: {', '.join(defenses) or '-'}"]
    if data.reference:
        lines.append(f"- paper reference: {data.reference.get('source', 'reference.yaml')}")
    lines += [f"- note: {note}" for note in data.notes]
    return lines + [""]


def markdown_tables(data: ReportInput, groups: list[Group]) -> str:
    """Per dataset: an identity-alignment table (with utility and the paper's rows) and a
    matched-alignment table, attack-major, defenses by family then strength; the metric columns
    are ``data.metrics`` (a sweep spec's ``metrics``, else the report's default)."""
    rank = {(g.dataset, g.attack, g.setting, g.defense): i for i, g in enumerate(groups)}
    entries = sorted(summarize(data.rows), key=lambda e: rank[e["dataset"], e["attack"], e["setting"], e["defense"]])
    labels = ("attack", "setting", "defense") if any(g.setting for g in groups) else ("attack", "defense")
    out = []
    for dataset in dict.fromkeys(g.dataset for g in groups):
        out.append(f"## Results: {dataset or 'unnamed dataset'}\n")
        for alignment in ("identity", "matched"):
            mine = [e for e in entries if e["dataset"] == dataset and e["alignment"] == alignment]
            identity = alignment == "identity"  # utility and the paper's rows do not depend on it
            grid = summary_grid(mine, data.metrics, labels, utility=identity,
                                paper=lambda e: paper_row(data.reference, e["dataset"], e["defense"], e["attack"])
                                if identity else {})
            how = ("reconstructed node i is scored against true node i, the papers' convention" if identity
                   else "reconstructed nodes are first matched to true nodes (Hungarian)")
            source = f" ({data.reference.get('source', 'reference.yaml')})" if any(grid.paper) else ""
            out += [f"### {alignment.capitalize()} alignment\n", f"{grid.caption()}{source} Alignment: {how}.\n",
                    markdown(grid)]
    return "\n".join(out)


def round_tables(data: ReportInput, groups: list[Group]) -> str:
    """Per dataset and alignment: each attack's summary per attacked round (or span of rounds),
    with the global model's test accuracy over those rounds; empty when one round was attacked."""
    from fedgraph_sim.report.rounds import window_entries  # loads matplotlib (see render)

    entries = window_entries(data.rows, data.utility)
    if not entries:
        return ""
    labels = ("attack", "setting", "defense", "rounds") if any(g.setting for g in groups) else (
        "attack", "defense", "rounds")
    out = ["## Leakage by round\n", f"{caption(data.metrics, 'full', False, ())} Each attack over the graphs "
           "it attacked in each round (or span of rounds); test acc: the held-out accuracy of the global "
           "models those rounds' clients trained (round r trains the model after round r - 1; round 1 the "
           "initial one), mean ± std over the n federations.\n"]
    for dataset in dict.fromkeys(e["dataset"] for e in entries):
        for alignment in ("identity", "matched"):
            mine = [e for e in entries if e["dataset"] == dataset and e["alignment"] == alignment]
            grid = summary_grid(mine, data.metrics, labels, utility=True)
            out += [f"### {dataset or 'unnamed dataset'}, {alignment} alignment\n", markdown(grid)]
    return "\n".join(out)


def render(directory: str | Path) -> Report:
    """Write ``report.md`` and ``figures/*.png`` into ``directory``."""
    data = load(directory)
    # The drawing modules load matplotlib and networkx (about a second): imported once the
    # directory has been read, so a wrong path is refused at once.
    from fedgraph_sim.report.drawings import drawing_figures
    from fedgraph_sim.report.figures import frontiers, heatmaps, strength_figures
    from fedgraph_sim.report.pareto import pareto_figures
    from fedgraph_sim.report.rounds import leakage_figures, utility_figures, utility_table

    groups = group_rows(data.rows)
    order = defense_order(data.rows)
    out = data.directory / FIGURES
    report = Report(data.directory / REPORT)
    lines = _overview(data, groups) + dp_audit_section(data.directory)
    if groups:
        lines.append(markdown_tables(data, groups))
        lines.append(round_tables(data, groups))
        lines.append(stopping_table(groups))
    else:
        lines.append("No result rows: nothing to tabulate or plot.\n")
    if data.utility:
        lines += ["## Utility", "", "Test accuracy of the global model and of the centralised baseline (the same "
                  "model, data, learning rate and gradient steps without federation or defense), each the mean over "
                  "the last tenth of the rounds; several federations of a setting (seeds) are averaged round by "
                  "round first.", "", utility_table(data.utility)]
    sections = [
        ("Reconstruction vs defense strength", "metric_vs_strength",
         lambda: strength_figures(groups, data.metrics, data.reference, out)),
        ("Attacks x defenses", "heatmaps", lambda: heatmaps(groups, data.metrics, out)),
        ("Privacy-utility frontier", "frontier", lambda: frontiers(groups, data.metrics, out)),
        ("Privacy-utility per setting (Pareto)", "pareto", lambda: pareto_figures(groups, data.metrics, out)),
        ("Utility round by round", "utility", lambda: utility_figures(data.utility, out)),
        ("Leakage round by round", "leakage_vs_round", lambda: leakage_figures(groups, data.utility, out)),
        ("True vs reconstructed graphs", "drawings", lambda: drawing_figures(data.drawings, order, out)),
    ]
    for heading, name, build in sections if groups else []:
        lines += [f"## {heading}", ""]
        for outcome in _outcomes(name, build):
            if isinstance(outcome, Saved):
                report.figures.append(outcome)
                link = outcome.path.relative_to(data.directory).as_posix()
                lines += [f"![{outcome.path.stem}]({link})", "", f"*{outcome.caption}*", ""]
            else:
                report.skipped.append(outcome)
                lines += [f"{outcome.name} skipped: {outcome.reason}.", ""]
    write_text_atomically(report.path, "\n".join(lines).rstrip() + "\n")
    return report


def write_report(directory: str | Path) -> Path:
    """Write ``<directory>/report.md`` and ``<directory>/figures/*.png``; returns the report path."""
    return render(directory).path
