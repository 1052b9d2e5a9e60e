"""The ``gra_gfa`` attack (attacks/gra_gfa/) on small synthetic graphs."""

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from attacks.base import AttackContext, Budget, build_attack
from attacks.gra_gfa.attack import Embeddings, FinalLayerMatcher
from attacks.gra_gfa.generator import Training, train_generator
from clients.training import fedsgd_gradient
from fedgraph_sim.data import make_synthetic
from fedgraph_sim.data.schema import single_block_schema
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.models import to_dense
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate

DATA = make_synthetic(num_graphs=24, min_nodes=6, max_nodes=8, seed=2)
FAST = {"generator_epochs": 20}


def scenario(graphs=(0,), model=None, aux=True, data=DATA):
    """A FedSGD update on ``graphs`` of ``data`` and what the attacker knows: the node counts and,
    with ``aux``, the other graphs as the auxiliary set."""
    batch = [data.graphs[i] for i in graphs]
    knowledge = AttackerKnowledge(model=model or {}, num_features=data.schema.width, num_classes=2,
                                  schema=data.schema,
                                  aux_graphs=tuple(g for i, g in enumerate(data.graphs)
                                                   if i not in graphs) if aux else (),
                                  aux_scenario="same" if aux else "none")
    torch.manual_seed(0)
    net = knowledge.build_model()
    grad, _ = fedsgd_gradient(net, batch)
    update = ObservedUpdate(round=1, client_key=0, global_weights={k: v.numpy() for k, v in net.state_dict().items()},
                            returned={k: v.numpy() for k, v in grad.items()}, kind="gradient", num_examples=len(batch),
                            metrics={}, lr=0.01, local_steps=1, batch_size=len(batch))
    return update, knowledge.with_hints(node_counts=[g.num_nodes for g in batch])


def ctx(shared=None):
    return AttackContext(seed=0, budget=Budget(120), shared={} if shared is None else shared)


def test_it_returns_a_graph_of_edge_probabilities_one_hot_types_and_the_label():
    update, knowledge = scenario()
    graph = DATA.graphs[0]
    (rec,) = build_attack("gra_gfa", FAST).reconstruct(update, knowledge, ctx())
    n = graph.num_nodes
    assert rec.num_nodes == n and rec.x.shape == (n, DATA.schema.width) and rec.adj.shape == (n, n)
    assert torch.equal(rec.adj, rec.adj.t()) and (rec.adj >= 0).all() and (rec.adj <= 1).all()
    assert rec.adj.diagonal().abs().sum() == 0
    off = rec.adj[~torch.eye(n, dtype=torch.bool)]
    assert ((off > 0) & (off < 1)).all()  # probabilities, not a binary graph
    assert set(rec.x.unique().tolist()) <= {0.0, 1.0} and (rec.x.sum(1) == 1).all()
    assert rec.label == int(graph.y)  # the bias-gradient rule is exact for one graph


@pytest.mark.parametrize("model", [{}, {"hidden": 8},
                                   {"readout_placement": "per_node", "readout_input": "concat_input"},
                                   {"readout": "mlp", "readout_hidden": [6]}])
def test_stage_one_matches_the_final_layers_gradient(model):
    """The distance at the best iterate is far below the N(0, 1) start's, and both numbers are
    what the matcher says of the returned and of a fresh draw of the same seed."""
    update, knowledge = scenario(model=model)
    attack = build_attack("gra_gfa")
    h, label, initial, final = attack.embeddings(update, knowledge, ctx(), ctx().generator())
    net = knowledge.build_model(update.global_weights, dtype=torch.float64)
    assert h.shape == (DATA.graphs[0].num_nodes, net.readout_width)
    assert net.readout_width == (4 + 16 if model.get("readout_input") else model.get("hidden", 16))
    matcher = FinalLayerMatcher(net, update.gradient, label, knowledge.loss)
    start = Embeddings(h.size(0), h.size(1), ctx().generator())
    assert matcher(start.h).item() == pytest.approx(initial)
    assert matcher(h).item() == pytest.approx(final)
    assert final < 1e-2 * initial


