"""The ``glg`` attack (attacks/glg/attack.py): variant by the threat grants, label inference,
its rows' info."""

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import dense_to_sparse

from attacks.base import AttackContext, Budget, build_attack
from clients.training import fedsgd_gradient
from fedgraph_sim.data import make_synthetic
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.metrics.ranking import roc_auc
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate

VICTIM = dict(conv="sage", activation="sigmoid", hidden=100, pool="flatten", flatten_nodes=10)
SCHEMA = make_synthetic(num_graphs=2, seed=0).schema


def case(seed=0, n=10, d=32, label=1):
    gen = torch.Generator().manual_seed(seed)
    upper = torch.triu((torch.rand(n, n, generator=gen) < 0.3).float(), diagonal=1)
    a = upper + upper.t()
    graph = Data(x=torch.randn(n, d, generator=gen), edge_index=dense_to_sparse(a)[0], y=torch.tensor([label]))
    knowledge = AttackerKnowledge(model=VICTIM, num_features=d, num_classes=2, schema=SCHEMA)
    torch.manual_seed(seed)
    model = knowledge.build_model()
    grad, _ = fedsgd_gradient(model, [graph])
    update = ObservedUpdate.fedsgd(model, grad)
    return graph, a, update, knowledge.with_hints(node_counts=[n])


def upper_auc(prob, truth):
    iu = torch.triu_indices(truth.size(0), truth.size(0), offset=1)
    return roc_auc(truth[iu[0], iu[1]].numpy(), prob[iu[0], iu[1]].numpy())


def test_graph_a_when_the_features_are_granted_recovers_the_adjacency_and_infers_the_label():
    graph, a, update, knowledge = case()
    attack = build_attack("glg", {"iterations": 500})
    (rec,) = attack.reconstruct(update, knowledge.with_hints(node_counts=[10], features=[graph.x]),
                                AttackContext(seed=0, budget=Budget(120)))
    assert rec.info["variant"] == "graph_a" and rec.label == 1  # App. B: the negative bias gradient
    assert upper_auc(rec.adj, a) > 0.95
    assert torch.equal(rec.x, graph.x)


def test_graph_c_recovers_both_and_graph_b_keeps_the_granted_adjacency():
    graph, a, update, knowledge = case(seed=1)
    attack = build_attack("glg", {"iterations": 50})
    ctx = AttackContext(seed=0, budget=Budget(60))
    (c,) = attack.reconstruct(update, knowledge, ctx)
    assert c.info["variant"] == "graph_c" and c.x.shape == (10, 32) and c.adj.shape == (10, 10)
    (b,) = attack.reconstruct(update, knowledge.with_hints(node_counts=[10], adjacencies=[a]), ctx)
    assert b.info["variant"] == "graph_b" and torch.equal(b.adj, a)


def test_the_analytic_start_is_reported_always_and_used_only_when_asked():
    graph, a, update, knowledge = case(seed=2)
    granted = knowledge.with_hints(node_counts=[10], features=[graph.x])
    ctx = AttackContext(seed=0, budget=Budget(60))
    (plain,) = build_attack("glg", {"iterations": 1}).reconstruct(update, granted, ctx)
    (started,) = build_attack("glg", {"iterations": 1, "analytic_init": True}).reconstruct(update, granted, ctx)
    assert plain.info["analytic"] == started.info["analytic"] == "prop_6"
    assert plain.info["analytic_gradient_full_row_rank"] and started.info["analytic_start"]
    assert not plain.info["analytic_start"] and upper_auc(plain.adj, a) < 0.9
    assert upper_auc(started.adj, a) == 1.0  # N <= D and N <= F: Prop. 6 is exact


def test_graph_c_with_a_threshold_outputs_app_f_binary_adjacency():
    graph, a, update, knowledge = case(seed=1)
    ctx = AttackContext(seed=0, budget=Budget(60))
    (soft,) = build_attack("glg", {"iterations": 30}).reconstruct(update, knowledge, ctx)
    (hard,) = build_attack("glg", {"iterations": 30, "threshold": 0.5}).reconstruct(update, knowledge, ctx)
    assert set(hard.adj.unique().tolist()) <= {0.0, 1.0} and torch.equal(hard.adj, hard.adj.t())
    assert torch.equal(hard.x, soft.x)  # the same fit, only its output differs
    assert 0 < hard.adj.sum() < 90


