"""attacks/ sees only what the server sees: no import of clients/, the audit store or the
evaluator that reads it."""

import ast
from pathlib import Path

import attacks
from attacks.base import Attack, AttackContext, Requirements

FORBIDDEN = ("clients", "fedgraph_sim.audit", "fedgraph_sim.evaluation", "server")
ATTACKS_DIR = Path(attacks.__file__).parent


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def violations(directory: Path) -> list[str]:
    found = []
    for path in sorted(directory.rglob("*.py")):
        for name in imported_modules(path):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN):
                found.append(f"{path.relative_to(directory)} imports {name}")
    return found


def test_attacks_import_neither_clients_nor_audit():
    assert list(ATTACKS_DIR.rglob("*.py")), "no attack sources found"
    assert violations(ATTACKS_DIR) == []


def test_the_check_catches_a_forbidden_import(tmp_path):
    (tmp_path / "bad.py").write_text("from fedgraph_sim.audit import AuditStore\nimport clients.turn\n")
    (tmp_path / "sly.py").write_text("from fedgraph_sim import audit\n")
    (tmp_path / "good.py").write_text("from fedgraph_sim.threat import ObservedUpdate\n")
    assert set(violations(tmp_path)) == {"bad.py imports fedgraph_sim.audit",
                                         "bad.py imports fedgraph_sim.audit.AuditStore",
                                         "bad.py imports clients.turn",
                                         "sly.py imports fedgraph_sim.audit"}


class Spy(Attack):
    name = "spy"
    paper = "test double"
    requires = Requirements()
    seen: list = []

    def reconstruct(self, update, knowledge, ctx: AttackContext):
        Spy.seen.append((update, knowledge, ctx))
        return []


def test_an_attack_receives_no_ground_truth(tmp_path):
    """The runner hands attacks the update, the knowledge and a context: no audit record, and
    auxiliary graphs that are disjoint from every client's partition."""
    from tests.unit.test_attack_runner import make_runner

    runner, update, scenario = make_runner(tmp_path, {"spy": Spy()})
    runner([update])
    (seen_update, knowledge, ctx), = Spy.seen
    assert type(seen_update).__name__ == "ObservedUpdate" and seen_update is not update  # a copy
    assert (seen_update.round, seen_update.client_key) == (update.round, update.client_key)
    assert type(knowledge).__name__ == "AttackerKnowledge"
    assert set(vars(ctx)) == {"seed", "budget", "progress", "shared", "stream", "last_checkpoint", "fits"}
    assert ctx.shared == {} and ctx.fits == {}  # the attacks' own stores: the runner puts nothing in them
    aux_ids = {int(g.graph_id) for g in knowledge.aux_graphs}
    client_ids = {int(scenario.dataset.graphs[i].graph_id) for part in scenario.clients for i in part}
    assert aux_ids and not aux_ids & client_ids
    assert knowledge.labels is None  # not granted by default
    assert knowledge.node_counts is not None  # granted by default (threat.node_count)
