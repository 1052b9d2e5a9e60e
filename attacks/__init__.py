"""Gradient-inversion attacks, one module each, declared by ``@register`` on the class
(``fedgraph_sim.registry`` reads the modules' source for the names and imports an attack's module
when it is first looked up).

Attacks import ``fedgraph_sim`` only, and of it neither the ground truth (``fedgraph_sim.audit``,
the evaluation), nor the data loaders (``fedgraph_sim.data`` but its ``schema``), nor the scenario;
never ``clients``: they see what the server sees (tests/unit/test_threat_boundary.py).
"""

from attacks.base import (Attack, AttackContext, AttackFailed, AttackTimeout, Budget, ContractCase, Reconstruction,
                          Requirements, build_attack, register)

__all__ = ["Attack", "AttackContext", "AttackFailed", "AttackTimeout", "Budget", "ContractCase", "Reconstruction",
           "Requirements", "build_attack", "register"]
