"""Name lookup for the pluggable pieces: attacks, defenses, conv types (models), auxiliary-set
scenarios and datasets.

One :class:`Registry` class; one instance per kind. Attacks and defenses are declared in one
place, the package's entry points (``pyproject.toml``: groups ``fedgraph_sim.attacks`` and
``fedgraph_sim.defenses``, name = ``module:Class``), and a piece's module is imported when the
piece is first looked up, so no code imports a package for its side effect of registering, and
listing the names or refusing an unknown one imports nothing. An installed plugin declares its
own entry points the same way; a plugin module named under the config's ``plugins:`` registers
its classes with the class decorator ``@registry.<kind>.register`` when it is imported. Conv types
and auxiliary scenarios register with that decorator inside the core. Datasets are added by name
(one loader serves many names, every TU dataset) in :mod:`fedgraph_sim.data.loaders`.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import metadata
from typing import Generic, TypeVar

from fedgraph_sim.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """A name -> object map whose failed lookups list the valid names."""

    def __init__(self, kind: str, *, case_sensitive: bool = False, group: str | None = None) -> None:
        self.kind = kind
        self._case_sensitive = case_sensitive
        self._group = group  # the entry-point group declaring this kind's pieces
        self._declared: dict[str, metadata.EntryPoint] | None = None  # read at first use
        self._items: dict[str, T] = {}
        self._display: dict[str, str] = {}

    def _entry_points(self) -> dict[str, metadata.EntryPoint]:
        if self._declared is None:
            self._declared = {}
            for point in metadata.entry_points(group=self._group) if self._group else ():
                self._declared.setdefault(self._key(point.name), point)
        return self._declared

    def _key(self, name: str) -> str:
        return name if self._case_sensitive else name.lower()

    def add(self, name: str, obj: T) -> T:
        key = self._key(name)
        if key in self._items:
            raise ValueError(f"{self.kind} '{name}' is registered twice")
        self._items[key] = obj
        self._display[key] = name
        return obj

    def register(self, cls: T) -> T:
        """Class decorator: register ``cls`` under ``cls.name``."""
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"{cls!r} has no 'name' to register as a {self.kind}")
        return self.add(name, cls)

    def get(self, name: str, key: str | None = None) -> T:
        """The object registered as ``name``; ``key`` (e.g. ``model.conv``) is the config key
        that named it, put first in the error."""
        where = f"{key}: " if key else ""
        try:
            k = self._key(name)
        except AttributeError:  # not a string
            k = None
        if k not in self._items and k in self._entry_points():
            point = self._entry_points()[k]
            try:
                obj = point.load()  # its module's decorator may register it
            except Exception as exc:
                raise ConfigError(f"{where}{self.kind} '{name}' is declared as {point.value} but does not load: "
                                  f"{type(exc).__name__}: {exc}") from None
            if k not in self._items:
                self.add(point.name, obj)
        if k in self._items:
            return self._items[k]
        raise ConfigError(f"{where}unknown {self.kind} '{name}'; valid {self.kind}s: {', '.join(self.names())}")

    def check(self, name: str, key: str | None = None) -> None:
        """Raise like :meth:`get` if ``name`` is neither registered nor declared, importing nothing."""
        if name not in self:
            self.get(name, key)

    def canonical(self, name: str) -> str:
        """The registered spelling of ``name`` (raises like :meth:`get`)."""
        self.get(name)
        return self._display[self._key(name)]

    def names(self) -> list[str]:
        """The declared pieces (entry-point order), then those registered otherwise (plugins)."""
        declared = {k: point.name for k, point in self._entry_points().items()}
        return list(declared.values()) + [self._display[k] for k in self._items if k not in declared]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (self._key(name) in self._items or self._key(name) in self._entry_points())

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())


datasets: Registry = Registry("dataset")
models: Registry = Registry("model")
attacks: Registry = Registry("attack", group="fedgraph_sim.attacks")
defenses: Registry = Registry("defense", group="fedgraph_sim.defenses")
scenarios: Registry = Registry("auxiliary scenario")
