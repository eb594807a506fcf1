"""The Engine protocol every database backend implements, and the engine registry.

An engine runs SQL with bound parameters, names its sqlglot dialect, can be opened
read-only (private data always is), enforces a per-statement timeout, can cancel a
running statement from another thread, and introspects its catalog.

A read-only connection is a connection to private data, and each built-in engine hardens it
(defence in depth behind the parser's allow-list; see docs/errors.md and docs/configuration.md):

* DuckDB: no file system access (``enable_external_access = false``: no ``COPY ... TO``,
  ``read_csv``, ``ATTACH``, ``glob``), no extension installing or autoloading, a memory limit and
  thread count from ``[database]``, and ``lock_configuration = true`` once set up, so a statement
  cannot undo any of it;
* SQLite: a ``mode=ro`` URI and ``PRAGMA query_only``, extension loading off, ``ATTACH`` refused
  (limit 0 and the authorizer), only the introspection pragmas allowed, and a heap limit (SQLite's
  is per process: the lowest limit asked for applies);
* PostgreSQL: read-only transactions, a statement timeout, only ``SELECT``/``WITH`` statements
  (no ``COPY``), and ``temp_file_limit`` where the role may set it. The role's own rights (no
  superuser, no ``pg_read_server_files``) are the custodian's to restrict.

An engine's error text can quote the data ("Could not convert string 'Ana Baker'"), so every
engine raises :class:`pimento.errors.EngineQueryError`, whose ``message`` (what the CLI prints) is fixed and
whose ``engine_text`` keeps the engine's words for the custodian's audit record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pimento.errors import DataSourceError
from pimento.numbers import parse_size
from pimento.registry import Registry
from pimento.schema import Catalog

__all__ = [
    "Engine",
    "Result",
    "memory_limit_bytes",
    "open_engine",
    "register_engine",
    "registered_engines",
]


def memory_limit_bytes(text: str) -> int:
    """Bytes of a memory limit such as ``"4GB"``, ``"512MiB"`` or ``"1000000"`` (:func:`pimento.numbers.parse_size`).

    >>> memory_limit_bytes("4GB"), memory_limit_bytes("1 GiB")
    (4000000000, 1073741824)
    """
    return parse_size(text, name="memory limit ([database] memory_limit)")


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
    #: Default per-statement timeout in seconds (None: none); ``execute(timeout_s=...)`` overrides it.
    timeout_s: float | None

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


def _load_builtins() -> None:
    from pimento.engines import _builtin  # noqa: F401  (registers the built-in engines)


_ENGINES: Registry[EngineFactory] = Registry(_load_builtins)


def register_engine(name: str, matches: Callable[[str], bool], factory: EngineFactory) -> None:
    """Make ``open_engine`` use ``factory(location, read_only=..., timeout_s=...)`` for matching locations.

    ``memory_limit=`` and ``threads=`` are passed as well when the caller sets them. A later
    registration is tried first (:class:`pimento.registry.Registry`).
    """
    _ENGINES.register(name, factory, matches=matches)


def registered_engines() -> tuple[str, ...]:
    return _ENGINES.names()


def open_engine(
    location: str,
    *,
    engine: str | None = None,
    read_only: bool = True,
    timeout_s: float | None = None,
    memory_limit: str | None = None,
    threads: int | None = None,
) -> Engine:
    """Open a database: a DuckDB or SQLite file path, or a ``postgresql://`` DSN.

    ``engine`` forces a registered engine; otherwise the location decides.
    Private data is opened read-only, the default, and hardened (see the module docstring).
    ``memory_limit`` (e.g. ``"4GB"``, default :data:`pimento.config.DEFAULT_MEMORY_LIMIT`) and
    ``threads`` come from ``[database]`` of pimento.toml.
    """
    location = str(location)
    options: dict[str, Any] = {"read_only": read_only, "timeout_s": timeout_s}
    if memory_limit is not None:
        memory_limit_bytes(memory_limit)
        options["memory_limit"] = memory_limit
    if threads is not None:
        options["threads"] = threads
    if engine is not None:
        forced = _ENGINES.get(engine)
        if forced is None:
            raise DataSourceError(
                f"unknown engine {engine!r}", hint=f"use one of {', '.join(sorted(_ENGINES.names()))}"
            )
        return forced(location, **options)
    factory = _ENGINES.find(location)
    if factory is None:
        raise DataSourceError(
            f"cannot tell which engine opens {location!r}",
            hint="use a .duckdb, .sqlite or .db file, a postgresql:// DSN, or pass --engine",
        )
    return factory(location, **options)
