"""fedgraph_sim.audit: the ground-truth records the evaluator reads."""

from fedgraph_sim.audit import AuditStore
from fedgraph_sim.threat import AGGREGATE


def test_an_aggregate_round_without_records_reads_as_no_graphs(tmp_path):
    """The evaluator then writes no rows and the grants hand over empty lists, rather than crash."""
    record = AuditStore(tmp_path).read(3, AGGREGATE)
    assert (record.round, record.client_key, record.graphs, record.steps) == (3, AGGREGATE, [], 0)
