"""Round by round: the global model's utility, and each attack's leakage beside it.

- ``utility_<dataset>.png``: test accuracy of the global model after every round, one line per
  training and defense setting (mean over its federations), and the centralised baseline (the
  same model trained without federation: ``runtime/baseline.py``) dashed in the same colour.
- ``leakage_vs_round_<attack>.png``: per round, the attack's mean node-type accuracy and structure
  AUC over the graphs it attacked that round, the gradient-free prior on the same graphs dashed,
  and the utility curve of the same federations beside them: does a model that has learned leak
  more or less than a freshly initialised one?
- ``round_windows`` and ``window_entries``: the same question as a table (``report.md``, "Leakage
  by round"): each attack's summary over the graphs of each attacked round, or of ten equal spans of
  the rounds when more were attacked, beside the test accuracy of the models those rounds' clients
  trained.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Iterator

from fedgraph_sim.metrics import PRIORS, aggregate, metric, shown_in
from fedgraph_sim.report.artifacts import Saved, Skipped, attempt, new_figure, save
from fedgraph_sim.report.figures import _colors, _unique
from fedgraph_sim.report.groups import Group, setting_label
from fedgraph_sim.rows.record import Row, group_key
from fedgraph_sim.rows.statistics import summarize


def _mean_curve(curves: list[list[dict]], key: str) -> tuple[list[int], list[float]]:
    by_round: dict[int, list[float]] = defaultdict(list)
    for curve in curves:
        for point in curve:
            if point.get(key) is not None:
                by_round[int(point["round"])].append(float(point[key]))
    rounds = sorted(by_round)
    return rounds, [sum(by_round[r]) / len(by_round[r]) for r in rounds]


def _utility_axes(ax, utility: dict[tuple, list[list[dict]]], dataset: str, colors: dict) -> int:
    drawn = 0
    for (d, setting, defense), curves in utility.items():
        if d != dataset:
            continue
        label = setting_label(setting, defense)
        color = colors[label]
        rounds, values = _mean_curve(curves, "test_accuracy")
        if rounds:
            ax.plot(rounds, values, color=color, label=label)
            drawn += 1
        rounds, values = _mean_curve(curves, "centralised_test_accuracy")
        if rounds:
            ax.plot(rounds, values, color=color, linestyle="--", alpha=0.7)
    ax.set_xlabel("round")
    ax.set_ylabel("test accuracy (dashed: centralised)")
    ax.grid(alpha=0.3)
    return drawn


def utility_table(utility: dict[tuple, list[list[dict]]]) -> str:
    """Markdown: per (dataset, setting, defense), the global model's and the centralised baseline's
    test accuracy, each the mean over the last tenth of the rounds (the test splits are small: one
    round's number is noisy), and the gap."""
    lines = ["| dataset | setting | defense | rounds | federated | centralised | federated - centralised |",
             "|---|---|---|---|---|---|---|"]
    for (dataset, setting, defense), curves in utility.items():
        cells = []
        for key in ("test_accuracy", "centralised_test_accuracy"):
            rounds, values = _mean_curve(curves, key)
            tail = values[-max(1, len(values) // 10):]
            cells.append(sum(tail) / len(tail) if tail else math.nan)
        last = max((int(p["round"]) for c in curves for p in c), default=0)
        gap = cells[0] - cells[1]
        lines.append(f"| {dataset} | {setting or '-'} | {defense} | {last} | {cells[0]:.3f} | {cells[1]:.3f} | "
                     f"{gap:+.3f} |")
    return "\n".join(lines) + "\n"


def round_windows(rounds: list[int], most: int = 10) -> list[tuple[int, int]]:
    """Each attacked round on its own when there are at most ``most``, else ``most`` spans of equal
    length covering rounds 1 to the last attacked one (empty spans dropped)."""
    rounds = sorted(set(rounds))
    if len(rounds) <= most:
        return [(r, r) for r in rounds]
    width = math.ceil(rounds[-1] / most)
    spans = [(1 + i * width, (i + 1) * width) for i in range(most)]
    return [(a, b) for a, b in spans if any(a <= r <= b for r in rounds)]


def _window_accuracy(curves: list[list[dict]], first: int, last: int) -> dict:
    """Per federation the mean test accuracy of the models that rounds ``first..last`` sent out
    (the one after round r - 1 is what round r's clients trained, and what the attack sees the
    update of; round 0 is the initial model); mean and std over the federations."""
    means = []
    for curve in curves:
        values = [float(p["test_accuracy"]) for p in curve
                  if first - 1 <= int(p["round"]) <= last - 1 and p.get("test_accuracy") is not None]
        if values:
            means.append(sum(values) / len(values))
    if not means:  # not the whole run's accuracy, which the summary entry carries
        return {"test_accuracy_mean": math.nan, "test_accuracy_std": math.nan, "federations": 0}
    mean = sum(means) / len(means)
    std = math.sqrt(sum((m - mean) ** 2 for m in means) / len(means))
    return {"test_accuracy_mean": mean, "test_accuracy_std": std, "federations": len(means)}


def window_entries(rows: list[Row], utility: dict[tuple, list[list[dict]]]) -> list[dict]:
    """``rows.statistics.summarize`` entries of the attacks (not the priors, which every entry's gain
    already holds) per round window, each labelled ``rounds`` ("50" or "1-15") and carrying the
    test accuracy of the global models the window's clients trained. Empty when fewer than two
    rounds were attacked."""
    attacked = [r for r in rows if r.get("round") is not None and r.get("attack") not in PRIORS]
    windows = round_windows([int(r["round"]) for r in attacked])
    if len(windows) < 2:
        return []
    entries = []
    for first, last in windows:
        inside = [r for r in attacked if first <= int(r["round"]) <= last]
        for entry in summarize(inside):
            key = (entry["dataset"], entry["setting"], entry["defense"])
            entry.update(rounds=str(first) if first == last else f"{first}-{last}",
                         **_window_accuracy(utility.get(key, []), first, last))
            entries.append(entry)
    # each attack and setting together; the sort is stable, so its windows stay in order
    firsts = list(dict.fromkeys(group_key(r) for r in attacked))
    return sorted(entries, key=lambda e: firsts.index((e["dataset"], e["attack"], e["setting"], e["defense"])))


def utility_figures(utility: dict[tuple, list[list[dict]]], out: Path) -> Iterator[Saved | Skipped]:
    if not utility:
        yield Skipped("utility", "no utility rows (is data.test_fraction 0?)")
        return
    colors = _colors(_unique(setting_label(s, d) for _, s, d in utility))
    for dataset in _unique(d for d, _, _ in utility):
        name = f"utility_{dataset or 'run'}"
        yield attempt(name, lambda: _utility_figure(utility, dataset, colors, out / f"{name}.png"))


def _utility_figure(utility, dataset: str, colors: dict, path: Path) -> Saved:
    figure = new_figure(6.5, 4.2)
    ax = figure.subplots()
    _utility_axes(ax, utility, dataset, colors)
    ax.set_title(f"{dataset}: the global model after every round")
    ax.legend(fontsize=7)
    return save(figure, path, "Test accuracy of the global model after every round (round 0: the initial "
                              "model), mean over each setting's federations; dashed: the centralised baseline "
                              "(the same model, data, learning rate and number of gradient steps, no federation, "
                              "no defense).")


def leakage_figures(groups: list[Group], utility: dict, out: Path) -> Iterator[Saved | Skipped]:
    attacks = [a for a in _unique(g.attack for g in groups) if a not in PRIORS]
    rounds = {int(r["round"]) for g in groups for r in g.ok if r.get("round") is not None}
    if len(rounds) < 2:
        yield Skipped("leakage_vs_round", f"the attacks ran in {len(rounds)} round(s); nothing to plot over rounds")
        return
    for attack in attacks:
        name = f"leakage_vs_round_{attack}"
        yield attempt(name, lambda: _leakage_figure([g for g in groups if g.attack == attack], utility,
                                                    out / f"{name}.png"))


def _per_round(group: Group, column: str) -> tuple[list[int], list[float]]:
    by_round: dict[int, list[dict]] = defaultdict(list)
    for row in group.ok:
        by_round[int(row["round"])].append(row)
    rounds = sorted(by_round)
    values = [aggregate(by_round[r], column)["mean"] for r in rounds]
    kept = [(r, v) for r, v in zip(rounds, values) if not math.isnan(v)]
    return [r for r, _ in kept], [v for _, v in kept]


def _leakage_figure(groups: list[Group], utility: dict, path: Path) -> Saved | Skipped:
    attack, datasets = groups[0].attack, _unique(g.dataset for g in groups)
    colors = _colors(_unique(setting_label(g.setting, g.defense) for g in groups))
    leakage = shown_in("rounds")
    figure = new_figure(4.2 * (len(leakage) + 1), 3.4 * len(datasets) + 0.6)
    axes = figure.subplots(len(datasets), len(leakage) + 1, squeeze=False)
    drawn = 0
    for row_axes, dataset in zip(axes, datasets):
        for ax, name in zip(row_axes, leakage):
            for g in (g for g in groups if g.dataset == dataset):
                color = colors[setting_label(g.setting, g.defense)]
                rounds, values = _per_round(g, f"identity_{name}")
                if rounds:
                    ax.plot(rounds, values, color=color, marker=".", label=setting_label(g.setting, g.defense))
                    drawn += 1
                rounds, values = _per_round(g, f"prior_identity_{name}")
                if rounds:
                    ax.plot(rounds, values, color=color, linestyle="--", alpha=0.6)
            ax.set_title(f"{dataset}: {metric(name).short}" if len(datasets) > 1 else metric(name).short)
            ax.set_xlabel("round")
            ax.grid(alpha=0.3)
        _utility_axes(row_axes[-1], utility, dataset, colors)
        row_axes[-1].set_title("the global model")
    if not drawn:
        return Skipped(path.stem, f"{attack} has no scored graph in any round")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 4), fontsize=7)
    figure.suptitle(f"{attack}: leakage per round beside the model's utility")
    return save(figure, path, f"{attack}: mean over the graphs attacked in each round (identity alignment), "
                              "dashed: the gradient-free prior on the same graphs; right: test accuracy of the "
                              "global model after each round (dashed: centralised baseline). A gap that grows or "
                              "shrinks as the model learns answers whether a trained model leaks more or less.")
