"""Empirical checks of a DP claim: from guesses about which canaries a training run included, a
lower bound on the epsilon the run can have (:mod:`fedgraph_sim.dp_audit.one_run`)."""

from fedgraph_sim.dp_audit.one_run import Guesses, epsilon_lower_bound, guesses_from_scores, p_value

__all__ = ["Guesses", "epsilon_lower_bound", "guesses_from_scores", "p_value"]
