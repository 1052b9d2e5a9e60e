"""Summary figures over defense settings (identity alignment, the papers' convention), one panel
or figure per metric of the report's tables (a sweep spec's ``metrics``), each value as the tables
show it (``rows.statistics.shown``: GSM and FULL over every attacked graph with failures as 0).

- ``metric_vs_strength_<family>.png``: reconstruction quality against defense strength, one line
  per attack with std error bars, undefended rows at strength 0, the gradient-free prior as a dashed
  line and the paper's numbers as hollow markers (the GraphDLG paper's Fig. 4 view).
- ``heatmap_<metric>.png``: attacks x defense settings, the mean metric in each cell.
- ``frontier_<metric>.png``: privacy-utility frontier, the global model's test accuracy against
  reconstruction quality, one marker per (attack, defense setting).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterator

import numpy as np
from matplotlib import colormaps
from matplotlib.lines import Line2D

from fedgraph_sim.metrics import aggregate, prior_note
from fedgraph_sim.metrics import metric as catalogue_entry
from fedgraph_sim.report.artifacts import Saved, Skipped, attempt, new_figure, save
from fedgraph_sim.report.groups import Group, defense_labels
from fedgraph_sim.report.inputs import paper_row

MARKERS = "osD^vPX*"

Outcome = Saved | Skipped


def _short(metric: str) -> str:
    return catalogue_entry(metric).short


def _unique(values) -> list:
    return list(dict.fromkeys(values))


def _colors(names: list[str]) -> dict[str, tuple]:
    cmap = colormaps["tab10"]
    return {name: cmap(i % 10) for i, name in enumerate(names)}


def _mean(group: Group, metric: str) -> dict[str, float]:
    return group.shown(metric)


def _prior(groups: list[Group], metric: str) -> float:
    """Mean of the gradient-free prior over the undefended rows (over all rows if there are none:
    the prior never sees the update, so any row's prior is the same kind of number)."""
    undefended = [r for g in groups if g.family == "none" for r in g.ok]
    rows = undefended or [r for g in groups for r in g.ok]
    return aggregate(rows, f"prior_identity_{metric}")["mean"]


def _failures(metrics: tuple[str, ...]) -> str:
    """The caption's end: how failures count, when a metric counts them."""
    counted = [_short(m) for m in metrics if catalogue_entry(m).counts_failures]
    return (f"; {', '.join(counted)}: over every attacked graph, a failure counted as 0." if counted else ".")


def _strength_axis(ax, strengths: list[float]) -> None:
    positive = [s for s in strengths if s > 0]
    # Symlog keeps the undefended point at 0 visible when the strengths span decades.
    if positive and max(positive) / min(positive) >= 50:
        ax.set_xscale("symlog", linthresh=min(positive))
        ax.set_xlim(-0.3 * min(positive), 1.5 * max(positive))  # no empty negative half


def _value_axis(ax, metric: str, means: list[float]) -> None:
    positive = [m for m in means if m > 0]
    # Feature MSE of a diverging attack can be 1e4 times that of the others; a log axis shows both.
    if metric == "feature_mse" and positive and max(positive) / min(positive) >= 100:
        ax.set_yscale("log")


def strength_figures(groups: list[Group], metrics: tuple[str, ...], reference: dict,
                     out: Path) -> Iterator[Outcome]:
    families = _unique(g.family for g in groups if g.family != "none")
    if not families:
        yield Skipped("metric_vs_strength", "no defended rows, so nothing to plot against strength")
        return
    for family in families:
        name = f"metric_vs_strength_{family}"
        defended = [g for g in groups if g.family == family and not math.isnan(g.strength)]
        if not defended:
            yield Skipped(name, f"{family} has no single numeric parameter to use as strength")
            continue
        members = [g for g in groups if g.family == "none"] + defended
        if len({g.strength for g in members}) < 2:
            yield Skipped(name, f"only one strength ({defended[0].strength:g}) and no undefended rows")
            continue
        yield attempt(name, lambda: _strength_figure(family, members, metrics, reference, out / f"{name}.png"))


def _strength_figure(family: str, members: list[Group], metrics: tuple[str, ...], reference: dict,
                     path: Path) -> Saved:
    datasets = _unique(g.dataset for g in members if g.family != "none")
    colors = _colors(_unique(g.series for g in members))
    param = next((g.param for g in members if g.param), "strength")
    figure = new_figure(3.6 * len(metrics), 3.0 * len(datasets) + 0.8)
    axes = figure.subplots(len(datasets), len(metrics), squeeze=False)
    handles: dict[str, object] = {}
    for row, dataset in enumerate(datasets):
        mine = [g for g in members if g.dataset == dataset]
        for col, metric in enumerate(metrics):
            ax = axes[row][col]
            for attack in _unique(g.series for g in mine):
                points = sorted(((g.strength, _mean(g, metric), g) for g in mine if g.series == attack),
                                key=lambda p: p[0])
                points = [(x, agg, g) for x, agg, g in points if agg["count"]]
                if not points:
                    continue
                handles[attack] = ax.errorbar([p[0] for p in points], [p[1]["mean"] for p in points],
                                              yerr=[p[1]["std"] for p in points], color=colors[attack],
                                              marker="o", capsize=3, label=attack)
                paper = [(x, paper_row(reference, dataset, g.defense, g.attack).get(metric)) for x, _, g in points]
                paper = [(x, v) for x, v in paper if v is not None]
                if paper:
                    ax.scatter(*zip(*paper), facecolors="none", edgecolors=colors[attack], s=60, marker="s")
                    handles["paper"] = Line2D([], [], marker="s", markerfacecolor="none", markeredgecolor="black",
                                              linestyle="", label="paper (same colour as the attack)")
            prior = _prior(mine, metric)
            if not math.isnan(prior):
                handles["prior"] = ax.axhline(prior, color="grey", linestyle="--",
                                              label="gradient-free baseline (prior)")
            _strength_axis(ax, [g.strength for g in mine])
            _value_axis(ax, metric, [_mean(g, metric)["mean"] for g in mine])
            ax.set_title(f"{dataset}: {_short(metric)}" if len(datasets) > 1 else _short(metric))
            ax.set_xlabel(f"{family} {param}")
            ax.grid(alpha=0.3)
    figure.suptitle(f"Reconstruction vs {family} {param} (mean ± std over attacked graphs)")
    figure.legend(handles=list(handles.values()), loc="outside lower center", ncols=min(len(handles), 6))
    return save(figure, path, f"Reconstruction quality against {family} {param} (identity alignment). "
                              "Points: mean ± std over attacked graphs; strength 0 = no defense; dashed: "
                              f"the gradient-free prior ({prior_note(metrics)}) on the undefended graphs"
                              + ("; hollow squares: the paper" if "paper" in handles else "") + _failures(metrics))


def heatmaps(groups: list[Group], metrics: tuple[str, ...], out: Path) -> Iterator[Outcome]:
    for metric in metrics:
        name = f"heatmap_{metric}"
        yield attempt(name, lambda: _heatmap(groups, metric, out / f"{name}.png"))


def _heatmap(groups: list[Group], metric: str, path: Path) -> Outcome:
    several = len({g.dataset for g in groups}) > 1
    rows = _unique((g.dataset, g.series) for g in groups)
    columns = defense_labels(groups)
    values = np.full((len(rows), len(columns)), np.nan)
    for g in groups:
        values[rows.index((g.dataset, g.series)), columns.index(g.defense)] = _mean(g, metric)["mean"]
    if np.isnan(values).all():
        return Skipped(path.stem, f"no ok row has {metric}")
    figure = new_figure(2.0 + 1.1 * len(columns), 1.6 + 0.55 * len(rows))
    ax = figure.subplots()
    # Rates share one scale, 0 to 1; a distance or an MSE spans its own range.
    low, high = (0.0, 1.0) if np.nanmin(values) >= 0 and np.nanmax(values) <= 1 else (
        float(np.nanmin(values)), float(np.nanmax(values)))
    image = ax.imshow(np.ma.masked_invalid(values), cmap="viridis", vmin=low, vmax=high, aspect="auto")
    for (i, j), value in np.ndenumerate(values):
        if not np.isnan(value):
            bright = high > low and (value - low) / (high - low) > 0.6
            ax.text(j, i, f"{value:.3g}", ha="center", va="center", fontsize=8,
                    color="black" if bright else "white")
    ax.set_xticks(range(len(columns)), columns, rotation=40, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), [f"{d} · {a}" if several else a for d, a in rows], fontsize=8)
    ax.set_title(f"{_short(metric)}: mean over attacked graphs")
    figure.colorbar(image, ax=ax, shrink=0.8)
    return save(figure, path, f"{_short(metric)} (identity alignment), mean over scored graphs; rows: attacks, "
                              "columns: defense settings by family then strength; blank: no scored graph"
                              + _failures((metric,)))


