"""``pareto_<metric>.png``: what each setting costs and what it protects, as one point each.

One figure per metric of the report's tables (a sweep spec's ``metrics``). Per dataset and
(training setting, defense setting): x = the global model's final test AUC where the task has two
classes, else its test accuracy (``utility.final_utility``: the mean over the last tenth of the
rounds; then over the setting's federations; on an imbalanced task the accuracy stays at the
majority class and only the AUC shows what a defense costs), y = the best attack's information
gain over the gradient-free priors on the same graphs (the largest gain of any attack that is not
a prior, as the tables show it: for GRAIN's GSM and FULL over every attacked graph with failures
as 0; no prior rebuilds a graph, so FULL's gain is FULL itself). The Pareto front, the settings no
other beats on both (more utility and less gain), is drawn as a line; DP-SGD points carry their
epsilon.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterator

from fedgraph_sim.metrics import PRIORS, metric
from fedgraph_sim.report.artifacts import Saved, Skipped, attempt, new_figure, save
from fedgraph_sim.report.figures import _unique
from fedgraph_sim.report.groups import Group, by_setting, largest_epsilon, setting_label


def utility(members: list[Group]) -> tuple[float, str]:
    """The setting's final test AUC where it has one, else its test accuracy, and which it is."""
    auc = members[0].test_auc()
    return (auc, "AUC") if not math.isnan(auc) else (members[0].test_accuracy()["mean"], "accuracy")


def settings(groups: list[Group], name: str) -> dict[tuple, tuple[float, float, float, str, str]]:
    """(dataset, setting, defense) -> (test AUC or accuracy, best attack's gain, epsilon, best
    attack, which utility x is: "AUC" or "accuracy")."""
    out = {}
    for key, members in by_setting(groups).items():
        x, kind = utility(members)
        gains = [(g.shown(name)["gain"], g.attack) for g in members if g.attack not in PRIORS]
        gains = [(v, a) for v, a in gains if not math.isnan(v)]
        if gains and not math.isnan(x):
            gain, attack = max(gains)
            out[key] = (x, gain, largest_epsilon(members), attack, kind)
    return out


def front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats on both accuracy (higher) and gain (lower), by accuracy."""
    kept = [p for p in points
            if not any(q[0] >= p[0] and q[1] <= p[1] and q != p for q in points)]
    return sorted(set(kept))


def pareto_figures(groups: list[Group], metrics: tuple[str, ...], out: Path) -> Iterator[Saved | Skipped]:
    if not any(g.test_accuracy()["count"] for g in groups):
        yield Skipped("pareto", "no test accuracy in the result or utility rows (is data.test_fraction 0?)")
        return
    for name in metrics:
        yield attempt(f"pareto_{name}", lambda: _figure(groups, name, out / f"pareto_{name}.png"))


def _figure(groups: list[Group], name: str, path: Path) -> Saved | Skipped:
    points = settings(groups, name)
    if len(points) < 2:
        return Skipped(path.stem, f"fewer than two settings have both test accuracy and a {name} gain")
    datasets = _unique(k[0] for k in points)
    figure = new_figure(9.6 * len(datasets), 4.6)
    axes = figure.subplots(1, len(datasets), squeeze=False)[0]
    for ax, dataset in zip(axes, datasets):
        mine = dict(sorted((k, v) for k, v in points.items() if k[0] == dataset))
        key = []  # points carry numbers, the key beside the axes says which setting each is
        for number, ((_, setting, defense), (x, y, eps, attack, _)) in enumerate(mine.items(), start=1):
            ax.scatter(x, y, color="tab:red" if defense != "none" else "tab:blue", zorder=3)
            ax.annotate(str(number), (x, y), textcoords="offset points", xytext=(3, 2), fontsize=6)
            epsilon = "" if math.isnan(eps) else f" ε={eps:.3g}"
            key.append(f"{number}: {setting_label(setting, defense)}{epsilon} ({attack})")
        ax.text(1.02, 1.0, "\n".join(key), transform=ax.transAxes, va="top", fontsize=5.5, family="monospace")
        line = front([(x, y) for x, y, *_ in mine.values()])
        ax.plot([p[0] for p in line], [p[1] for p in line], color="black", linewidth=1, label="Pareto front")
        ax.axhline(0, color="grey", linestyle="--", linewidth=0.8)
        kinds = {kind for *_, kind in mine.values()}
        ax.set_xlabel("final test AUC of the global model" if kinds == {"AUC"} else
                      "final test accuracy of the global model" if kinds == {"accuracy"} else
                      "final test AUC (two classes) or accuracy of the global model")
        ax.set_ylabel(f"best attack's gain in {metric(name).short} over the priors")
        ax.set_title(dataset)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return save(figure, path, f"Privacy-utility per setting: x = final test AUC for a two-class task, else "
                              "accuracy (the mean over the last tenth of the rounds, then over federations), "
                              f"y = the best attack's mean information gain in {metric(name).short} over the "
                              "gradient-free priors (0, dashed: the attacks learn nothing the priors do not know); "
                              "numbered points, the key beside the axes (setting, defense, epsilon, best attack); "
                              "blue: no defense, red: defended; black: the Pareto front (right and down is better "
                              "for the defender). DP-SGD points carry their epsilon.")
