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


def test_aux_sample_draws_an_aux_graph_of_the_closest_size_and_pads_it():
    from attacks.priors import AuxSample

    k = knowledge().with_hints(node_counts=[4, 2])
    big, small = AuxSample().reconstruct(None, k, AttackContext(0, Budget(5)))
    # n = 4: the 3-node path is the closest; its rows and edges, then a majority-type node alone
    assert torch.equal(big.x[:3], k.aux_graphs[0].x) and torch.equal(big.x[3], torch.tensor([1., 0, 0]))
    assert big.adj[0, 1] == big.adj[1, 2] == 1 and big.adj[3].sum() == 0 and big.adj.trace() == 0
    # n = 2: the 2-node graph itself
    assert torch.equal(small.x, k.aux_graphs[1].x) and small.adj[0, 1] == 1


def test_aux_sample_is_fixed_by_the_seed_and_varies_with_it():
    from attacks.priors import AuxSample

    aux = tuple(Data(x=torch.eye(3)[torch.randint(3, (3,), generator=torch.Generator().manual_seed(i))],
                     edge_index=PATH3, num_nodes=3) for i in range(8))
    k = AttackerKnowledge(model={}, num_features=3, num_classes=2, schema=single_block_schema("t", "abc"),
                          aux_graphs=aux).with_hints(node_counts=[3])
    draws = [AuxSample().reconstruct(None, k, AttackContext(seed, Budget(5)))[0].x for seed in range(6)]
    again = AuxSample().reconstruct(None, k, AttackContext(0, Budget(5)))[0].x
    assert torch.equal(draws[0], again)
    assert any(not torch.equal(draws[0], d) for d in draws[1:])