def frontiers(groups: list[Group], metrics: tuple[str, ...], out: Path) -> Iterator[Outcome]:
    if not any(g.test_accuracy()["count"] for g in groups):
        yield Skipped("frontier", "no test accuracy in the result or utility rows (is data.test_fraction 0?)")
        return
    for metric in metrics:
        name = f"frontier_{metric}"
        yield attempt(name, lambda: _frontier(groups, metric, out / f"{name}.png"))


def _frontier(groups: list[Group], metric: str, path: Path) -> Outcome:
    datasets = _unique(g.dataset for g in groups)
    colors = _colors(_unique(g.family for g in groups))
    markers = {a: MARKERS[i % len(MARKERS)] for i, a in enumerate(_unique(g.series for g in groups))}
    figure = new_figure(5.0 * len(datasets) + 1.5, 4.4)
    axes = figure.subplots(1, len(datasets), squeeze=False)[0]
    plotted = 0
    for ax, dataset in zip(axes, datasets):
        plotted += _frontier_panel(ax, [g for g in groups if g.dataset == dataset], metric, colors, markers)
        ax.set_title(dataset if len(datasets) > 1 else f"privacy-utility frontier: {_short(metric)}")
        ax.set_xlabel("test accuracy of the global model")
        ax.set_ylabel(f"{_short(metric)} (mean over attacked graphs)")
        ax.grid(alpha=0.3)
    if not plotted:
        return Skipped(path.stem, f"no defense setting has both test accuracy and {metric}")
    handles = [Line2D([], [], color=c, marker="o", linestyle="-", label=f) for f, c in colors.items()]
    handles += [Line2D([], [], color="black", marker=m, linestyle="", label=a) for a, m in markers.items()]
    figure.legend(handles=handles, loc="outside right center", fontsize=8)
    return save(figure, path, f"Privacy-utility frontier for {_short(metric)}: x = test accuracy of the global "
                              "model (mean over the setting's federations), y = mean over attacked graphs; "
                              "colour: defense family, marker: attack, label: strength. Down and right is "
                              "better for the defender" + _failures((metric,)))


def _frontier_panel(ax, groups: list[Group], metric: str, colors: dict, markers: dict) -> int:
    """Markers for one dataset; a thin line joins each attack's settings of one family by strength,
    starting from its undefended point. Returns the number of markers."""
    plotted = 0
    for attack in _unique(g.series for g in groups):
        points = {g.defense: (g.test_accuracy()["mean"], _mean(g, metric)["mean"], g)
                  for g in groups if g.series == attack}
        points = {d: p for d, p in points.items() if not (math.isnan(p[0]) or math.isnan(p[1]))}
        for family in _unique(g.family for _, _, g in points.values() if g.family != "none"):
            line = sorted((p for p in points.values() if p[2].family in ("none", family)),
                          key=lambda p: p[2].order)
            ax.plot([p[0] for p in line], [p[1] for p in line], color=colors[family], alpha=0.4, linewidth=1)
        for x, y, g in points.values():
            ax.scatter(x, y, color=colors[g.family], marker=markers[attack], s=40, zorder=3)
            label = g.defense if g.family == "none" or math.isnan(g.strength) else f"{g.strength:g}"
            ax.annotate(label, (x, y), textcoords="offset points", xytext=(4, 3), fontsize=7)
            plotted += 1
    return plotted
