"""Name lookup for the pluggable pieces: attacks, defenses, conv types (models), auxiliary-set
scenarios and datasets.

One :class:`Registry` class; one instance per kind. A piece is declared once, by the class
decorator ``@registry.<kind>.register`` (``@attacks.register`` for attacks) on a class with a
``name``. The package's attacks and defenses are found without importing anything: the registry
reads the source of the modules under its package (``attacks``, ``clients.defenses``) for
decorated classes and their ``name``, and imports a piece's module when the piece is first looked
up. So adding an attack or a defense is one module in its package; listing the names or refusing
an unknown one imports nothing. A plugin outside the package is either named under the config's
``plugins:`` (its import runs the decorator) or, installed as a distribution, names its classes in
the entry-point group ``fedgraph_sim.attacks`` or ``fedgraph_sim.defenses``. Conv types and
auxiliary scenarios register with the decorator inside the core. Datasets are added by name (one
loader serves many names, every TU dataset) in :mod:`fedgraph_sim.data.loaders`.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Generic, TypeVar

from fedgraph_sim.errors import ConfigError

T = TypeVar("T")


@dataclass(frozen=True)
class Declaration:
    """A decorated class found in a package's source: its ``name`` and where it lives."""

    name: str
    module: str
    qualname: str

    @property
    def value(self) -> str:
        return f"{self.module}:{self.qualname}"

    def load(self):
        """The class: its module imported (which runs its decorator)."""
        return getattr(importlib.import_module(self.module), self.qualname)


def package_dir(package: str) -> Path | None:
    """The folder of ``package``, found without importing it or its parents.

    Args:
        package: a dotted package name, e.g. ``clients.defenses``.

    Returns:
        Its folder, or None when it is not found.
    """
    top, *rest = package.split(".")
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))).joinpath(*rest)
    return folder if folder.is_dir() else None


def _is_register(decorator: ast.expr) -> bool:
    return (isinstance(decorator, ast.Name) and decorator.id == "register") or (
        isinstance(decorator, ast.Attribute) and decorator.attr == "register")


def _class_name(node: ast.ClassDef) -> str | None:
    for stmt in node.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id == "name" and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)):
            return stmt.value.value
    return None


def _sources(package: str) -> Iterator[tuple[str, Path]]:
    """``(dotted module name, source path)`` of every module under ``package``, in path order."""
    folder = package_dir(package)
    for path in sorted(folder.rglob("*.py")) if folder else ():
        parts = path.relative_to(folder).with_suffix("").parts
        module = ".".join((package, *(parts[:-1] if parts[-1] == "__init__" else parts)))
        yield module, path


def modules_calling(package: str, function: str) -> list[str]:
    """The modules under ``package`` that call ``function`` at module level (e.g. a metric
    module's ``register_metric(...)``), read from the source; nothing is imported.

    Args:
        package: the dotted package whose modules are read.
        function: the called name (a bare name or an attribute's last part).
    """
    found = []
    for module, path in _sources(package):
        text = path.read_text(encoding="utf-8")
        if f"{function}(" not in text:
            continue
        for node in ast.parse(text, filename=str(path)).body:
            call = node.value if isinstance(node, (ast.Expr, ast.Assign)) else None
            if isinstance(call, ast.Call) and (
                    (isinstance(call.func, ast.Name) and call.func.id == function)
                    or (isinstance(call.func, ast.Attribute) and call.func.attr == function)):
                found.append(module)
                break
    return found


def declarations(package: str) -> list[Declaration]:
    """The classes under ``package`` decorated with ``...register`` and given a literal ``name``,
    read from the source (nothing is imported), in file order.

    Args:
        package: the dotted package whose modules are read (``attacks``).
    """
    found = []
    for module, path in _sources(package):
        text = path.read_text(encoding="utf-8")
        if "register" not in text:
            continue
        for node in ast.parse(text, filename=str(path)).body:
            if isinstance(node, ast.ClassDef) and any(_is_register(d) for d in node.decorator_list):
                name = _class_name(node)
                if name:
                    found.append(Declaration(name, module, node.name))
    return found


