"""attacks/ sees only what the server sees: neither it nor anything it imports inside the project
reaches the clients, the ground truth (the audit store and the evaluation that reads it), the data
loaders or the scenario that says which graphs each client holds.

Two checks: a static one follows every import statement (function-local ones too) from every file
under attacks/ through the project's modules, and refuses dynamic imports in attacks/, which it
cannot follow; a runtime one imports every attack module in a fresh interpreter and reads
``sys.modules`` (what package inits load as well)."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import attacks
from attacks.base import Attack, AttackContext, Requirements

ROOT = Path(__file__).resolve().parents[2]
ATTACKS_DIR = Path(attacks.__file__).parent
PROJECT = ("attacks", "clients", "server", "fedgraph_sim", "experiments")  # the top-level packages

FORBIDDEN = (
    "clients",  # the clients' turn: their partitions, training and defenses
    "server",  # the curious strategy and the attack runner, which call the attacks
    "fedgraph_sim.audit",  # the ground truth
    "fedgraph_sim.evaluation",  # scores against the ground truth: the only reader of the audit store
    "fedgraph_sim.rows",  # result rows, scored against the ground truth
    "fedgraph_sim.report",  # reads the result rows
    "fedgraph_sim.scenario",  # the case under audit: which graphs each client holds, the held-out set
    # The data package reads datasets (tu, moleculenet; dataset, the container they fill), the
    # data root and the cache (store), generates them (synthetic, random_graphs: the same seed gives
    # the client's very graphs), splits them among the clients (partition), builds the auxiliary
    # set (auxiliary), names them (loaders), reorders their nodes (order: its seeded permutation is
    # the node order the attacker must not get for free) and featurises them (degree,
    # grain_features: the schema they produce reaches the attacker through its knowledge, the
    # modules are not needed). All of it is forbidden, a module added later too, except ALLOWED.
    "fedgraph_sim.data",
    "fedgraph_sim.runtime",  # the composition root: imports all of the above
    "experiments",
)
# What the attacks may import from a forbidden package: descriptions the threat model grants that
# load nothing. Import them by their full name (``from fedgraph_sim.data.schema import ...``): the
# package itself is forbidden, since its lazy ``__getattr__`` hands out every loader.
ALLOWED = (
    # FeatureSchema, the type of AttackerKnowledge.schema (blocks, value sets, degree block,
    # standardisation statistics): a frozen dataclass that imports torch only.
    "fedgraph_sim.data.schema",
)


def _within(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def forbidden(name: str) -> bool:
    """Whether importing ``name`` (a module or a name imported from one) crosses the boundary."""
    return _within(name, FORBIDDEN) and not _within(name, ALLOWED)


def module_name(path: Path, root: Path) -> str | None:
    """``fedgraph_sim/data/schema.py`` -> ``fedgraph_sim.data.schema`` (None outside ``root``)."""
    try:
        parts = list(path.relative_to(root).with_suffix("").parts)
    except ValueError:
        return None
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """What the import statements of ``path`` name, function-local ones included: modules, and
    ``module.name`` for each ``from module import name``; relative imports resolved when ``path``
    lies under ``root``."""
    module = module_name(path, root)
    package = None if module is None else (module if path.name == "__init__.py" else module.rpartition(".")[0])
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module
            if node.level:
                if package is None:
                    continue
                parts = package.split(".")
                anchor = ".".join(parts[:len(parts) - node.level + 1])
                base = f"{anchor}.{node.module}" if node.module else anchor
            if base:
                names.add(base)
                names.update(f"{base}.{a.name}" for a in node.names)
    return names


def source_of(name: str, root: Path) -> Path | None:
    """The project file that defines module ``name`` (or the longest module prefix of a name
    imported from one), None outside the project."""
    parts = name.split(".")
    if parts[0] not in PROJECT:
        return None
    for end in range(len(parts), 0, -1):
        base = root.joinpath(*parts[:end])
        for candidate in (base / "__init__.py", base.with_suffix(".py")):
            if candidate.is_file():
                return candidate
    return None


def with_packages(path: Path, root: Path) -> list[Path]:
    """``path`` and the ``__init__.py`` of every package above it: importing a module runs them."""
    files = [path]
    for parent in path.parents:
        if parent == root or root not in parent.parents:
            break
        if (parent / "__init__.py").is_file():
            files.append(parent / "__init__.py")
    return files


def dynamic_imports(path: Path) -> list[str]:
    """Imports no static check can follow: ``importlib`` and ``__import__``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__":
            found.append("__import__")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [n for n in names if n == "importlib" or n.startswith("importlib.")]
    return found


def violations(directory: Path, root: Path = ROOT) -> list[str]:
    """Every forbidden import reachable from the files under ``directory``, with the chain of
    project modules that leads to it, and every dynamic import in those files."""
    chain: dict[Path, str] = {}
    todo = []
    found = set()
    for path in sorted(directory.rglob("*.py")):
        found.update(f"{path.relative_to(root)} uses {name} (a dynamic import: import modules by name)"
                     for name in dynamic_imports(path))
        for file in with_packages(path, root):
            if file not in chain:
                chain[file] = str(file.relative_to(root))
                todo.append(file)
    while todo:
        path = todo.pop()
        for name in sorted(imported_modules(path, root)):
            if forbidden(name):
                found.add(f"{chain[path]} imports {name}")
                continue
            source = source_of(name, root)
            if source is None:
                continue
            for file in with_packages(source, root):
                if file not in chain:
                    chain[file] = f"{chain[path]} -> {module_name(file, root)}"
                    todo.append(file)
    return sorted(found)


