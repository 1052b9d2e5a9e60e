"""fedgraph_sim.threat.output_problem: what an attack may return, checked before anything is scored;
and which granted hints an attack read."""

import dataclasses
import math
import pickle

import pytest
import torch

from fedgraph_sim.data import load_dataset
from fedgraph_sim.threat import AttackerKnowledge, Reconstruction, output_problem

SCHEMA = load_dataset("synthetic").schema
KNOWLEDGE = AttackerKnowledge(model={}, num_features=3, num_classes=2, schema=SCHEMA)


def _graph(adj_value: float = 0.5, label=1, nodes: int = 3) -> Reconstruction:
    adj = torch.full((nodes, nodes), adj_value).fill_diagonal_(0)
    return Reconstruction(x=torch.zeros(nodes, 3), adj=adj, num_nodes=nodes, label=label)


@pytest.mark.parametrize("label", [None, 0, 1, torch.tensor(1)])
def test_a_batch_of_graphs_of_the_models_width_passes(label):
    assert output_problem([_graph(label=label)], KNOWLEDGE, 1) is None


@pytest.mark.parametrize("recs, message", [
    ([_graph(adj_value=1.5)], "graph 0: edge scores from 0 to 1.5, outside [0, 1]"),
    ([_graph(adj_value=-0.2)], "graph 0: edge scores from -0.2 to 0, outside [0, 1]"),
    ([_graph(label="x")], "graph 0: label 'x' is not a class of the task (0 to 1)"),
    ([_graph(label=2)], "graph 0: label 2 is not a class of the task (0 to 1)"),
    ([_graph(label=True)], "graph 0: label True is not a class of the task (0 to 1)"),
    ([_graph(), _graph()], "returned 2 graphs for a batch of 1"),
])
def test_out_of_range_outputs_are_named(recs, message):
    assert output_problem(recs, KNOWLEDGE, 1) == message


def test_nan_scores_are_left_to_the_nan_status():
    assert output_problem([_graph(adj_value=math.nan)], KNOWLEDGE, 1) is None


def test_a_regression_label_is_a_number():
    regression = AttackerKnowledge(model={}, num_features=3, num_classes=1, schema=SCHEMA,
                                   task_type="regression")
    assert output_problem([_graph(label=0.37)], regression, 1) is None
    assert output_problem([_graph(label="x")], regression, 1) == "graph 0: label 'x' is not a number"


def test_reading_a_granted_hint_is_recorded_and_survives_a_copy_to_a_worker():
    granted = KNOWLEDGE.with_hints(node_counts=[3], labels=[1])
    assert granted.hints_read() == frozenset()
    assert granted.features is None and granted.hints_read() == frozenset()  # not granted: no read
    assert granted.labels == (1,) and granted.hints_read() == {"labels"}
    granted.forget_reads()
    copied = pickle.loads(pickle.dumps(granted))  # as an attack worker receives it
    assert copied.hints_read() == frozenset() and copied.node_counts == (3,)
    assert copied.hints_read() == {"node_counts"} and granted.hints_read() == frozenset()
    with pytest.raises(dataclasses.FrozenInstanceError):
        granted.labels = (0,)
