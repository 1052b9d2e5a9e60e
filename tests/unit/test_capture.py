import numpy as np
import torch
from torch_geometric.data import Data

from fedgraph_sim.audit import AuditRecord, AuditStore
from fedgraph_sim.capture import CaptureStore
from fedgraph_sim.threat import AGGREGATE, ObservedUpdate


def update(round_, client):
    w = {"w": np.full((2, 2), float(client), np.float32)}
    return ObservedUpdate(round=round_, client_key=client, global_weights=w, returned=w, kind="gradient",
                          num_examples=1, metrics={"loss": 0.5}, lr=0.01, local_steps=1, batch_size=1)


def test_captured_updates_read_back_identically(tmp_path):
    from fedgraph_sim.threat import ClientFailure

    store = CaptureStore(tmp_path)
    store.write(2, [update(2, 0), update(2, 1)], [ClientFailure(2, 3, "RuntimeError: boom")])
    store.write(1, [update(1, 0)])
    assert store.rounds() == [1, 2]
    back, failures = store.read(2)
    assert failures == [ClientFailure(2, 3, "RuntimeError: boom")] and store.read(1)[1] == []
    assert [u.client_key for u in back] == [0, 1]
    assert np.array_equal(back[1].returned["w"], update(2, 1).returned["w"])
    assert back[1].gradient["w"].dtype == torch.float64 and back[0].metrics == {"loss": 0.5}


def test_audit_of_the_aggregate_is_the_union_of_the_round(tmp_path):
    audit = AuditStore(tmp_path)
    graphs = [Data(x=torch.ones(2, 1), edge_index=torch.zeros(2, 0, dtype=torch.long), y=torch.tensor([i]),
                   num_nodes=2, graph_id=i) for i in range(12)]
    for client in (10, 2, 0):  # client 10 sorts after 2 numerically, not as text
        audit.write(AuditRecord(1, client, [graphs[client], graphs[client + 1]], 1))
    record = audit.read(1, AGGREGATE)
    assert [int(g.graph_id) for g in record.graphs] == [0, 1, 2, 3, 10, 11]