class Registry(Generic[T]):
    """A name -> object map whose failed lookups list the valid names.

    Args:
        kind: what the pieces are, for messages ("attack").
        case_sensitive: whether names are compared as written.
        package: the dotted package whose modules declare this kind's pieces with the decorator.
        group: the entry-point group where installed plugin distributions name theirs.
    """

    def __init__(self, kind: str, *, case_sensitive: bool = False, package: str | None = None,
                 group: str | None = None) -> None:
        self.kind = kind
        self._case_sensitive = case_sensitive
        self._package = package
        self._group = group
        self._declared: dict[str, Declaration | metadata.EntryPoint] | None = None  # read at first use
        self._items: dict[str, T] = {}
        self._display: dict[str, str] = {}

    def _declarations(self) -> dict[str, Declaration | metadata.EntryPoint]:
        if self._declared is None:
            found: dict[str, Declaration | metadata.EntryPoint] = {}
            for decl in sorted(declarations(self._package) if self._package else [], key=lambda d: d.name):
                key = self._key(decl.name)
                if key in found:
                    twice = f"{found[key].value} and {decl.value}"
                    raise ValueError(f"{self.kind} '{decl.name}' is declared twice: {twice}")
                found[key] = decl
            for point in metadata.entry_points(group=self._group) if self._group else ():
                found.setdefault(self._key(point.name), point)  # the package's own source wins
            self._declared = found
        return self._declared

    def _key(self, name: str) -> str:
        return name if self._case_sensitive else name.lower()

    def add(self, name: str, obj: T) -> T:
        """Register ``obj`` as ``name``; a name taken already is refused.

        Args:
            name: the piece's name, kept in the spelling given.
            obj: the piece (a class, a loader).
        """
        key = self._key(name)
        if key in self._items:
            raise ValueError(f"{self.kind} '{name}' is registered twice")
        self._items[key] = obj
        self._display[key] = name
        return obj

    def register(self, cls: T) -> T:
        """Class decorator: register ``cls`` under ``cls.name``.

        Args:
            cls: a class with a non-empty string ``name``.
        """
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"{cls!r} has no 'name' to register as a {self.kind}")
        return self.add(name, cls)

    def get(self, name: str, key: str | None = None) -> T:
        """The object registered as ``name``.

        Args:
            name: the piece's name.
            key: the config key that named it (e.g. ``model.conv``), put first in the error.
        """
        where = f"{key}: " if key else ""
        try:
            k = self._key(name)
        except AttributeError:  # not a string
            k = None
        if k not in self._items and k in self._declarations():
            declared = self._declarations()[k]
            try:
                obj = declared.load()  # its module's decorator registers it
            except Exception as exc:
                raise ConfigError(f"{where}{self.kind} '{name}' is declared as {declared.value} but does not load: "
                                  f"{type(exc).__name__}: {exc}") from None
            if k not in self._items:
                self.add(declared.name, obj)
        if k in self._items:
            return self._items[k]
        raise ConfigError(f"{where}unknown {self.kind} '{name}'; valid {self.kind}s: {', '.join(self.names())}")

    def check(self, name: str, key: str | None = None) -> None:
        """Raise like :meth:`get` if ``name`` is neither registered nor declared, importing nothing.

        Args:
            name: the piece's name.
            key: the config key that named it, put first in the error.
        """
        if name not in self:
            self.get(name, key)

    def canonical(self, name: str) -> str:
        """The registered spelling of ``name`` (raises like :meth:`get`).

        Args:
            name: the piece's name in any case.
        """
        self.get(name)
        return self._display[self._key(name)]

    def names(self) -> list[str]:
        """The declared pieces (the package's by name, then installed plugins'), then those
        registered otherwise (``plugins:`` modules)."""
        declared = {k: d.name for k, d in self._declarations().items()}
        return list(declared.values()) + [self._display[k] for k in self._items if k not in declared]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (self._key(name) in self._items or self._key(name) in self._declarations())

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())


datasets: Registry = Registry("dataset")
models: Registry = Registry("model")
attacks: Registry = Registry("attack", package="attacks", group="fedgraph_sim.attacks")
defenses: Registry = Registry("defense", package="clients.defenses", group="fedgraph_sim.defenses")
scenarios: Registry = Registry("auxiliary scenario")
