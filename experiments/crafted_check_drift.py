"""How far honest training moves each weight's norm from its initialisation, against what a
rescaling server sends: the evidence behind ``crafted_check``'s ``scale`` criterion.

GRAIN's Tox21 victim (the 2-layer GCN of width 300 with the per-node readout, GRAIN's features,
task SR-p53, the first 500 molecules of the seed-42 shuffle, BCE) trained by plain SGD on batches
of ``--batch-size`` molecules at ``--lr``, from a random initialisation (torch seed 0). At each of
``--steps`` it prints, per linear map, its weight norm over its initialisation's root mean square
norm (``r``, the ratio ``crafted_check`` reads, before it folds ``r`` into ``max(r, 1/r)``), and at
the last step the same ratios for the model ``rescaled_layers`` would send instead.

    python experiments/crafted_check_drift.py --steps 50 315 1000 --lr 0.1

315 steps of a batch of 32 is about the honest FedAvg federation of the check's configs (63 rounds
of 5 local steps, 8 clients on batches of 4, averaged).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clients.defenses.crafted_check import init_norms  # noqa: E402
from clients.training import loss_on  # noqa: E402
from fedgraph_sim.crafting.rescaled_layers import SCALE, rescale  # noqa: E402
from fedgraph_sim.data.loaders import load_dataset  # noqa: E402
from fedgraph_sim.models import build_model  # noqa: E402
from fedgraph_sim.models.presets.grain_gcn import OPTIONS as GRAIN_GCN  # noqa: E402


def ratios(model: torch.nn.Module) -> dict[str, float]:
    """Each linear map's weight norm over its initialisation's: ``r`` (not folded)."""
    maps = dict(model.named_modules())
    return {name: float(maps[name].weight.detach().double().norm()) / init
            for name, init in init_norms(model).items() if init > 0}


def measure(steps: list[int], lr: float, batch_size: int) -> list[tuple[str, dict[str, float]]]:
    dataset = load_dataset("Tox21", task="SR-p53", features="grain")
    graphs = [dataset[int(i)] for i in np.random.default_rng(42).permutation(len(dataset))[:500]]
    torch.manual_seed(0)
    model = build_model(GRAIN_GCN, graphs[0].x.size(1), dataset.num_classes)
    optimiser = torch.optim.SGD(model.parameters(), lr=lr)
    order = np.random.default_rng(0)

    def batches():
        """Batches of the molecules, reshuffled every pass, without end."""
        while True:
            perm = order.permutation(len(graphs))
            for k in range(0, len(perm), batch_size):
                yield [graphs[i] for i in perm[k:k + batch_size]]

    rows = [("initialisation", ratios(model))]
    for done, batch in enumerate(batches(), start=1):
        optimiser.zero_grad()
        loss_on(model, batch, "bce").backward()
        optimiser.step()
        if done in steps:
            rows.append((f"honest, {done} steps", ratios(model)))
        if done == max(steps):
            break
    weights = {k: v.numpy() for k, v in model.state_dict().items()}
    crafted = build_model(GRAIN_GCN, graphs[0].x.size(1), dataset.num_classes)
    crafted.load_state_dict({k: torch.from_numpy(v) for k, v in rescale(weights, GRAIN_GCN, SCALE).items()})
    rows.append((f"rescaled_layers of the {done}-step model", ratios(crafted)))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[50, 315, 1000], help="report after these steps")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args(argv)
    if min(args.steps) < 1 or args.batch_size < 1 or not args.lr > 0:
        print("error: --steps and --batch-size must be >= 1 and --lr > 0", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    rows = measure(sorted(set(args.steps)), args.lr, args.batch_size)
    names = list(rows[0][1])
    print(f"SGD lr {args.lr:g}, batches of {args.batch_size}; each map's weight norm over its initialisation's")
    print("| model | " + " | ".join(f"`{n}`" for n in names) + " |")
    print("|---|" + "---|" * len(names))
    for label, entry in rows:
        print(f"| {label} | " + " | ".join(f"{entry[n]:.3f}" for n in names) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
