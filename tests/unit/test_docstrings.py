"""The core's public functions and methods are documented: a docstring, and an ``Args:`` section
(Google style, as in PyG) naming each parameter when the function takes any.

The core is ``fedgraph_sim`` outside ``runtime/`` and ``report/``. Public means a module-level
function, or a method of a module-level class (nested classes too), whose name does not start
with ``_``; dunder methods, properties and ``@overload`` stubs are left out. A ``forward`` is
left out when its class's docstring states the inputs in a ``Shapes:`` section. An override
whose docstring has no ``Args:`` takes its base's, when the base class is defined in the same
module (one place for a hook's arguments, as Sphinx inherits docstrings). ``self``/``cls``
need no entry; ``*args``/``**kwargs`` may be named (``*args`` or ``args``) or left out. The
modules are read with ``ast``: nothing is imported.
"""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fedgraph_sim"
OUTSIDE_CORE = ("runtime", "report")
PROPERTY_DECORATORS = ("property", "cached_property", "setter", "getter", "deleter")
ENTRY = re.compile(r"(\*{0,2}\w+)\s*(\([^)]*\))?\s*:")


def core_files(root: Path = ROOT) -> list[Path]:
    """The core's modules, in path order."""
    package = root / "fedgraph_sim"
    return [p for p in sorted(package.rglob("*.py"))
            if p.relative_to(package).parts[0] not in OUTSIDE_CORE]


def _decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    names = set()
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Call):
            decorator = decorator.func
        if isinstance(decorator, ast.Name):
            names.add(decorator.id)
        elif isinstance(decorator, ast.Attribute):
            names.add(decorator.attr)
    return names


def inherited_doc(cls: ast.ClassDef | None, name: str, classes: dict[str, ast.ClassDef]) -> str | None:
    """The docstring of method ``name`` on the nearest base of ``cls`` defined in the same module."""
    for base in cls.bases if cls is not None else ():
        parent = classes.get(base.id) if isinstance(base, ast.Name) else None
        if parent is None:
            continue
        for node in parent.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                return ast.get_docstring(node)
        found = inherited_doc(parent, name, classes)
        if found:
            return found
    return None


def public_functions(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, bool, str | None]]:
    """``(qualified name, node, is a method, the base's docstring of it)`` of each public function
    and method in ``tree``, minus properties, ``@overload`` stubs and ``forward`` methods whose
    class has ``Shapes:``."""
    found = []
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}

    def visit(body, prefix: str, cls: ast.ClassDef | None) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                visit(node.body, f"{prefix}{node.name}.", node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                decorators = _decorator_names(node)
                if decorators & {*PROPERTY_DECORATORS, "overload"}:
                    continue
                if (cls is not None and node.name == "forward"
                        and "\nShapes:" in "\n" + (ast.get_docstring(cls) or "")):
                    continue
                method = cls is not None and "staticmethod" not in decorators
                found.append((prefix + node.name, node, method, inherited_doc(cls, node.name, classes)))

    visit(tree.body, "", None)
    return found


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> tuple[list[str], list[str]]:
    """``(the parameters an Args: section must name, the *args/**kwargs it may name)``."""
    args = node.args
    named = [a.arg for a in (*args.posonlyargs, *args.args)]
    if method and named and named[0] in ("self", "cls", "mcs"):
        named = named[1:]
    named += [a.arg for a in args.kwonlyargs]
    star = [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return named, star


def documented_args(doc: str) -> list[str] | None:
    """The names the ``Args:`` section of ``doc`` (a cleaned docstring) documents, or None if it
    has none. An entry is a line at the section's first indent: ``name (type): text`` or
    ``name: text``; a line indented no deeper than ``Args:`` ends the section."""
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        if line.strip() in ("Args:", "Arguments:", "Parameters:"):
            header = len(line) - len(line.lstrip())
            break
    else:
        return None
    names, indent = [], None
    for line in lines[i + 1:]:
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        if depth <= header:
            break
        if indent is None:
            indent = depth
        if depth == indent:
            match = ENTRY.match(line.strip())
            if match:
                names.append(match.group(1))
    return names


def problems(path: Path, root: Path = ROOT) -> tuple[int, list[str]]:
    """``(how many public functions path defines, one message per missing piece)``."""
    parts = path.relative_to(root).with_suffix("").parts
    module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    functions = public_functions(tree)
    found = []
    for qualname, node, method, base_doc in functions:
        where = f"{module}:{qualname}"
        doc = ast.get_docstring(node)
        if not doc:
            found.append(f"{where}: missing docstring")
            continue
        named, star = parameters(node, method)
        if not named and not star:
            continue
        entries = documented_args(doc)
        if entries is None and base_doc:
            entries = documented_args(base_doc)
        if entries is None:
            if named:
                found.append(f"{where}: missing Args: section")
            continue
        entries = {e.lstrip("*") for e in entries}
        for name in named:
            if name not in entries:
                found.append(f"{where}: missing Args entry for {name}")
    return len(functions), found


def test_the_core_is_the_expected_set_of_modules():
    files = core_files()
    assert len(files) > 40
    assert not [p for p in files if "runtime" in p.parts or "report" in p.parts]


def test_every_public_function_of_the_core_is_documented_with_args():
    found = [message for path in core_files() for message in problems(path)[1]]
    assert not found, "undocumented public functions:\n" + "\n".join(found)


def test_the_walk_catches_what_is_missing(tmp_path):
    package = tmp_path / "fedgraph_sim"
    package.mkdir()
    (package / "m.py").write_text('''
def bare(a): pass

def no_args(a, b=1):
    """Does a thing."""

def partial(a, *rest, b, **kw):
    """Does a thing.

    Args:
        a (int): first.
            b: not an entry, a continuation line.

    Returns:
        b: not an entry either.
    """

def nothing():
    """Takes nothing."""

def _private(a): pass

class Thing:
    """A thing."""

    def method(self, x):
        """Uses x.

        Args:
            x: the x.
        """

    @classmethod
    def make(cls, *args, **kwargs):
        """Makes one; star arguments may go unnamed."""

    @staticmethod
    def plain(cls):
        """Here cls is a parameter like any other."""

    @property
    def size(self): pass

    def __len__(self): pass

    def forward(self, x): pass

class Child(Thing):
    """A thing of another kind."""

    def method(self, x):
        """Uses x its own way; the arguments are Thing.method's."""

    def other(self, y):
        """Nothing to inherit."""

class Module:
    """A module.

    Shapes:
        - **input:** x of shape [N, F]
    """

    def forward(self, x): pass
''')
    (package / "__init__.py").write_text("def exported(a):\n    \"\"\"Takes a.\"\"\"\n")
    assert problems(package / "__init__.py", tmp_path) == (1, ["fedgraph_sim:exported: missing Args: section"])
    count, found = problems(package / "m.py", tmp_path)
    assert count == 10
    assert found == ["fedgraph_sim.m:bare: missing docstring",
                     "fedgraph_sim.m:no_args: missing Args: section",
                     "fedgraph_sim.m:partial: missing Args entry for b",
                     "fedgraph_sim.m:Thing.plain: missing Args: section",
                     "fedgraph_sim.m:Thing.forward: missing docstring",
                     "fedgraph_sim.m:Child.other: missing Args: section"]
