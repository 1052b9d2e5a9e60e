"""mutag_gin: a Flower ClientApp training PyG's GIN example on its partition of MUTAG.

Plain PyTorch and PyG; ``Federation`` plays the part of a Flower example's
``load_data``: this client's Dirichlet partition and the graphs of each local step of the round,
recorded for the auditor that scores the server's reconstructions. One local step is FedSGD (the
gradient goes back and the server steps); more are FedAvg (the trained weights go back).
"""

from functools import lru_cache
from pathlib import Path

import torch
import torch.nn.functional as F
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from torch_geometric.data import Batch

from fedgraph_sim.runtime import Federation
from gin import Net

app = ClientApp()


@lru_cache(maxsize=1)
def federation(config_file: str) -> Federation:
    return Federation(Path(__file__).parent / config_file)


@app.train()
def train(msg: Message, context: Context) -> Message:
    data = federation(str(context.run_config.get("config-file", "gin.yaml"))).for_message(msg)
    partition_id = int(context.node_config["partition-id"])
    model = Net(in_channels=data.num_features, out_channels=data.num_classes, **data.config.model.args)
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    batches = data.batches(msg, partition_id)
    lr = float(msg.content["config"]["lr"])

    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for graphs in batches:
        batch = Batch.from_data_list(graphs)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(batch.x, batch.edge_index, batch.batch), batch.y)
        loss.backward()
        if len(batches) > 1:
            optimizer.step()

    if len(batches) == 1:  # FedSGD: the gradient
        arrays = ArrayRecord({name: p.grad for name, p in model.named_parameters()})
    else:  # FedAvg: the trained weights
        arrays = ArrayRecord(model.state_dict())
    metrics = MetricRecord({"num-examples": len(batches[0]), "partition-id": partition_id, "loss": loss.item()})
    return Message(RecordDict({"arrays": arrays, "metrics": metrics}), reply_to=msg)
