import torch
from torch_geometric.data import Data

from attacks.base import AttackContext, Budget
from attacks.priors import AuxMeanAdjacency, MajorityType, mean_adjacency
from fedgraph_sim.data import single_block_schema
from fedgraph_sim.threat import AttackerKnowledge

PATH3 = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
EDGE2 = torch.tensor([[0, 1], [1, 0]])


def knowledge():
    aux = (Data(x=torch.tensor([[1., 0, 0], [1, 0, 0], [0, 1, 0]]), edge_index=PATH3, num_nodes=3),
           Data(x=torch.tensor([[1., 0, 0], [0, 0, 1]]), edge_index=EDGE2, num_nodes=2))
    return AttackerKnowledge(model={}, num_features=3, num_classes=2,
                             schema=single_block_schema("t", "abc"), aux_graphs=aux).with_hints(node_counts=[4])


def test_mean_adjacency_by_hand():
    expected = torch.tensor([[0, 1.0, 0], [1.0, 0, 0.5], [0, 0.5, 0]])
    assert torch.allclose(mean_adjacency(knowledge()), expected)


def test_aux_mean_adjacency_crops_and_pads_to_n():
    rec, = AuxMeanAdjacency().reconstruct(None, knowledge(), AttackContext(0, Budget(5)))
    assert rec.adj.shape == (4, 4) and rec.adj[3].abs().sum() == 0 and rec.adj[0, 1] == 1.0
    assert torch.allclose(rec.x[0], torch.tensor([3 / 5, 1 / 5, 1 / 5]))


def test_majority_type_gives_every_node_the_most_frequent_type():
    rec, = MajorityType().reconstruct(None, knowledge(), AttackContext(0, Budget(5)))
    assert rec.x.tolist() == [[1.0, 0.0, 0.0]] * 4
    assert rec.adj.abs().sum() == 0
