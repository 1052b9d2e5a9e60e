"""Why GRAIN misses a FedAvg epoch: the client's float32 weights round the update below the span
checks' reach.

For ``--updates`` groups of ``--steps x --batch-size`` Tox21 molecules (GRAIN's Table 2 victims:
the first 100 of a seed-42 shuffle, task SR-p53) and GRAIN's victim model at a random
initialisation, it compares three views of the same molecules: the FedSGD gradient of all of them
as one batch, the pseudo-gradient of an epoch of ``--steps`` SGD steps on ``--batch-size``
molecules each as a float32 client returns it, and the same epoch trained in float64 (no rounding,
the drift of local training only). For each of GRAIN's three span checks it prints the rank GRAIN
counts (above the rounding's floor for the float32 epoch, ``attacks/grain/local_training.py``) and
how many of the true rows the check loses (distance at or above GRAIN's threshold). A lost true
1-hop or 2-hop row is a block the search can never start from or glue.

This reads the ground truth on purpose: it measures a mechanism, it is not an attack.

    python experiments/grain_epoch_rounding.py --updates 10 --lr 0.01 0.1

``--scale s`` adds the same views of the model a malicious server sends instead
(``rescaled_layers``: the same function, the checked layers scaled by ``s``), whose rows are
that model's.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attacks.grain.embed import check_input, checked_weights  # noqa: E402
from attacks.grain.local_training import LocalTraining  # noqa: E402
from attacks.grain.spancheck import RowSpace  # noqa: E402
from clients.training import fedavg_weights, mean_gradient  # noqa: E402
from fedgraph_sim.crafting.rescaled_layers import rescale  # noqa: E402
from fedgraph_sim.data.loaders import load_dataset  # noqa: E402
from fedgraph_sim.models import GraphClassifier  # noqa: E402
from fedgraph_sim.models.presets.grain_gcn import OPTIONS as GRAIN_GCN  # noqa: E402
from fedgraph_sim.threat import ObservedUpdate  # noqa: E402

#: GRAIN's victim (Table 2), the preset the reproduction configs build (``model.preset: grain_gcn``)
MODEL = GRAIN_GCN
TOLERANCES = (1e-7, 1e-7, 1e-8)  # the official rank tolerances
THRESHOLDS = (1e-3, 1e-2, 1e-2)  # the official residual thresholds: nodes, 1-hop, 2-hop


def true_rows(model: GraphClassifier, graphs) -> list[torch.Tensor]:
    """The rows each check reads for the true graphs: node features, 1-hop states, 2-hop input."""
    from torch_geometric.data import Batch
    batch = Batch.from_data_list(graphs)
    x = batch.x.double()
    with torch.no_grad():
        h1 = model.acts[0](model.convs[0](x, batch.edge_index))
        h2 = model.acts[1](model.convs[1](h1, batch.edge_index))
    return [x, h1, check_input(model, x, h2)]


def views(model: GraphClassifier, graphs, steps: int, size: int, lr: float) -> dict[str, list[RowSpace]]:
    """The three views' row spaces at each checked weight, as GRAIN builds them."""
    names = checked_weights(model)
    order = [n for n, _ in model.named_parameters()]
    sent = {k: v.detach().clone() for k, v in model.state_dict().items()}
    batches = [graphs[i * size:(i + 1) * size] for i in range(steps)]
    grad, _ = mean_gradient(model, graphs, "bce")
    returned, _ = fedavg_weights(copy.deepcopy(model), batches, lr, loss="bce")
    update = ObservedUpdate(round=1, client_key=0, global_weights={k: v.numpy() for k, v in sent.items()},
                            returned={k: v.numpy() for k, v in returned.items()}, kind="weights",
                            num_examples=len(graphs), metrics={}, lr=lr, local_steps=steps, batch_size=size)
    training = LocalTraining.of(update)
    wide = copy.deepcopy(model).double()
    wide_graphs = [g.clone() for g in graphs]
    for g in wide_graphs:
        g.x = g.x.double()
    exact, _ = fedavg_weights(wide, [wide_graphs[i * size:(i + 1) * size] for i in range(steps)], lr, loss="bce")
    out = {"FedSGD batch": [], "epoch, float32 client": [], "epoch, float64 client": []}
    for name, tol in zip(names, TOLERANCES):
        drift = training.drift(name, order)
        out["FedSGD batch"].append(RowSpace(grad[name], tol))
        out["epoch, float32 client"].append(
            RowSpace(torch.as_tensor(update.gradient[name]), tol, training.noise.get(name, 0.0), drift))
        out["epoch, float64 client"].append(
            RowSpace((sent[name].double() - exact[name]) / (lr * steps), tol, 0.0, drift))
    return out


