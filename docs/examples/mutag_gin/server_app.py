"""mutag_gin: a Flower ServerApp whose FedAvg is watched by the honest-but-curious server.

The app is Flower's own (a ``ServerApp``, a ``FedAvg``, ``strategy.start``); the one line that
is fedgraph_sim's is ``curious(...)``, which aggregates as FedAvg does while it
attacks every reply, and writes the run directory ``fedgraph-sim run`` writes.
"""

from pathlib import Path

import torch
from flwr.app import ArrayRecord, Context
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

from fedgraph_sim.runtime import Federation, curious
from gin import Net

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    config = Path(__file__).parent / str(context.run_config.get("config-file", "gin.yaml"))
    federation = Federation(config)
    num_clients = federation.config.federation.num_clients
    strategy = curious(
        FedAvg(fraction_evaluate=0.0, min_train_nodes=num_clients, min_available_nodes=num_clients),
        config=config)

    torch.manual_seed(federation.config.seed)
    model = Net(in_channels=federation.num_features, out_channels=federation.num_classes,
                **federation.config.model.args)
    strategy.start(grid=grid, initial_arrays=ArrayRecord(model.state_dict()),
                   num_rounds=federation.config.federation.rounds)