PROBE = """
import importlib, json, pkgutil, sys
import attacks
for info in pkgutil.walk_packages(attacks.__path__, "attacks."):
    importlib.import_module(info.name)
print(json.dumps(sorted(sys.modules)))
"""


def loaded_modules(root: Path = ROOT) -> list[str]:
    """The modules a fresh interpreter holds after importing ``attacks`` and every module under it
    from ``root``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=root, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.splitlines()[-1])


def loaded_violations(modules) -> list[str]:
    """The forbidden ones among ``modules``; the packages above an allowed module are loaded with it
    (the static check reads what their inits import)."""
    above_allowed = {a.rsplit(".", k)[0] for a in ALLOWED for k in range(1, a.count(".") + 1)}
    return sorted(m for m in modules if forbidden(m) and m not in above_allowed)


def test_attacks_reach_no_forbidden_module_through_any_import():
    assert len(list(ATTACKS_DIR.rglob("*.py"))) > 20, "no attack sources found"
    assert violations(ATTACKS_DIR) == []


def test_importing_every_attack_module_loads_no_forbidden_module():
    modules = loaded_modules()
    assert "attacks.grain.attack" in modules and "fedgraph_sim.threat" in modules
    assert "fedgraph_sim.data.schema" in modules  # the allowed module is loaded...
    assert loaded_violations(modules) == []  # ...and no loader with it


def test_every_allowed_module_exists_and_is_inside_a_forbidden_package():
    for name in ALLOWED:
        assert source_of(name, ROOT) is not None and _within(name, FORBIDDEN), name


def test_the_check_catches_a_forbidden_import(tmp_path):
    (tmp_path / "bad.py").write_text("from fedgraph_sim.audit import AuditStore\nimport clients.turn\n")
    (tmp_path / "sly.py").write_text("from fedgraph_sim import audit\n")
    (tmp_path / "late.py").write_text("def f():\n    from fedgraph_sim.scenario import build_scenario\n")
    (tmp_path / "loader.py").write_text("from fedgraph_sim.data import load_dataset, schema\n"
                                        "import fedgraph_sim.data.tu\n")
    (tmp_path / "dynamic.py").write_text("import importlib\nmodule = __import__('fedgraph_sim.audit')\n")
    (tmp_path / "good.py").write_text("from fedgraph_sim.threat import ObservedUpdate\n"
                                      "from fedgraph_sim.data.schema import FeatureSchema\n")
    found = set(violations(tmp_path, tmp_path))
    assert found == {"dynamic.py uses importlib (a dynamic import: import modules by name)",
                     "dynamic.py uses __import__ (a dynamic import: import modules by name)",
                     "bad.py imports fedgraph_sim.audit", "bad.py imports fedgraph_sim.audit.AuditStore",
                     "bad.py imports clients.turn", "sly.py imports fedgraph_sim.audit",
                     "late.py imports fedgraph_sim.scenario", "late.py imports fedgraph_sim.scenario.build_scenario",
                     "loader.py imports fedgraph_sim.data", "loader.py imports fedgraph_sim.data.load_dataset",
                     "loader.py imports fedgraph_sim.data.tu"}


def test_the_check_follows_imports_through_allowed_modules(tmp_path):
    """An attack importing a core module that imports a loader (locally, relatively, or in the
    init of a package above it) is caught, with the chain that leads there."""
    core = tmp_path / "fedgraph_sim"
    (core / "metrics").mkdir(parents=True)
    (tmp_path / "attacks").mkdir()
    (core / "__init__.py").write_text("")
    (core / "threat.py").write_text("from fedgraph_sim.metrics import helper\n")
    (core / "metrics" / "__init__.py").write_text("from .. import scenario\n")
    (core / "metrics" / "helper.py").write_text("def f():\n"
                                                "    from fedgraph_sim.data.partition import dirichlet_partition\n")
    (tmp_path / "attacks" / "__init__.py").write_text("")
    (tmp_path / "attacks" / "x.py").write_text("from fedgraph_sim.threat import ObservedUpdate\n")
    found = violations(tmp_path / "attacks", tmp_path)
    assert "attacks/x.py -> fedgraph_sim.threat -> fedgraph_sim.metrics imports fedgraph_sim.scenario" in found
    assert ("attacks/x.py -> fedgraph_sim.threat -> fedgraph_sim.metrics.helper imports fedgraph_sim.data.partition"
            in found)
    assert not any(" -> fedgraph_sim imports" in f or "threat imports" in f for f in found)


def test_the_runtime_check_flags_loaded_loaders_but_not_the_schemas_package():
    loaded = ["attacks.dlg", "fedgraph_sim", "fedgraph_sim.data", "fedgraph_sim.data.schema", "fedgraph_sim.threat",
              "fedgraph_sim.data.tu", "fedgraph_sim.scenario", "clients.turn", "numpy"]
    assert loaded_violations(loaded) == ["clients.turn", "fedgraph_sim.data.tu", "fedgraph_sim.scenario"]


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