def test_batched_graph_b_recovers_every_graphs_features_and_graph_c_refuses_a_batch():
    """The paper's Table 9: one gradient of B graphs, every adjacency granted."""
    graphs, adjs = [], []
    for seed in range(3):
        graph, a, _, _ = case(seed=seed, label=seed % 2)
        graphs.append(graph)
        adjs.append(a)
    knowledge = AttackerKnowledge(model=VICTIM, num_features=32, num_classes=2, schema=SCHEMA)
    torch.manual_seed(0)
    model = knowledge.build_model()
    grad, _ = fedsgd_gradient(model, graphs)
    update = ObservedUpdate.fedsgd(model, grad, 3)
    hints = dict(node_counts=[10] * 3, labels=[0, 1, 0])
    attack = build_attack("glg", {"iterations": 300, "lr": 0.1})
    assert "Graph-a and Graph-b" in attack.not_applicable(update, knowledge.with_hints(**hints))
    batched = knowledge.with_hints(adjacencies=adjs, **hints)
    assert attack.not_applicable(update, batched) is None
    recs = attack.reconstruct(update, batched, AttackContext(seed=0, budget=Budget(120)))
    assert [r.info["variant"] for r in recs] == ["graph_b"] * 3 and [r.label for r in recs] == [0, 1, 0]
    errors = [float(((r.x - g.x).norm(dim=1) / g.x.norm(dim=1)).mean()) for r, g in zip(recs, graphs)]
    assert max(errors) < 0.8, errors  # all-zero features score 1.0, a random N(0, 1) guess about 1.4


def test_with_both_granted_there_is_nothing_to_recover():
    graph, a, update, knowledge = case()
    both = knowledge.with_hints(node_counts=[10], adjacencies=[a], features=[graph.x])
    assert build_attack("glg").not_applicable(update, both) == (
        "both the features and the adjacency are granted: nothing to recover")
    assert build_attack("glg").not_applicable(update, knowledge) is None


@pytest.mark.parametrize("params, key", [({"adjacency_init": "zeros"}, "adjacency_init: unknown 'zeros'"),
                                         ({"adjacency_value": 2.0}, "adjacency_value: must be in \\[0, 1\\]"),
                                         ({"threshold": 1.5}, "threshold: must be in \\[0, 1\\]"),
                                         ({"restarts": 0}, "restarts"), ({"tree_depth": 0}, "tree_depth")])
def test_bad_params(params, key):
    with pytest.raises(ConfigError, match=key):
        build_attack("glg", params)


def node_case(seed=0, n=8, d=16, labelled="all"):
    """A client's subgraph of a node-classification federation, its update as the server sees
    it (with a leaky client's per-node gradients when every node is labelled)."""
    from clients.training import per_node_gradients
    from fedgraph_sim.data import load_dataset

    graph = load_dataset("random_graph_balls", num_subgraphs=2, subgraph_nodes=n, features=d, labelled=labelled,
                         seed=seed)[0]
    model_kwargs = dict(conv="sage", activation="sigmoid", hidden=100, task="node")
    knowledge = AttackerKnowledge(model=model_kwargs, num_features=d, num_classes=2, schema=SCHEMA)
    torch.manual_seed(seed)
    model = knowledge.build_model()
    grad, _ = fedsgd_gradient(model, [graph])
    leaked = per_node_gradients(model, graph) if labelled == "all" else None
    update = ObservedUpdate(round=1, client_key=0, global_weights={k: v.numpy() for k, v in model.state_dict().items()},
                            returned={k: v.numpy() for k, v in grad.items()}, kind="gradient", num_examples=1,
                            metrics={}, lr=0.01, local_steps=1, batch_size=1,
                            per_node=None if leaked is None else {k: v.numpy() for k, v in leaked.items()})
    a = torch.zeros(graph.num_nodes, graph.num_nodes)
    a[graph.edge_index[0], graph.edge_index[1]] = 1
    return graph, a, update, knowledge.with_hints(node_counts=[graph.num_nodes])


def test_node_2a_recovers_the_subgraph_from_per_node_gradients():
    graph, a, update, knowledge = node_case()
    attack = build_attack("glg", {"iterations": 300})
    (rec,) = attack.reconstruct(update, knowledge.with_hints(node_counts=[graph.num_nodes], features=[graph.x]),
                                AttackContext(seed=0, budget=Budget(120)))
    assert rec.info["variant"] == "node_2a" and torch.equal(rec.x, graph.x)
    assert upper_auc(rec.adj, a) > 0.95


