"""DP-SGD's epsilon, replayed without training: what each attacked client's accountant reports by
its attacked rounds, for every DP-SGD federation of a sweep spec (or one run config).

    python experiments/dp_epsilon_replay.py --config experiments/configs/frontier.yaml
    python experiments/dp_epsilon_replay.py --config RUN.yaml [--every-round] [key=value ...]

DP-SGD's accountant (``clients.defenses.dp_sgd``) reads only which graphs each local step's batch
holds, the noise multiplier, the batch size over the partition and ``train.sampling``; never the
weights or the gradients. So this replays, per attacked client and round 1..its last attacked
round, what the client's turn (``clients.turn``) does for the accountant: the same scenario
(``build_sweep``/``load_config`` and ``build_scenario``), the same batches (``round_batches``),
the same ``ClientTurn``, the defense stack's ``begin``/``state`` carried across rounds through
JSON as the node state carries it, and its steps through ``fedsgd_gradient``/``fedavg_weights``
with the real ``gradient_fn``, on a model reset to its initial weights every round (its noisy
updates are thrown away). It assumes every client trains in every round (``fraction_train`` 1;
refused otherwise: Flower's draw of the round's clients is not replayed) and that no turn of an
attacked client fails (a failed turn saves no accountant state).

Prints, per federation and attacked client, epsilon at ``delta`` by each attacked round (or by
every round with ``--every-round``), and the largest over the attacked clients at the last
attacked round: the number a sweep's tables report as the cell's epsilon.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from clients.defenses import ClientTurn, build_defenses
from clients.training import fedavg_weights, fedsgd_gradient, round_batches
from fedgraph_sim.config import RunConfig, load_config
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.models import build_model
from fedgraph_sim.scenario import Scenario, build_scenario
from fedgraph_sim.yaml_files import read_yaml


def attacked_rounds(config: RunConfig) -> list[int]:
    return [r for r in range(1, config.federation.rounds + 1) if config.attack.selects_round(r)]


def attacked_clients(config: RunConfig) -> list[int]:
    return [c for c in range(config.federation.num_clients) if config.attack.selects_client(c)]


def replay_client(config: RunConfig, scenario: Scenario, client: int, last_round: int) -> list[float]:
    """The epsilon the client's DP-SGD reports after each of rounds 1..``last_round``."""
    fed, train = config.federation, config.train
    if fed.sampled_per_round() != fed.num_clients:
        raise ConfigError("federation.fraction_train: the replay assumes every client trains in every round")
    indices = scenario.clients[client]
    ds = scenario.dataset
    model = build_model(config.model, ds.num_features, ds.num_classes)
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    state: dict = {}
    out = []
    for round_ in range(1, last_round + 1):
        model.load_state_dict(initial)
        chosen = round_batches(train.sampling, indices, train.batch_size, train.local_steps, round_, config.seed,
                               client)
        batches = [[ds.graphs[i] for i in b] for b in chosen]
        defenses = build_defenses(config.defenses, config.model.task)
        defenses.begin(ClientTurn(len(indices), train.batch_size, train.local_steps, fed.rounds, train.sampling,
                                  round=round_, sampled_clients=fed.sampled_per_round(),
                                  num_clients=fed.num_clients), state)
        rng = torch.Generator().manual_seed(round_)
        with defenses.training(model, rng):
            gradient_fn = defenses.gradient_fn(rng)
            if train.local_steps == 1:
                fedsgd_gradient(model, batches[0], gradient_fn, train.loss)
            else:
                fedavg_weights(model, batches, train.lr, gradient_fn, train.loss)
        state = json.loads(json.dumps(defenses.state()))  # as clients.turn stores it between rounds
        out.append(float(defenses.report()["epsilon"]))
    return out


def uses_dp_sgd(config: RunConfig) -> bool:
    return any(d.get("name") == "dp_sgd" for d in config.model_dump(mode="json")["defenses"])


def federations(path: Path, overrides: list[str], only: str | None) -> list[tuple[str, RunConfig, Scenario]]:
    """``(label, config, scenario)`` of every DP-SGD federation of a sweep spec, or of one run config."""
    tree = read_yaml(path) or {}
    if "axes" not in tree and "base" not in tree:
        config = load_config(path, overrides)
        return [(config.name, config, build_scenario(config))] if uses_dp_sgd(config) else []
    if overrides:
        raise ConfigError("key=value overrides apply to a run config, not to a sweep spec")
    from fedgraph_sim.runtime.sweeps.spec import build_sweep

    sweep = build_sweep(tree, path.parent)
    out = []
    for fed in sweep.federations:
        label = f"{fed.setting or '-'} | {fed.defense.label}"
        if uses_dp_sgd(fed.config) and (not only or only in label):
            out.append((label, fed.config, build_scenario(fed.config)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help="a sweep spec (its DP-SGD federations) or a run config")
    parser.add_argument("--only", default=None, help="only federations whose 'setting | defense' label contains this")
    parser.add_argument("--every-round", action="store_true", help="print epsilon after every round, not only "
                                                                    "the attacked ones")
    parser.add_argument("overrides", nargs="*", help="dotted key=value overrides (a run config only)")
    args = parser.parse_intermixed_args(argv)
    torch.set_num_threads(1)
    try:
        feds = federations(Path(args.config), args.overrides, args.only)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for label, config, scenario in feds:
        start = time.perf_counter()
        rounds = attacked_rounds(config)
        if not rounds:
            print(f"{label}: no attacked round")
            continue
        shown = range(1, rounds[-1] + 1) if args.every_round else rounds
        train = config.train
        print(f"{label}  (sampling {train.sampling}, batch {train.batch_size}, {train.local_steps} local "
              f"step(s), rounds 1..{rounds[-1]})")
        final = []
        for client in attacked_clients(config):
            eps = replay_client(config, scenario, client, rounds[-1])
            final.append(eps[-1])
            print(f"  client {client} (partition {len(scenario.clients[client])}): "
                  + ", ".join(f"r{r} {eps[r - 1]:.4g}" for r in shown))
        print(f"  epsilon by round {rounds[-1]}, the largest over the attacked clients: {max(final):.4g}"
              f"  [{time.perf_counter() - start:.0f} s]", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
