"""How much of a FedSGD batch the ``imprinted_nodes`` crafting reads: node rows and graphs.

For ``--batches`` FedSGD batches of ``--batch-size`` Tox21 molecules (GRAIN's Table 2 victims: the
first 100 of a seed-42 shuffle, task SR-p53, GRAIN's features) and GRAIN's victim model at a random
initialisation (torch seed = batch index), the server crafts the readout's first layer as the table
of ``fedgraph_sim/crafting/imprinted_nodes.py`` (thresholds on 300 molecules of the shuffle past
the victims, its auxiliary graphs), a float32 client returns the batch's mean BCE gradient, and the
server peels the table and groups the rows by their weights. Per batch it prints the nodes and
their distinct readout rows, the cells the peeling left, the rows decoded (and how many equal a
true row), the victims whose rows and copies a proposal holds exactly (alone, or with others of
their label and size in an epoch table's merged proposal), how many of those
GRAIN's rebuild (``attacks/grain/imprinted.py``, 60 s each) makes exactly, and why the other
victims were not grouped: a row of theirs undecoded, or a row they share with another graph.

With ``--local-steps K`` the client trains a FedAvg epoch instead: K plain SGD steps (``--lr``) on
K batches of ``--batch-size``, and returns its weights (float32, or float64 with ``--float64``; after
one step too with ``--weights``);
the server reads the pseudo-gradient as one batch of all K batches' molecules. This measures what
local training leaves of the table (``ImprintedNodes``' limits); ``--epoch-table`` crafts the table
built to outlast it (``ImprintedNodes(epoch=True)``), grouped with a loss check that allows the
last layer's drift (``EPOCH_CHECK_TOL``).

This reads the ground truth on purpose to score the reading; it is a diagnostic, not an attack (the
rebuild itself sees only the decoded rows).

    python experiments/imprinted_nodes_decode.py --batch-size 16 --batches 6
    python experiments/imprinted_nodes_decode.py --batch-size 2 --local-steps 4 --batches 2 [--float64] [--epoch-table]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from attacks.grain.attack import GRAIN  # noqa: E402
from attacks.grain.imprinted import MERGED, rebuild, split_union  # noqa: E402
from clients.training import fedavg_weights, mean_gradient  # noqa: E402
from fedgraph_sim.crafting.imprint_reading import EPOCH_CHECK_TOL, group_graphs, read_imprints  # noqa: E402
from fedgraph_sim.crafting.imprinted_nodes import ImprintedNodes, crafted_model, readout_rows  # noqa: E402
from fedgraph_sim.data.loaders import load_dataset  # noqa: E402
from fedgraph_sim.models import build_model  # noqa: E402
from fedgraph_sim.models.presets.grain_gcn import OPTIONS as MODEL  # noqa: E402
from fedgraph_sim.threat import ObservedUpdate  # noqa: E402


def batch_row(dataset, victims, aux, index: int, size: int, tol: float, hint: bool, steps: int = 1,
              lr: float = 0.01, float64: bool = False, weights_reply: bool = False, epoch: bool = False) -> dict:
    """One update's counts (see the module's docstring): a FedSGD batch of ``size``, or with
    ``steps > 1`` a FedAvg epoch of ``steps`` batches of ``size``."""
    torch.manual_seed(index)
    model = build_model(MODEL, dataset.num_features, dataset.num_classes)
    honest = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    crafted, parts = ImprintedNodes(aux, loss="bce", epoch=epoch).craft(honest, MODEL, 1, seed=index)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in parts[0].items()})
    graphs = [dataset[int(i)] for i in victims[index * size * steps:(index + 1) * size * steps]]
    moved = live = None  # a FedSGD gradient moves nothing
    if steps == 1 and not (float64 or weights_reply):
        grads, _ = mean_gradient(model, graphs, "bce")
        update = ObservedUpdate(round=1, client_key=0, global_weights=crafted.base,
                                returned={k: v.double().numpy() for k, v in grads.items()}, kind="gradient",
                                num_examples=size, metrics={}, lr=lr, local_steps=1, batch_size=size,
                                crafted=crafted.for_clients({0: 0}))
    else:  # a client that returns its weights after the epoch
        client = model.double() if float64 else model
        steps_graphs = [g.clone() for g in graphs]
        for g in steps_graphs:
            g.x = g.x.to(next(client.parameters()).dtype)
        weights, _ = fedavg_weights(client, [steps_graphs[k * size:(k + 1) * size] for k in range(steps)], lr,
                                    loss="bce")
        # how far the epoch moved the table (weights, bias) and the summing unit (the readout's second
        # layer, row 0), each in its own norm, and on how many of the batch's nodes that unit is still active
        moved = [float(np.linalg.norm(weights[k].double().numpy()[rows] - crafted.base[k][rows])
                       / np.linalg.norm(crafted.base[k][rows]))
                 for k, rows in (("classifier.0.weight", slice(None)), ("classifier.0.bias", slice(None)),
                                 ("classifier.2.weight", 0), ("classifier.4.weight", slice(None)))]
        after = crafted_model(MODEL, {k: v.numpy() for k, v in weights.items()})
        with torch.no_grad():
            rows = torch.from_numpy(readout_rows(after, graphs))
            live = float((after.classifier[:3](rows)[:, 0] > 0).to(torch.float64).mean())
        update = ObservedUpdate(round=1, client_key=0, global_weights=crafted.base,
                                returned={k: v.numpy() for k, v in weights.items()}, kind="weights",
                                num_examples=size * steps, metrics={}, lr=lr, local_steps=steps, batch_size=size,
                                crafted=crafted.for_clients({0: 0}))
    imprints = read_imprints(update, dataset.schema, tol=tol)
    net = crafted_model(MODEL, parts[0])
    truth = readout_rows(net, graphs)
    owner = np.concatenate([[k] * g.num_nodes for k, g in enumerate(graphs)])
    nearest = []
    for row in imprints.rows.numpy():
        gap = np.abs(truth - row).max(1) / np.abs(truth).max(1)
        nearest.append(int(gap.argmin()) if gap.min() < 1e-3 else None)
    sizes = {g.num_nodes for g in graphs} if hint else None  # the threat's node-count hint
    proposed, _ = group_graphs(imprints, net, "bce", update.num_graphs, range(dataset.num_classes), sizes=sizes,
                               check_tol=EPOCH_CHECK_TOL if epoch else None, merged=MERGED if epoch else 1)
    victims_rows = [sorted(tuple(np.round(t, 5)) for t in truth[owner == k]) for k in range(len(graphs))]
    exact, rebuilt, grouped, merged = 0, 0, set(), 0
    for graph in proposed:  # a shared row's nearest node may be another victim's: compare the rows
        rows = [nearest[i] for i in graph.rows]
        if None in rows:
            continue
        mine = sorted(tuple(np.round(truth[r], 5)) for r, k in zip(rows, graph.copies) for _ in range(k))
        # the victims whose rows these are: one, or the union of graph.graphs of them
        held = next((c for c in itertools.combinations(range(len(graphs)), graph.graphs)
                     if sorted(row for k in c for row in victims_rows[k]) == mine), None)
        if held is None:
            continue
        exact += graph.graphs
        merged += graph.graphs if graph.graphs > 1 else 0
        grouped |= set(held)
        deadline = time.monotonic() + 60.0
        result, _ = rebuild(net, dataset.schema, imprints.rows[graph.rows], graph.copies, GRAIN.Params(),
                            expired=lambda: time.monotonic() > deadline, graphs=graph.graphs)
        pieces = None if result is None or not result.exact else split_union(result.graph, graph.graphs)
        rebuilt += len(pieces or [])
    keys = [tuple(np.round(t, 5)) for t in truth]
    owners: dict[tuple, set] = {}
    for key, k in zip(keys, owner):
        owners.setdefault(key, set()).add(int(k))
    decoded = {keys[r] for r in nearest if r is not None}
    lost_undecoded = lost_shared = 0
    for k in set(range(len(graphs))) - grouped:  # why a graph's rows were not grouped exactly
        mine = {key for key, o in zip(keys, owner) if o == k}
        if mine - decoded:
            lost_undecoded += 1
        elif any(len(owners[key]) > 1 for key in mine):
            lost_shared += 1
    return {"moved": moved, "live": live, "nodes": len(truth), "distinct": len(np.unique(np.round(truth, 5), axis=0)),
            "cells": imprints.cells, "undecoded": imprints.undecoded, "decoded": len(nearest),
            "true": sum(r is not None for r in nearest), "proposed": len(proposed), "exact": exact, "merged": merged,
            "rebuilt": rebuilt, "lost_undecoded": lost_undecoded, "lost_shared": lost_shared}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--tol", type=float, default=1e-2, help="the reader's relative tolerance")
    parser.add_argument("--node-count", action="store_true",
                        help="group with the batch's node counts known (the threat's node_count hint)")
    parser.add_argument("--local-steps", type=int, default=1,
                        help="a FedAvg epoch of this many SGD steps, each on its own batch; weights returned")
    parser.add_argument("--lr", type=float, default=0.01, help="the clients' learning rate")
    parser.add_argument("--float64", action="store_true", help="a float64 client, which returns its weights")
    parser.add_argument("--weights", action="store_true", help="the client returns its weights after one step too")
    parser.add_argument("--epoch-table", action="store_true",
                        help="craft ImprintedNodes(epoch=True), the table that outlasts local steps")
    args = parser.parse_args(argv)
    per_update = args.batch_size * args.local_steps
    if min(args.batch_size, args.batches, args.local_steps) < 1 or per_update * args.batches > 100:
        print("error: --batch-size, --local-steps and --batches must be >= 1 with a product of at most 100 "
              "(GRAIN's 100 Tox21 victims)", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    dataset = load_dataset("Tox21", task="SR-p53", features="grain")
    order = np.random.default_rng(42).permutation(len(dataset))
    victims, aux = order[:100], [dataset[int(i)] for i in order[100:400]]
    print("| batch | moved, each in its norm: table weights, table bias, summing unit, last layer "
          "| nodes the summing unit stays active on | nodes | distinct rows | cells with nodes | left undecoded "
          "| rows decoded (true) "
          "| graphs proposed | victims grouped exactly (in merged groups) | of them rebuilt "
          "| lost: a row undecoded, a shared row |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    total = {"exact": 0, "merged": 0, "true": 0, "distinct": 0, "rebuilt": 0, "lost_undecoded": 0, "lost_shared": 0}
    for b in range(args.batches):
        r = batch_row(dataset, victims, aux, b, args.batch_size, args.tol, args.node_count, args.local_steps,
                      args.lr, args.float64, args.weights, args.epoch_table)
        moved = "-" if r["moved"] is None else ", ".join(f"{m:.3g}" for m in r["moved"])
        live = "-" if r["live"] is None else f"{r['live']:.0%}"
        print(f"| {b} | {moved} | {live} | {r['nodes']} | {r['distinct']} | {r['cells']} | {r['undecoded']} "
              f"| {r['decoded']} ({r['true']}) | {r['proposed']} | {r['exact']} of {per_update} ({r['merged']}) "
              f"| {r['rebuilt']} "
              f"| {r['lost_undecoded']}, {r['lost_shared']} |")
        for k in total:
            total[k] += r[k]
    print(f"\nrows decoded and true: {total['true']} of {total['distinct']} distinct; graphs whose every "
          f"row was grouped exactly: {total['exact']} of {args.batches * per_update} ({total['merged']} in merged "
          f"groups), of them rebuilt exactly (state distance below 1e-3, 60 s each): {total['rebuilt']}; "
          f"lost to an undecoded row: "
          f"{total['lost_undecoded']}, to a row several graphs share: {total['lost_shared']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