def test_node_2b_and_2c_follow_the_grants():
    graph, a, update, knowledge = node_case(seed=1)
    attack = build_attack("glg", {"iterations": 5})
    ctx = AttackContext(seed=0, budget=Budget(60))
    (b,) = attack.reconstruct(update, knowledge.with_hints(node_counts=[graph.num_nodes], adjacencies=[a]), ctx)
    (c,) = attack.reconstruct(update, knowledge, ctx)
    assert b.info["variant"] == "node_2b" and torch.equal(b.adj, a)
    assert c.info["variant"] == "node_2c" and c.x.shape == graph.x.shape


def test_node_1_fits_a_two_level_tree_whose_root_is_the_target():
    graph, _, update, knowledge = node_case(labelled="center")
    assert update.per_node is None
    attack = build_attack("glg", {"iterations": 400, "d_tree": 3})
    (rec,) = attack.reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(120)))
    assert rec.info["variant"] == "node_1" and rec.info["target"] == 0
    assert rec.x.shape == (13, 16) and rec.adj[0].sum() == 3 and rec.adj.sum() == 2 * 12  # 1 + 3 + 9 nodes
    assert rec.label == int(graph.node_y[0])  # App. B on the target's own gradient
    rnmse = ((rec.x[0] - graph.x[0]).norm() / graph.x[0].norm()).item()
    assert rnmse < 0.5  # a N(0, 1) guess scores about sqrt(2)


def test_the_tree_gives_every_node_above_the_last_level_d_children():
    from attacks.glg.node import tree

    assert tree(4, 1).sum(1).tolist() == [4] + [1] * 4  # a star
    two = tree(2, 2)
    assert two.shape == (7, 7) and two.sum(1).tolist() == [2, 3, 3, 1, 1, 1, 1]
    assert torch.equal(two, two.t())


def test_batched_node_1_fits_one_star_per_target_and_the_evaluator_pairs_them():
    """Table 8: the gradient of the mean loss of B labelled nodes; B stars, Hungarian pairing."""
    from fedgraph_sim.evaluation.evaluator import _target
    from fedgraph_sim.metrics import graph_metrics

    graph, _, update, knowledge = node_case(labelled=3)
    attack = build_attack("glg", {"iterations": 400, "d_tree": 4, "tree_depth": 1, "targets": 3})
    (rec,) = attack.reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(120)))
    assert rec.info["variant"] == "node_1" and rec.info["targets"] == [0, 5, 10] and rec.x.shape == (15, 16)
    assert rec.label is None and torch.equal(rec.adj[:5, 5:], torch.zeros(5, 10))  # disjoint stars
    rows = _target(rec, graph)
    assert rows[0] == [0, 5, 10] and rows[1] == graph.train_mask.nonzero().view(-1).tolist()
    score = graph_metrics(rec.x, rec.adj, graph.x, torch.zeros(graph.num_nodes, graph.num_nodes),
                          target=rows)["target_rnmse"]
    assert score < 1.0  # a N(0, 1) guess scores about sqrt(2)


def test_a_fedavg_update_is_not_applicable_unless_the_pseudo_gradient_is_chosen():
    """Two local steps on the graph: paper mode says why not; ``fedavg: pseudo_gradient`` runs
    Graph-a on ``(W_sent - W_back) / (lr K)``, and the closer that is to the gradient (a small
    learning rate), the better the adjacency it recovers."""
    from clients.training import fedavg_weights

    graph, a, _, knowledge = case()
    knowledge = knowledge.with_hints(node_counts=[10], features=[graph.x])
    torch.manual_seed(0)
    model = knowledge.build_model()
    sent = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    new, _ = fedavg_weights(model, [[graph], [graph]], 0.01)
    update = ObservedUpdate(round=1, client_key=0, global_weights=sent, returned={k: v.numpy() for k, v in new.items()},
                            kind="weights", num_examples=1, metrics={}, lr=0.01, local_steps=2, batch_size=1)
    assert "exact gradient" in build_attack("glg", {}).not_applicable(update, knowledge)
    attack = build_attack("glg", {"iterations": 500, "fedavg": "pseudo_gradient"})
    assert attack.not_applicable(update, knowledge) is None
    rec, = attack.reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(60)))
    assert rec.info["variant"] == "graph_a" and upper_auc(rec.adj, a) > 0.9
    with pytest.raises(ConfigError, match="attack.params.glg.fedavg: unknown 'often'; valid: not_applicable"):
        build_attack("glg", {"fedavg": "often"})
