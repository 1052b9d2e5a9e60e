"""Name lookup for the pluggable pieces: attacks, defenses, conv types (models), auxiliary-set
scenarios and datasets.

One :class:`Registry` class; one instance per kind. A pluggable piece is a class with a ``name``
and registers itself with the class decorator ``@registry.<kind>.register``; the package
``__init__`` files import their modules explicitly, so registration never depends on import order
elsewhere, and a user's plugin module registers its own classes the same way. Datasets are the one
exception: one loader function serves many names (every TU dataset), so they are added by name
(in :mod:`fedgraph_sim.data.loaders`, beside ``load_dataset``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from fedgraph_sim.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """A name -> object map whose failed lookups list the valid names."""

    def __init__(self, kind: str, *, case_sensitive: bool = False) -> None:
        self.kind = kind
        self._case_sensitive = case_sensitive
        self._items: dict[str, T] = {}
        self._display: dict[str, str] = {}

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
        try:
            return self._items[self._key(name)]
        except (KeyError, AttributeError):
            where = f"{key}: " if key else ""
            raise ConfigError(
                f"{where}unknown {self.kind} '{name}'; valid {self.kind}s: {', '.join(self.names())}"
            ) from None

    def canonical(self, name: str) -> str:
        """The registered spelling of ``name`` (raises like :meth:`get`)."""
        self.get(name)
        return self._display[self._key(name)]

    def names(self) -> list[str]:
        return [self._display[k] for k in self._items]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._key(name) in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)


datasets: Registry = Registry("dataset")
models: Registry = Registry("model")
attacks: Registry = Registry("attack")
defenses: Registry = Registry("defense")
scenarios: Registry = Registry("auxiliary scenario")
