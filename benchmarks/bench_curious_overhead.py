"""What the curious server costs with its attacks switched off, against a plain Flower FedAvg app.

    python benchmarks/bench_curious_overhead.py [--rounds 50] [key=value ...]

Both federations run the same clients (``federation.num_clients``), model, data partitions,
batches, local steps and rounds through Flower's simulation engine, one after the other in this
process. The plain one is a minimal ServerApp/ClientApp pair written here: Flower's FedAvg, a
client that loads its partition and trains (``clients.training``), nothing else. The bench's own
adds everything a curious round does besides attacking: the observed updates, the defense stack
(empty), the result bookkeeping.

Two comparisons, each plain then bench:

- ``server``: no test split (``data.test_fraction=0``, the default), so neither side evaluates:
  what the curious server itself costs.
- ``utility``: a 20% test split; the plain app evaluates the global model after every round
  through Flower's ``evaluate_fn``, the bench does the same and also trains its centralised
  baseline (the utility reference, as much training per round as all clients together).

Prints wall and CPU seconds (this process and its children, Ray's actors included) and the ratios
bench / plain.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time

from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg
from flwr.simulation import run_simulation

from clients.training import batch_rng, fedavg_weights, fedsgd_gradient, sample_batches
from fedgraph_sim.config import load_config
from fedgraph_sim.models import build_model, evaluate
from fedgraph_sim.runtime.simulation import FLOWER_ENV, run
from fedgraph_sim.scenario import cached_scenario
from server.strategy import initial_arrays


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def plain_federation(config) -> None:
    """Flower's FedAvg and a plain training client on the same scenario."""
    config_json = config.model_dump_json()
    client = ClientApp()

    @client.train()
    def train(msg: Message, context: Context) -> Message:
        pid = int(context.node_config["partition-id"])
        scenario = cached_scenario(config_json)
        ds, t = scenario.dataset, config.train
        model = build_model(config.model, ds.num_features, ds.num_classes)
        model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
        round_ = int(msg.content["config"]["server-round"])
        chosen = sample_batches(scenario.clients[pid], t.batch_size, t.local_steps, batch_rng(config.seed, round_, pid))
        batches = [[ds.graphs[i] for i in b] for b in chosen]
        if t.local_steps == 1:
            update, _ = fedsgd_gradient(model, batches[0], loss=t.loss)
        else:
            update, _ = fedavg_weights(model, batches, t.lr, loss=t.loss)
        return Message(RecordDict({"arrays": ArrayRecord({k: v.contiguous() for k, v in update.items()}),
                                   "metrics": MetricRecord({"num-examples": len(batches[0])})}), reply_to=msg)

    server = ServerApp()

    @server.main()
    def main(grid: Grid, context: Context) -> None:
        scenario = cached_scenario(config_json)
        ds, k = scenario.dataset, config.federation.num_clients
        test = [ds.graphs[i] for i in scenario.test]

        def evaluate_fn(server_round: int, arrays: ArrayRecord) -> MetricRecord | None:
            if not test:
                return None
            model = build_model(config.model, ds.num_features, ds.num_classes)
            model.load_state_dict(arrays.to_torch_state_dict())
            return MetricRecord(evaluate(model, test, config.train.loss))

        FedAvg(fraction_train=1.0, fraction_evaluate=0.0, min_train_nodes=k, min_available_nodes=k).start(
            grid=grid, initial_arrays=initial_arrays(config, ds.num_features, ds.num_classes),
            num_rounds=config.federation.rounds, evaluate_fn=evaluate_fn)

    run_simulation(server_app=server, client_app=client, num_supernodes=config.federation.num_clients,
                   backend_config={"client_resources": {"num_cpus": config.federation.num_cpus, "num_gpus": 0.0},
                                   "init_args": {"log_to_driver": False}})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    for key, value in FLOWER_ENV.items():
        os.environ.setdefault(key, value)
    common = ["data.dataset=MUTAG", "federation.num_clients=10", "train.local_steps=5", "train.batch_size=8",
              "train.lr=0.3", "partition.min_partition_size=4", "attack.names=[]", f"federation.rounds={args.rounds}"]
    ratios = {}
    for comparison, extra in (("server", ["data.test_fraction=0"]), ("utility", ["data.test_fraction=0.2"])):
        with tempfile.TemporaryDirectory() as out:
            config = load_config(None, [*common, *extra, f"output.dir={out}", *args.overrides])
            timings = {}
            for name, go in (("plain", lambda: plain_federation(config)), ("bench", lambda: run(config))):
                wall, cpu = time.perf_counter(), _cpu()
                go()
                timings[name] = (time.perf_counter() - wall, _cpu() - cpu)
                print(f"{comparison:<8} {name:<6} wall {timings[name][0]:7.1f} s   cpu {timings[name][1]:7.1f} s",
                      flush=True)
        ratios[comparison] = [timings["bench"][i] / timings["plain"][i] for i in (0, 1)]
    print(f"({config.federation.num_clients} clients, {args.rounds} rounds, {config.train.local_steps} local steps, "
          f"batch {config.train.batch_size})")
    for comparison, (wall, cpu) in ratios.items():
        print(f"bench / plain, {comparison:<8}: wall {wall:.2f}, cpu {cpu:.2f}")


if __name__ == "__main__":
    main()
