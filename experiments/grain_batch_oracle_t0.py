"""Where GRAIN stops on a FedSGD batch of Tox21 molecules once its node types are known: the batch's
gradient read with T0 replaced by the batch's true node types.

For ``--updates`` batches of ``--batch-size`` of GRAIN's Table 2 victims (the first 100 of a
seed-42 shuffle of Tox21, task SR-p53, GRAIN's features) and GRAIN's victim at a random
initialisation (torch seed = the batch's index), it runs GRAIN with the [ext] ``batches`` option
on the batch's FedSGD gradient, its first stage (T0, the node types) given the true types, and
prints the stages' counts and how many members came back exact. Read beside the same batches'
rows in the results (T0 from the span checks: thousands of types), it tells whether the 1-hop
enumeration over T0 is what stops the attack.

This reads the ground truth on purpose: it tests a hypothesis about a mechanism, it is not an attack.

    python experiments/grain_batch_oracle_t0.py --updates 2 --batch-size 16 --budget 900
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import attacks.grain.attack as grain_attack  # noqa: E402
from attacks.base import AttackContext, AttackStopped, Budget  # noqa: E402
from attacks.grain.nodes import NodeProposal  # noqa: E402
from clients.training import mean_gradient  # noqa: E402
from fedgraph_sim.data.loaders import load_dataset  # noqa: E402
from fedgraph_sim.models import GraphClassifier  # noqa: E402
from fedgraph_sim.models.presets.grain_gcn import OPTIONS as GRAIN_GCN  # noqa: E402
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate  # noqa: E402

#: GRAIN's victim (Table 2), the preset the reproduction configs build (``model.preset: grain_gcn``)
MODEL = GRAIN_GCN
STAGES = ("rank_1", "rank_2", "rank_3", "t0_nodes", "one_hop_candidates", "one_hop_kept", "two_hop_candidates",
          "two_hop_kept", "two_hop_weighed", "seconds_one_hop", "seconds_dfs", "found")


def attack_with_true_types(dataset, graphs, seed: int, budget: float) -> dict:
    """GRAIN's reading of the batch's gradient, T0 given: the stages' counts and the exact members."""
    torch.manual_seed(seed)
    model = GraphClassifier(graphs[0].x.size(1), dataset.num_classes, **MODEL)
    grads, _ = mean_gradient(model, graphs, "bce")
    update = ObservedUpdate(round=1, client_key=0,
                            global_weights={k: v.detach().numpy().copy() for k, v in model.state_dict().items()},
                            returned={k: v.numpy() for k, v in grads.items()}, kind="gradient",
                            num_examples=len(graphs), metrics={}, lr=0.01, local_steps=1, batch_size=len(graphs))
    knowledge = AttackerKnowledge(model=MODEL, num_features=graphs[0].x.size(1), num_classes=dataset.num_classes,
                                  schema=dataset.schema, loss="bce")
    schema = dataset.schema
    types = torch.unique(schema.decode(torch.cat([g.x for g in graphs])), dim=0)
    given = NodeProposal(types, schema.encode(types).to(torch.float64), 0)
    real = grain_attack.propose_nodes
    grain_attack.propose_nodes = lambda *args, **kwargs: given
    start = time.perf_counter()
    try:
        recs = grain_attack.GRAIN(batches=True).reconstruct(update, knowledge,
                                                             AttackContext(seed=0, budget=Budget(budget)))
        info, exact = recs[0].info, sum(int(r.info.get("exact", 0)) for r in recs)
    except AttackStopped as exc:
        info, exact = {**exc.info, "found": f"{type(exc).__name__}: {exc}"}, 0
    finally:
        grain_attack.propose_nodes = real
    return {"atoms": sum(g.num_nodes for g in graphs), "types": types.size(0), "exact": exact,
            "seconds": round(time.perf_counter() - start), **{k: info.get(k, "") for k in STAGES}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--updates", type=int, default=2, help="batches (one FedSGD gradient each)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--budget", type=float, default=900.0, help="seconds per batch")
    args = parser.parse_args(argv)
    if min(args.updates, args.batch_size) < 1 or args.updates * args.batch_size > 100 or args.budget <= 0:
        print("error: --updates and --batch-size must be >= 1 with a product of at most 100 (GRAIN's 100 "
              "Tox21 victims), --budget > 0", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    dataset = load_dataset("Tox21", task="SR-p53", features="grain")
    victims = np.random.default_rng(42).permutation(len(dataset))[:100]
    print(f"| batch | atoms | true types | exact of {args.batch_size} | seconds | " + " | ".join(STAGES) + " |")
    print("|---" * (5 + len(STAGES)) + "|")
    for u in range(args.updates):
        graphs = [dataset.graphs[int(i)] for i in victims[u * args.batch_size:(u + 1) * args.batch_size]]
        row = attack_with_true_types(dataset, graphs, u, args.budget)
        print(f"| {u} | {row['atoms']} | {row['types']} | {row['exact']} | {row['seconds']} | "
              + " | ".join(str(row[k]) for k in STAGES) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
