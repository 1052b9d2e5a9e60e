"""Layers read top to bottom: experiments/CLI -> runtime -> server, clients, attacks -> core.

The core (``fedgraph_sim`` outside ``runtime/``) imports none of the layers above it; the middle
layer never imports the runtime; and no top-level package imports another in a circle.
"""

from pathlib import Path

import pytest

from tests.unit.test_threat_boundary import imported_modules

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "fedgraph_sim" / "runtime"
ABOVE_CORE = ("clients", "server", "attacks", "fedgraph_sim.runtime", "experiments")
# What each middle-layer package may not import (attacks see only the server's view: the
# threat-boundary test adds the audit store). The server runs attacks and records how each call
# went; scoring against the ground truth is the evaluation's, wired in by the runtime.
MIDDLE = {"clients": ("server", "attacks", "fedgraph_sim.runtime", "experiments"),
          "server": ("clients", "fedgraph_sim.runtime", "experiments", "fedgraph_sim.audit",
                     "fedgraph_sim.evaluation"),
          "attacks": ("clients", "server", "fedgraph_sim.runtime", "experiments")}


def offending(files, forbidden) -> list[str]:
    found = []
    for path in files:
        for name in imported_modules(path):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                found.append(f"{path.relative_to(ROOT)} imports {name}")
    return sorted(found)


def core_files() -> list[Path]:
    return [p for p in sorted((ROOT / "fedgraph_sim").rglob("*.py"))
            if RUNTIME not in p.parents and p.name != "__main__.py"]


def test_the_core_imports_nothing_above_it():
    assert len(core_files()) > 20
    assert offending(core_files(), ABOVE_CORE) == []


@pytest.mark.parametrize("package", sorted(MIDDLE))
def test_the_middle_layer_does_not_import_sideways_or_up(package):
    files = sorted((ROOT / package).rglob("*.py"))
    assert files
    assert offending(files, MIDDLE[package]) == []


def test_the_default_config_is_packaged():
    from fedgraph_sim.config import DEFAULT_CONFIG

    assert DEFAULT_CONFIG.is_file() and (ROOT / "fedgraph_sim") in DEFAULT_CONFIG.parents
    assert (ROOT / "experiments" / "configs" / "default.yaml").read_text() == DEFAULT_CONFIG.read_text()


def test_the_check_catches_an_upward_import(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    (tmp_path / "core.py").write_text("from fedgraph_sim.runtime import run\nimport numpy\n")
    (tmp_path / "fine.py").write_text("from fedgraph_sim.config import load_config\n")
    found = offending([tmp_path / "core.py", tmp_path / "fine.py"], ABOVE_CORE)
    assert found == ["core.py imports fedgraph_sim.runtime", "core.py imports fedgraph_sim.runtime.run"]


def module_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the project modules its imports name (function-local ones included). An import of
    a module's own enclosing package is left out: a package's ``__init__`` running its submodules
    is how Python loads it, not a circle between modules."""
    from tests.unit.test_threat_boundary import module_name

    files = [p for package in ("fedgraph_sim", "clients", "server", "attacks")
             for p in sorted((root / package).rglob("*.py"))]
    modules = {module_name(p, root): p for p in files}
    graph = {}
    for name, path in modules.items():
        targets = {t for t in imported_modules(path, root) if t in modules}
        graph[name] = {t for t in targets if t != name and not name.startswith(t + ".")}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v), on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_module_imports_another_in_a_circle():
    graph = module_graph()
    assert len(graph) > 100
    assert circles(graph) == []


def test_the_circle_check_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
