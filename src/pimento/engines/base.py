"""The Engine protocol every database backend implements, and the engine registry.

An engine runs SQL with bound parameters, names its sqlglot dialect, can be opened
read-only (private data always is), enforces a per-statement timeout, can cancel a
running statement from another thread, and introspects its catalog.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pimento.errors import DataSourceError
from pimento.schema import Catalog

__all__ = ["Engine", "Result", "open_engine", "register_engine", "registered_engines"]


@dataclass(frozen=True)
class Result:
    """Rows returned by a statement, with their column names."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def scalar(self) -> Any:
        """The single value of a one-row, one-column result."""
        if len(self.rows) != 1 or len(self.columns) != 1:
            raise DataSourceError(f"expected one value, got {len(self.rows)} rows of {len(self.columns)} columns")
        return self.rows[0][0]


@runtime_checkable
class Engine(Protocol):
    """What Pimento needs from a database."""

    #: Registry name: "duckdb", "sqlite", "postgres", ...
    name: str
    #: sqlglot dialect used to render SQL for this engine.
    dialect: str
    #: True if the connection refuses writes.
    read_only: bool
    #: Where the data lives (path or DSN without password), for messages.
    location: str

    def execute(self, sql: str, params: Sequence[Any] | None = None, *, timeout_s: float | None = None) -> Result:
        """Run one statement with positional ``?`` placeholders bound to ``params`` (on every engine)."""
        ...

    def cancel(self) -> None:
        """Interrupt the statement running on this engine (callable from another thread)."""
        ...

    def introspect(self) -> Catalog:
        """Tables, columns, types, primary/unique keys, NOT NULL, foreign keys as the engine declares them."""
        ...

    def close(self) -> None:
        ...


EngineFactory = Callable[..., Engine]
_REGISTRY: dict[str, tuple[Callable[[str], bool], EngineFactory]] = {}


def register_engine(name: str, matches: Callable[[str], bool], factory: EngineFactory) -> None:
    """Make ``open_engine`` use ``factory(location, read_only=..., timeout_s=...)`` for matching locations."""
    _REGISTRY[name] = (matches, factory)


def registered_engines() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def open_engine(location: str, *, engine: str | None = None, read_only: bool = True, timeout_s: float | None = None) -> Engine:
    """Open a database: a DuckDB or SQLite file path, or a ``postgresql://`` DSN.

    ``engine`` forces a registered engine; otherwise the location decides.
    Private data is opened read-only, the default.
    """
    from pimento.engines import _builtin  # noqa: F401  (registers the built-in engines)

    location = str(location)
    if engine is not None:
        if engine not in _REGISTRY:
            raise DataSourceError(
                f"unknown engine {engine!r}", hint=f"use one of {', '.join(sorted(_REGISTRY))}"
            )
        return _REGISTRY[engine][1](location, read_only=read_only, timeout_s=timeout_s)
    for _name, (matches, factory) in _REGISTRY.items():
        if matches(location):
            return factory(location, read_only=read_only, timeout_s=timeout_s)
    raise DataSourceError(
        f"cannot tell which engine opens {location!r}",
        hint="use a .duckdb, .sqlite or .db file, a postgresql:// DSN, or pass --engine",
    )