def measure(dataset, victims: np.ndarray, updates: int, steps: int, size: int, lr: float,
            scale: float | None = None) -> dict[str, dict]:
    """Per view: the median rank of each check, the true rows each loses, and the rows checked;
    with ``scale``, the same views of the model a malicious server sends (``rescaled_layers``)."""
    per_update = steps * size
    out: dict[str, dict] = {}
    for u in range(updates):
        graphs = [dataset.graphs[int(i)] for i in victims[u * per_update:(u + 1) * per_update]]
        torch.manual_seed(u)
        model = GraphClassifier(graphs[0].x.size(1), dataset.num_classes, **MODEL)
        served = [("", model)]
        if scale is not None:  # what a malicious server sends instead: the same function, rescaled
            crafted = copy.deepcopy(model)
            weights = rescale({k: v.numpy() for k, v in model.state_dict().items()}, MODEL, scale)
            crafted.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()})
            served.append((f", rescaled_layers {scale:g}", crafted))
        for suffix, sent in served:
            rows = true_rows(copy.deepcopy(sent).double(), graphs)  # the rows of the model the client trained
            for view, checks in views(sent, graphs, steps, size, lr).items():
                entry = out.setdefault(view + suffix, {"ranks": [], "lost": np.zeros(3, int), "rows": 0})
                entry["ranks"].append([s.rank for s in checks])
                entry["lost"] += [int((s.distance(r) >= tau).sum()) for s, r, tau in zip(checks, rows, THRESHOLDS)]
                entry["rows"] += rows[0].size(0)
    for entry in out.values():
        entry["ranks"] = np.median(np.array(entry["ranks"]), axis=0).astype(int).tolist()
        entry["lost"] = entry["lost"].tolist()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--updates", type=int, default=10, help="groups of molecules (one client update each)")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--lr", type=float, nargs="+", default=[0.01])
    parser.add_argument("--scale", type=float, default=None,
                        help="also the views of the model rescaled_layers sends at this scale (a malicious server)")
    args = parser.parse_args(argv)
    if args.scale is not None and not args.scale > 0:
        print(f"error: --scale must be > 0 (got {args.scale:g}); the factor of the rescaled layers", file=sys.stderr)
        return 2
    if min(args.updates, args.steps, args.batch_size) < 1 or args.updates * args.steps * args.batch_size > 100:
        print("error: --updates, --steps and --batch-size must be >= 1 with a product of at most 100 "
              "(GRAIN's 100 Tox21 victims)", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    dataset = load_dataset("Tox21", task="SR-p53", features="grain")
    victims = np.random.default_rng(42).permutation(len(dataset))[:100]
    print(f"{args.updates} updates of {args.steps} steps x {args.batch_size} molecules; GRAIN's victim, "
          "random initialisation (torch seed = update index)")
    print("| lr | view | rank (nodes, 1-hop, 2-hop), median | true rows lost (nodes, 1-hop, 2-hop) | rows |")
    print("|---|---|---|---|---|")
    for lr in args.lr:
        for view, entry in measure(dataset, victims, args.updates, args.steps, args.batch_size, lr,
                                   args.scale).items():
            print(f"| {lr:g} | {view} | {', '.join(map(str, entry['ranks']))} | "
                  f"{', '.join(map(str, entry['lost']))} | {entry['rows']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
