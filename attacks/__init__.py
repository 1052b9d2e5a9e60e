"""Gradient-inversion attacks. Importing this package registers every attack by name.

Attacks import ``fedgraph_sim`` only, and of it neither the ground truth (``fedgraph_sim.audit``,
the evaluation), nor the data loaders (``fedgraph_sim.data`` but its ``schema``), nor the scenario;
never ``clients``: they see what the server sees (tests/unit/test_threat_boundary.py).
"""

from attacks import (dlg, fedgig, gi_gan, glg, gra_gfa, grain, graphdlg, idlg,  # noqa: F401
                     inverting_gradients, priors, random_guess, tableak)
from attacks.base import (Attack, AttackContext, AttackFailed, AttackTimeout, Budget, Reconstruction,
                          Requirements, build_attack, register)

__all__ = ["Attack", "AttackContext", "AttackFailed", "AttackTimeout", "Budget", "Reconstruction",
           "Requirements", "build_attack", "register"]
