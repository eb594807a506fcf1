"""One shape for Pimento's extension points: named factories, chosen by name or by what a
location looks like.

Database engines (:func:`pimento.engines.register_engine`), LLM backends
(:func:`pimento.llm.register_backend`) and search expanders
(:func:`pimento.search.register_expander`) each keep one :class:`Registry`. The rules are the
same for all three:

* registering a name again replaces its entry;
* :meth:`Registry.find` tries the entries newest first, so a plug-in registered later claims the
  locations a built-in would take;
* the built-ins are registered by ``load`` (an import of the package's ``_builtin`` module)
  before any registration or lookup, so that they are always older than a plug-in.

>>> shapes: Registry[str] = Registry()
>>> shapes.register("square", "four sides", matches=lambda s: s.startswith("sq"))
>>> shapes.register("squircle", "rounded", matches=lambda s: s.startswith("squi"))
>>> shapes.find("squircle"), shapes.find("square"), shapes.find("circle")
('rounded', 'four sides', None)
>>> shapes.names(), shapes.get("square")
(('square', 'squircle'), 'four sides')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Registry"]

F = TypeVar("F")


@dataclass(frozen=True)
class _Entry(Generic[F]):
    factory: F
    #: Whether the entry takes a location (a path, a URL); None: chosen by name only.
    matches: Callable[[str], bool] | None


class Registry(Generic[F]):
    """Named factories of one kind (see the module docstring for the rules)."""

    def __init__(self, load: Callable[[], None] | None = None) -> None:
        self._entries: dict[str, _Entry[F]] = {}
        self._load = load

    def _loaded(self) -> dict[str, _Entry[F]]:
        if self._load is not None:
            self._load()  # an import: after the first call, a lookup in sys.modules
        return self._entries

    def register(self, name: str, factory: F, *, matches: Callable[[str], bool] | None = None) -> None:
        """Add ``factory`` under ``name`` (replacing an entry of that name), the newest entry."""
        entries = self._loaded()
        entries.pop(name, None)
        entries[name] = _Entry(factory, matches)

    def copy(self) -> Registry[F]:
        """An independent registry with the same entries and loader (for tests that register)."""
        other: Registry[F] = Registry(self._load)
        other._entries = dict(self._loaded())
        return other

    def unregister(self, name: str) -> None:
        """Remove the entry of ``name``, if any (a plug-in's tests clean up after themselves)."""
        self._loaded().pop(name, None)

    def names(self) -> tuple[str, ...]:
        """The registered names, oldest first."""
        return tuple(self._loaded())

    def get(self, name: str) -> F | None:
        """The factory registered under ``name``, or None."""
        entry = self._loaded().get(name)
        return entry.factory if entry is not None else None

    def find(self, location: str) -> F | None:
        """The factory of the newest entry whose ``matches`` accepts ``location``, or None."""
        for entry in reversed(self._loaded().values()):
            if entry.matches is not None and entry.matches(location):
                return entry.factory
        return None