def stars(count=40):
    """Star graphs of 3-6 leaves: the hub's type is its structure's to tell, the leaves are the
    majority (82 % of the nodes)."""
    schema = single_block_schema("role", ("leaf", "hub", "unused"))
    graphs = []
    for i in range(count):
        k = 3 + i % 4
        x = torch.zeros(k + 1, 3)
        x[0, 1], x[1:, 0] = 1, 1
        edges = to_undirected(torch.tensor([[0] * k, list(range(1, k + 1))]))
        graphs.append(Data(x=x, edge_index=edges, y=torch.tensor([i % 2]), num_nodes=k + 1, graph_id=i))
    return graphs, schema


def type_accuracy(generator, graphs, schema):
    gen = torch.Generator().manual_seed(1)
    correct = total = 0
    for g in graphs:
        _, adj, _ = to_dense(g)
        pred = generator.predict(adj[0], torch.randn(g.num_nodes, generator.noise_dim, generator=gen))[:, 0]
        correct += int((pred == schema.node_types(g.x)).sum())
        total += g.num_nodes
    return correct / total


def test_the_generator_learns_types_from_structure_on_its_aux_graphs_and_is_trained_once():
    graphs, schema = stars()
    majority = sum(g.num_nodes - 1 for g in graphs) / sum(g.num_nodes for g in graphs)
    knowledge = AttackerKnowledge(model={}, num_features=3, num_classes=2, schema=schema, aux_graphs=tuple(graphs),
                                  aux_scenario="same")
    shared = {}
    attack = build_attack("gra_gfa", {"generator_epochs": 100, "generator_lr": 0.05})
    trained = attack.generator(knowledge, ctx(shared))
    untrained = train_generator(graphs, schema, Training(noise_dim=3, epochs=0), seed=0)
    assert type_accuracy(untrained, graphs, schema) < majority
    assert type_accuracy(trained, graphs, schema) > majority + 0.05
    assert len(shared) == 1 and attack.generator(knowledge, ctx(shared)) is trained


def test_a_second_reconstruction_reuses_the_generator():
    update, knowledge = scenario()
    shared = {}
    attack = build_attack("gra_gfa", FAST)
    (first,) = attack.reconstruct(update, knowledge, ctx(shared))
    (model,) = shared.values()
    (second,) = attack.reconstruct(update, knowledge, ctx(shared))
    assert len(shared) == 1 and next(iter(shared.values())) is model
    assert torch.equal(first.adj, second.adj) and torch.equal(first.x, second.x)  # one seed, one result
    build_attack("gra_gfa", {"generator_epochs": 21}).reconstruct(update, knowledge, ctx(shared))
    assert len(shared) == 2  # other settings, another generator


def test_what_it_needs_is_said():
    update, knowledge = scenario(aux=False)
    assert "auxiliary graphs" in build_attack("gra_gfa").not_applicable(update, knowledge)
    update, knowledge = scenario(graphs=(0, 1))
    assert "needs one graph" in build_attack("gra_gfa").not_applicable(update, knowledge)
    update, knowledge = scenario()
    assert build_attack("gra_gfa").not_applicable(update, knowledge) is None
    assert "node-count" in build_attack("gra_gfa").not_applicable(update, knowledge.with_hints())


@pytest.mark.parametrize("params, key", [({"iterations": 0}, "iterations"), ({"lr": 0}, "lr"),
                                         ({"generator_hidden": 0}, "generator_hidden"),
                                         ({"generator_lr": -1}, "generator_lr"), ({"noise_dim": 0}, "noise_dim"),
                                         ({"noise_dim": 2.5}, "noise_dim"), ({"epochs": 3}, "epochs")])
def test_bad_params(params, key):
    with pytest.raises(ConfigError, match=key):
        build_attack("gra_gfa", params)
