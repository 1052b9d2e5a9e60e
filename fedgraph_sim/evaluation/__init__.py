"""Evaluation, apart from the server: the threat grants read from the audit, scoring outcomes
against the ground truth with the priors beside them into result rows
(:class:`~fedgraph_sim.rows.record.ResultRow`), and drawings.

The server's attack runner only selects updates, runs the attacks, times them and records their
status (:class:`~fedgraph_sim.threat.AttackOutcome`); the runtime hands each outcome to an
:class:`Evaluator`. Attacks never import this package (it opens the audit store).
"""

from fedgraph_sim.evaluation.drawings import DrawingStore
from fedgraph_sim.evaluation.evaluator import Evaluator, Prior
from fedgraph_sim.evaluation.grants import ThreatGrants

__all__ = ["DrawingStore", "Evaluator", "Prior", "ThreatGrants"]
