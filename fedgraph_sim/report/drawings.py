"""``drawings_<attack>.png``: true graphs beside their reconstructions, up to three per attack
(different defense settings first), from the ``drawings/*.json`` the attack runner keeps.

Left: the true graph; right: the reconstruction with edges where ``rec_adj > 0.5``. Graphs are
drawn with networkx: node colour = node type (one categorical palette per figure, in the legend),
spring layout with a fixed seed, and the reconstruction at the true graph's node positions so node
i sits where identity alignment scores it. Molecules (a drawing with ``smiles``) are drawn with
RDKit instead: the truth from its SMILES, the reconstruction from its atom types and thresholded
edges as single bonds, unsanitized; networkx takes over wherever RDKit cannot.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import networkx as nx
import numpy as np
from matplotlib import colormaps
from matplotlib.patches import Patch

from fedgraph_sim.report.artifacts import Saved, Skipped, attempt, new_figure, save

PER_ATTACK = 3
EDGE_THRESHOLD = 0.5
LAYOUT_SEED = 0


def _unique(values) -> list:
    return list(dict.fromkeys(values))


def _type_name(values: list[str], t: int) -> str:
    return str(values[t]) if 0 <= t < len(values) else str(t)


def _true_edges(drawing: dict) -> list[tuple[int, int]]:
    src, dst = drawing.get("true_edge_index") or [[], []]
    return sorted({(min(s, d), max(s, d)) for s, d in zip(src, dst) if s != d})


def _rec_edges(drawing: dict) -> list[tuple[int, int]]:
    try:
        adj = np.asarray(drawing.get("rec_adj") or [[]], dtype=float)
    except (TypeError, ValueError):
        return []  # ragged rows: not a matrix
    if adj.ndim != 2 or adj.size == 0:
        return []
    size = min(adj.shape)
    adj = np.nan_to_num(adj[:size, :size])
    adj = np.maximum(adj, adj.T)  # an undirected edge wherever either direction is likely
    return [(int(i), int(j)) for i, j in zip(*np.nonzero(np.triu(adj, 1) > EDGE_THRESHOLD))]


def pick(drawings: list[dict], order: dict[str, tuple]) -> list[dict]:
    """Up to ``PER_ATTACK`` drawings of distinct graphs, one per defense setting first (in defense
    order), an exact reconstruction first within a setting."""
    distinct = {(d.get("defense"), d.get("round"), d.get("client"), d.get("graph_id")): d
                for d in sorted(drawings, key=lambda d: bool(d.get("exact")))}  # the exact copy wins
    ranked = sorted(distinct.values(), key=lambda d: (order.get(d.get("defense", "none"), (math.inf,)),
                                                      not d.get("exact")))
    seen: set = set()
    first, rest = [], []
    for drawing in ranked:
        (rest if drawing.get("defense") in seen else first).append(drawing)
        seen.add(drawing.get("defense"))
    return (first + rest)[:PER_ATTACK]


@contextmanager
def _quiet_rdkit():
    from rdkit import RDLogger

    RDLogger.DisableLog("rdApp.*")  # unsanitized reconstructions make RDKit warn per atom
    try:
        yield
    finally:
        RDLogger.EnableLog("rdApp.*")


def _true_molecule(smiles: str):
    from rdkit import Chem
    from rdkit.Chem import Draw

    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        raise ValueError(f"unparsable SMILES {smiles!r}")
    return Draw.MolToImage(mol, size=(360, 360))


def _reconstructed_molecule(types: list[int], values: list[str], edges: list[tuple[int, int]]):
    from rdkit import Chem
    from rdkit.Chem import Draw, rdDepictor

    mol = Chem.RWMol()
    for t in types:
        if not 0 <= t < len(values):
            raise ValueError(f"node type {t} outside the type block")
        name = values[t]
        mol.AddAtom(Chem.Atom(int(name)) if name.isdigit() else Chem.Atom(name))
    for i, j in edges:
        if max(i, j) < len(types):
            mol.AddBond(i, j, Chem.BondType.SINGLE)
    mol = mol.GetMol()
    mol.UpdatePropertyCache(strict=False)  # valences may be impossible: draw what was reconstructed
    Chem.FastFindRings(mol)
    rdDepictor.Compute2DCoords(mol)
    return Draw.MolToImage(mol, size=(360, 360), kekulize=False)


def _draw_graph(ax, types: list[int], edges: list[tuple[int, int]], values: list[str], palette: dict,
                pos: dict, curved: bool) -> None:
    graph = nx.Graph()
    graph.add_nodes_from(range(len(types)))
    graph.add_edges_from(e for e in edges if max(e) < len(types))
    names = [_type_name(values, t) for t in types]
    # Curved edges keep a reconstruction's edges apart where the true layout puts nodes in a line.
    style = {"arrows": True, "arrowstyle": "-", "connectionstyle": "arc3,rad=0.15"} if curved else {}
    nx.draw_networkx_edges(graph, pos, ax=ax, edge_color="grey", **style)
    nx.draw_networkx_nodes(graph, pos, ax=ax, node_color=[palette[n] for n in names], node_size=180,
                           edgecolors="black", linewidths=0.5)
    if len(types) <= 40:
        nx.draw_networkx_labels(graph, pos, labels=dict(enumerate(names)), ax=ax, font_size=7)


def _layouts(drawing: dict) -> tuple[dict, dict]:
    """Spring layout of the true graph; the reconstruction reuses it and places extra nodes."""
    n_true, n_rec = len(drawing.get("true_types") or []), len(drawing.get("rec_types") or [])
    true_graph = nx.Graph()
    true_graph.add_nodes_from(range(n_true))
    true_graph.add_edges_from(e for e in _true_edges(drawing) if max(e) < n_true)
    true_pos = nx.spring_layout(true_graph, seed=LAYOUT_SEED)
    rec_pos = {i: true_pos[i] for i in range(min(n_true, n_rec))}
    if n_rec > n_true:
        rec_graph = nx.Graph()
        rec_graph.add_nodes_from(range(n_rec))
        rec_graph.add_edges_from(e for e in _rec_edges(drawing) if max(e) < n_rec)
        rec_pos = nx.spring_layout(rec_graph, pos=rec_pos or None, fixed=list(rec_pos) or None,
                                   seed=LAYOUT_SEED)
    return true_pos, rec_pos


def _score(scores: dict | None, key: str) -> str:
    value = (scores or {}).get(key)
    if not isinstance(value, (int, float)) or math.isnan(value):
        return "-"
    return f"{value:.2f}"


def _molecule_images(drawing: dict) -> tuple | None:
    """RDKit images of the truth and the reconstruction, or None if either cannot be drawn (the
    pair is then drawn with networkx, so the two sides always look alike)."""
    if not drawing.get("smiles"):
        return None
    values = [str(v) for v in drawing.get("type_values") or []]
    try:
        with _quiet_rdkit():
            return (_true_molecule(drawing["smiles"]),
                    _reconstructed_molecule(drawing.get("rec_types") or [], values, _rec_edges(drawing)))
    except Exception:  # noqa: BLE001 - any RDKit failure means: draw the plain graphs
        return None


def _draw_pair(left, right, drawing: dict, palette: dict) -> bool:
    """Truth on ``left``, reconstruction on ``right``; True when RDKit drew them."""
    images = _molecule_images(drawing)
    if images is not None:
        left.imshow(images[0])
        right.imshow(images[1])
    else:
        values = [str(v) for v in drawing.get("type_values") or []]
        true_pos, rec_pos = _layouts(drawing)
        _draw_graph(left, drawing.get("true_types") or [], _true_edges(drawing), values, palette, true_pos,
                    curved=False)
        _draw_graph(right, drawing.get("rec_types") or [], _rec_edges(drawing), values, palette, rec_pos,
                    curved=True)
    left.set_axis_off()
    right.set_axis_off()
    return images is not None


def drawing_figures(drawings: list[dict], order: dict[str, tuple], out: Path) -> Iterator[Saved | Skipped]:
    if not drawings:
        yield Skipped("drawings", "no drawings/*.json in the directory (output.drawings = 0?)")
        return
    for attack in _unique(d.get("attack", "?") for d in drawings):
        chosen = pick([d for d in drawings if d.get("attack", "?") == attack], order)
        yield attempt(f"drawings_{attack}", lambda: drawing_figure(attack, chosen, out / f"drawings_{attack}.png"))


def drawing_figure(attack: str, chosen: list[dict], path: Path) -> Saved:
    """One figure of ``chosen`` drawings of ``attack``: each true graph beside its reconstruction."""
    types = sorted({(t, _type_name([str(v) for v in d.get("type_values") or []], t))
                    for d in chosen for t in (d.get("true_types") or []) + (d.get("rec_types") or [])})
    names = _unique(name for _, name in types)
    cmap = colormaps["tab20" if len(names) > 10 else "tab10"]
    palette = {name: cmap(i % cmap.N) for i, name in enumerate(names)}
    figure = new_figure(9.0, 4.2 * len(chosen) + 0.6)
    axes = figure.subplots(len(chosen), 2, squeeze=False)
    by_rdkit = []
    for (left, right), drawing in zip(axes, chosen):
        by_rdkit.append(_draw_pair(left, right, drawing, palette))
        left.set_title(f"true: {drawing.get('defense', 'none')}\nround {drawing.get('round')}, client "
                       f"{drawing.get('client')}, graph {drawing.get('graph_id')}", fontsize=9)
        scores = drawing.get("scores")
        right.set_title(f"reconstructed by {attack}\ntype ACC {_score(scores, 'node_type_accuracy')}, "
                        f"AUC {_score(scores, 'adj_auc')}, AP {_score(scores, 'adj_ap')}", fontsize=9)
    if not all(by_rdkit):  # RDKit colours atoms its own way: the legend is for networkx drawings
        figure.legend(handles=[Patch(facecolor=palette[n], edgecolor="black", label=n) for n in names],
                      title=chosen[0].get("type_block") or "node type", loc="outside right center", fontsize=8)
    alignments = _unique(d.get("alignment", "identity") for d in chosen)
    caption = (f"{attack}: true graph (left) and reconstruction (right, edges where the predicted "
               f"probability > {EDGE_THRESHOLD}); scores use {' and '.join(alignments)} alignment")
    if any(d.get("exact") for d in chosen):
        caption += ("; an exact reconstruction is renumbered by its isomorphism onto the truth (its own node "
                    "order is arbitrary)")
    if not all(by_rdkit):
        caption += ("; graphs: node colour = node type, the reconstruction drawn at the true graph's node "
                    "positions")
    if any(by_rdkit):
        caption += ("; molecules drawn by RDKit, the reconstruction as an unsanitized molecule of single "
                    "bonds")
    return save(figure, path, caption + ".")
