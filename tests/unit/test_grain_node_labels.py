import dataclasses

import pytest
import torch

from attacks.base import AttackContext, Budget
from attacks.grain import GRAIN
from attacks.grain.node_labels import NodeLabelReader
from attacks.grain.scorer import GradientScorer
from clients.training import mean_gradient
from fedgraph_sim.metrics.gsm import gsm
from fedgraph_sim.models import GraphClassifier
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate
from tests.unit.grain_cases import GCN, dense_adj, molecule

NODE_GCN = {**GCN, "task": "node"}


def node_case(smiles: str, loss: str = "bce", seed: int = 0):
    """A client's FedSGD gradient on ``smiles`` whose every node carries a random one of two classes."""
    g, schema = molecule(smiles)
    g = g.clone()
    g.node_y = torch.randint(2, (g.num_nodes,), generator=torch.Generator().manual_seed(seed))
    g.train_mask = torch.ones(g.num_nodes, dtype=torch.bool)
    torch.manual_seed(seed)
    model = GraphClassifier(140, 2, **NODE_GCN)
    grads, _ = mean_gradient(model, [g], loss)
    update = ObservedUpdate(round=1, client_key=0, global_weights={k: v.detach().numpy().copy()
                                                                  for k, v in model.state_dict().items()},
                            returned={k: v.numpy() for k, v in grads.items()}, kind="gradient",
                            num_examples=1, metrics={}, lr=0.01, local_steps=1, batch_size=1)
    knowledge = AttackerKnowledge(model=NODE_GCN, num_features=140, num_classes=2, schema=schema, loss=loss)
    return g, update, knowledge


@pytest.mark.parametrize("loss", ["bce", "cross_entropy"])
def test_the_true_graphs_node_labels_are_read_from_the_gradient(loss):
    g, update, knowledge = node_case("CC(=O)Oc1ccccc1C(=O)O", loss)
    model = knowledge.build_model(update.global_weights, dtype=torch.float64)
    reader = NodeLabelReader(model, update.gradient, loss)
    x, adj = g.x.to(torch.float64), dense_adj(g).to(torch.float64)
    scores = reader.scores(x, adj)
    assert torch.allclose(scores, torch.nn.functional.one_hot(g.node_y, 2).to(scores.dtype),
                          atol=1e-4)  # a float32 gradient
    assert reader(x, adj).tolist() == g.node_y.tolist()
    counts = tuple(torch.bincount(g.node_y, minlength=2).tolist())
    assert NodeLabelReader(model, update.gradient, loss, counts)(x, adj).tolist() == g.node_y.tolist()


@pytest.mark.parametrize("smiles,seed", [("OCC(O)CO", 0), ("c1ccccc1", 1), ("CC(C)Cc1ccc(cc1)C(C)C(=O)O", 1)])
def test_alike_nodes_take_labels_the_gradient_cannot_tell_apart_and_the_true_graph_stays_exact(smiles, seed):
    """Automorphic nodes have equal Jacobians: only their label counts are in the gradient, and
    any split of them replays it (the minimum-norm read, not a pivoted one, keeps the counts)."""
    g, update, knowledge = node_case(smiles, seed=seed)
    model = knowledge.build_model(update.global_weights, dtype=torch.float64)
    reader = NodeLabelReader(model, update.gradient, "bce")
    scorer = GradientScorer(model, update.gradient, g.x, "bce", 2, node_labels=reader)
    edges = [tuple(e) for e in g.edge_index.T.tolist() if e[0] < e[1]]
    distance, label = scorer.distance(tuple(range(g.num_nodes)), edges)
    assert distance < 1e-6 and label is None
    assert reader(g.x.to(torch.float64), dense_adj(g).to(torch.float64)).sum() == g.node_y.sum()


def test_counts_fix_how_many_nodes_take_each_class_on_a_wrong_candidate():
    g, update, knowledge = node_case("CCN(CC)CC")
    model = knowledge.build_model(update.global_weights, dtype=torch.float64)
    x = g.x.to(torch.float64)
    ring = torch.zeros(g.num_nodes, g.num_nodes, dtype=torch.float64)  # a ring, not the molecule
    for v in range(g.num_nodes):
        ring[v, (v + 1) % g.num_nodes] = ring[(v + 1) % g.num_nodes, v] = 1.0
    counts = (2, g.num_nodes - 2)
    labels = NodeLabelReader(model, update.gradient, "bce", counts)(x, ring)
    assert torch.bincount(labels, minlength=2).tolist() == list(counts)


@pytest.mark.parametrize("hint", [False, True])
def test_grain_reconstructs_a_node_classification_molecule_exactly(hint):
    g, update, knowledge = node_case("CC(=O)Oc1ccccc1C(=O)O")
    if hint:
        knowledge = knowledge.with_hints(node_label_counts=[torch.bincount(g.node_y, minlength=2).tolist()])
    attack = GRAIN()
    assert attack.not_applicable(update, knowledge) is None
    knowledge.forget_reads()
    (rec,) = attack.reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(60)))
    assert rec.info["exact"] == 1 and rec.label is None
    assert gsm(rec.x, rec.adj, g.x, dense_adj(g), knowledge.schema)["full_iso"] == 1.0
    assert ("node_label_counts" in knowledge.hints_read()) == hint


def test_node_classification_takes_one_graphs_gradient_only():
    _, update, knowledge = node_case("CCO")
    batch = dataclasses.replace(update, num_examples=2, batch_size=2)
    reason = GRAIN(batches=True).not_applicable(batch, knowledge)
    assert reason and reason.startswith("node classification: one graph's FedSGD gradient only")
    glg_model = {**knowledge.model}
    assert GRAIN().not_applicable(update, dataclasses.replace(knowledge,
                                                              model={**glg_model, "readout_placement": "after_pool"}))
