"""Open a database with everything Pimento knows about it: engine, merged catalog, settings.

:func:`load_database` opens the engine (read-only by default), introspects it, reads the
custodian's ``pimento.toml`` (the one beside the database file), merges private relations and
declared constraints into the catalog (:func:`pimento.schema.merge.merge_catalog`), and,
when ``constraints.validate_on_load`` is on, checks every declared constraint against the
data with SQL. :func:`validate_constraints` checks all constraints of the catalog on demand
(SQLite, for one, does not enforce the foreign keys it declares); it reports counts and
example values, so only custodian tools (``pimento catalog --check``) call it.

Two roles: the custodian's settings govern every analyst-facing path, which can only make
them stricter (add private relations). ``load_database``'s ``config`` argument, which puts
other settings in their place, is for custodian tools only; an analyst-facing entry point
never passes it, so its settings are always the custodian's.

    >>> db = load_database("hospital.duckdb")          # doctest: +SKIP
    >>> db.catalog.private_tables                      # doctest: +SKIP
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pimento.config import CONFIG_FILE_NAME, Settings, find_settings_file, load_settings
from pimento.engines.base import Engine, open_engine
from pimento.errors import ConfigError, ConstraintViolation, DatabaseChangedError
from pimento.schema import Catalog, ForeignKey, FunctionalDependency
from pimento.schema.merge import declared_constraints, merge_catalog
from pimento.sql.quote import quote_identifier

__all__ = ["Database", "FileIdentity", "FileStat", "Violation", "custodian_settings", "file_identity", "file_stat", "load_database",
           "validate_constraints"]

#: How many offending values a violation reports.
MAX_EXAMPLES = 3


@dataclass(frozen=True)
class Database:
    """An open database: its engine, merged catalog, settings and location."""

    engine: Engine
    catalog: Catalog
    settings: Settings
    location: str

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class Violation:
    """A constraint that fails on the data: how often, and up to three offending values.

    ``kind`` is ``primary_key``, ``unique``, ``foreign_key`` or ``functional_dependency``;
    ``count`` counts duplicate groups (keys), orphan rows (foreign keys) or left-hand-side
    groups with more than one right-hand side (functional dependencies).
    """

    kind: str
    constraint: str
    count: int
    examples: tuple[Any, ...]
    declared: bool = False

    @property
    def declaration(self) -> str:
        """The constraint, without anything read from the data (e.g. ``declared foreign key A(x) -> B(y)``)."""
        origin = "declared " if self.declared else ""
        return f"{origin}{self.kind.replace('_', ' ')} {self.constraint}"

    @property
    def message(self) -> str:
        """The constraint with its count and examples: private data, for custodian tools only."""
        what = {
            "primary_key": "duplicate or NULL key value(s)",
            "unique": "duplicate key value(s)",
            "foreign_key": "row(s) reference a missing parent",
            "functional_dependency": "left-hand value(s) map to more than one right-hand value",
        }[self.kind]
        shown = ", ".join(_show(e) for e in self.examples)
        origin = "declared " if self.declared else ""
        return f"{origin}{self.kind.replace('_', ' ')} {self.constraint} fails: {self.count} {what}" + (
            f", e.g. {shown}" if shown else ""
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "constraint": self.constraint,
            "count": self.count,
            "examples": [list(e) if isinstance(e, tuple) else e for e in self.examples],
            "declared": self.declared,
            "message": self.message,
        }


def custodian_settings(db: str | Path) -> Settings:
    """The custodian's settings that govern ``db`` as its ``pimento.toml`` reads now: those :func:`load_database` would
    open it under (no engine is opened). For a process that keeps ``db`` open and must follow that file (the
    service's ledger reads). Raises ConfigError for a file that does not read."""
    return _locate(str(db), None)[1]


def load_database(
    db: str | Path,
    *,
    read_only: bool = True,
    private: Sequence[str] | None = None,
    config: str | Path | Settings | None = None,
    engine: str | None = None,
) -> Database:
    """Open ``db`` (DuckDB/SQLite file, ``postgresql://`` DSN, or a folder/pimento.toml naming one).

    The settings are the custodian's: the ``pimento.toml`` beside the database file (symbolic
    links followed), or, for a folder or a ``pimento.toml`` given as ``db``, that file, which
    must then sit beside the database file it names (so a ``pimento.toml`` written elsewhere
    cannot put its own ledger, caps or public relations on someone else's database).

    Args:
        db: where the data lives.
        read_only: private data is opened read-only (the default); writes then fail.
        private: additional private relations (the caller's ``--private``): they are added to
            the custodian's, never replace them; an unknown name is a CatalogError.
        config: custodian tools only: a pimento.toml path or :class:`Settings` used instead of
            the custodian's file. Analyst-facing paths (``Session``, ``pimento sql``/``ask``/
            ``search``, the service) never pass it.
        engine: force a registered engine; default: ``[database] engine`` or the location.

    Raises:
        ConfigError: pimento.toml is invalid or not beside the database it names.
        CatalogError: it names unknown tables/columns.
        ConstraintViolation: a declared constraint fails on the data (``validate_on_load``);
            the message names the declaration only, never a value or a count from the data.
        DataSourceError: the database cannot be opened.
    """
    location, settings, source = _locate(str(db), config)
    opened = open_engine(
        location,
        engine=engine or settings.database.engine,
        read_only=read_only,
        timeout_s=settings.database.timeout_s,
        memory_limit=settings.database.memory_limit,
        threads=settings.database.threads,
    )
    try:
        introspected = opened.introspect()
        catalog = merge_catalog(introspected, settings, private=private, source=source)
        if settings.constraints.validate_on_load:
            declared = declared_constraints(introspected, settings, source=source)
            violations = _check(
                opened,
                catalog,
                declared.foreign_keys,
                declared.unique,
                declared.functional_dependencies,
                declared=True,
                examples=False,
            )
            if violations:
                # Which declarations fail, and nothing read from the data: the error reaches
                # analysts, and counts or example values would be private (issue 18, finding 3).
                names = "; ".join(v.declaration for v in violations)
                raise ConstraintViolation(
                    f"{source}: {names} {'does' if len(violations) == 1 else 'do'} not hold on the data",
                    constraint=violations[0].constraint,
                    hint="the custodian can see examples with `pimento catalog --db DB --check`; fix the data "
                    "or the declaration, or set constraints.validate_on_load = false",
                )
    except BaseException:
        opened.close()
        raise
    return Database(opened, catalog, settings, opened.location)


@dataclass(frozen=True)
class FileIdentity:
    """What identifies the contents of a database file: device, inode, size and modification time.

    A file replaced (renamed over, copied anew) or written in place differs in one of them. A
    process that holds the database open (``pimento serve``) records it at start and compares it
    before each release (:meth:`check`): DuckDB keeps answering from the instance it opened first,
    i.e. from the old data, after the file was replaced.
    """

    location: str
    device: int
    inode: int
    size: int
    mtime_ns: int

    def check(self) -> None:
        """Raise :class:`DatabaseChangedError` if the file is no longer the one this identity names."""
        now = file_identity(self.location)
        if now != self:
            what = "is gone" if now is None else "was replaced or changed"
            raise DatabaseChangedError(
                f"the database file {self.location} {what} since it was opened: nothing is answered from it; nothing was spent",
                hint="the custodian restarts `pimento serve` to serve the file as it is now",
            )


#: A file's device, inode, size and mtime in nanoseconds (:func:`file_stat`).
FileStat = tuple[int, int, int, int]


def file_stat(path: str | Path | None) -> FileStat | None:
    """A file's device, inode, size and mtime (ns): what the caches keyed on a file compare (a replaced or rewritten
    file is another); None when there is no path or the file cannot be read."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def file_identity(location: str) -> FileIdentity | None:
    """The :class:`FileIdentity` of a database file; None for a server database, ``:memory:``, or a file that does not exist."""
    if _is_dsn(location) or location in ("", ":memory:"):
        return None
    found = file_stat(location)
    return None if found is None else FileIdentity(location, *found)


def validate_constraints(db: Database) -> list[Violation]:
    """Check every constraint of ``db.catalog`` (engine-declared and pimento.toml) on the data."""
    catalog = db.catalog
    keys: list[tuple[str, tuple[str, ...]]] = []
    for table in catalog.tables:
        keys.extend((table.name, u) for u in table.unique)
    engine_fks = tuple(fk for fk in catalog.foreign_keys if not fk.declared)
    declared_fks = tuple(fk for fk in catalog.foreign_keys if fk.declared)
    found = _check(db.engine, catalog, engine_fks, tuple(keys), (), declared=False, primary_keys=True)
    # Functional dependencies only ever come from pimento.toml.
    found += _check(db.engine, catalog, declared_fks, (), catalog.functional_dependencies, declared=True)
    return found


def _locate(db: str, config: str | Path | Settings | None) -> tuple[str, Settings, str]:
    """The data's location, the settings that apply, and the settings' name for messages."""
    named_by_settings = not _is_dsn(db) and (Path(db).is_dir() or Path(db).name == CONFIG_FILE_NAME)
    if isinstance(config, Settings):
        settings, source = config, "settings"
    elif config is not None:
        settings, source = load_settings(config), str(config)
    else:
        found = None if _is_dsn(db) else find_settings_file(Path(db).resolve() if Path(db).exists() else db)
        settings = load_settings(found)
        source = str(found) if found else CONFIG_FILE_NAME
    if not named_by_settings:
        return _canonical(db), settings, source
    # A folder or a pimento.toml: the data is named by [database].
    section = settings.database
    if section.url:
        return section.url, settings, source
    if not section.path:
        raise ConfigError(f"{source}: [database] names neither path nor url, so {db} does not say where the data is")
    location = settings.resolve(section.path)
    if config is None:
        # The real file's folder (links followed) must be the one that holds this pimento.toml.
        given = find_settings_file(db)
        if given is None or Path(location).resolve().parent != given.resolve().parent:
            raise ConfigError(
                f"{source}: [database] path = {section.path!r} is not beside this pimento.toml; the settings "
                "that govern a database file are the pimento.toml in the database's own folder",
                hint="pass --db the database file, or the folder that holds it and its pimento.toml",
            )
    return _canonical(location), settings, source


def _canonical(location: str) -> str:
    """A file reached through a symbolic link (or ``..``) named by its real path, other paths as given.

    The location keys the ledger file and the synthetic copy beside it: a link in another folder
    must reach the same ledger, not start a fresh budget.
    """
    if _is_dsn(location) or location in ("", ":memory:") or not Path(location).exists():
        return location
    real = Path(location).resolve()
    return str(real) if real != Path(location).absolute() else location


def _is_dsn(db: str) -> bool:
    """A URL (``postgresql://...``) or a libpq ``key=value`` string rather than a file path."""
    return "://" in db or re.match(r"^\s*[A-Za-z_]+\s*=", db) is not None


def _q(name: str) -> str:
    return quote_identifier(name)  # the double-quoted form DuckDB, SQLite and PostgreSQL share


def _cols(alias: str, columns: Sequence[str]) -> str:
    return ", ".join(f"{alias}.{_q(c)}" for c in columns)


def _check(
    engine: Engine,
    catalog: Catalog,
    fks: Sequence[ForeignKey],
    unique: Sequence[tuple[str, tuple[str, ...]]],
    fds: Sequence[FunctionalDependency],
    *,
    declared: bool,
    primary_keys: bool = False,
    examples: bool = True,
) -> list[Violation]:
    """The constraints that fail; ``examples=False`` reads no offending values (only whether one fails)."""
    found: list[Violation] = []
    if primary_keys:
        for table in catalog.tables:
            if table.primary_key:
                found += _key_violations(
                    engine, table.name, table.primary_key, "primary_key", declared, nulls=True, examples=examples
                )
    for table_name, columns in unique:
        found += _key_violations(engine, table_name, columns, "unique", declared, nulls=False, examples=examples)
    for fk in fks:
        child, parent = _q(fk.table), _q(fk.ref_table)
        not_null = " AND ".join(f"c.{_q(c)} IS NOT NULL" for c in fk.columns)
        match = " AND ".join(f"p.{_q(r)} = c.{_q(c)}" for c, r in zip(fk.columns, fk.ref_columns, strict=True))
        where = f"FROM {child} c WHERE {not_null} AND NOT EXISTS (SELECT 1 FROM {parent} p WHERE {match})"
        count = int(engine.execute(f"SELECT count(*) {where}").scalar())
        if count:
            cols = _cols("c", fk.columns)
            rows = engine.execute(f"SELECT DISTINCT {cols} {where} ORDER BY {cols} LIMIT {MAX_EXAMPLES}").rows if examples else []
            found.append(Violation("foreign_key", str(fk), count, _examples(rows), declared))
    for fd in fds:
        lhs = ", ".join(_q(c) for c in fd.lhs)
        rhs = ", ".join(_q(c) for c in fd.rhs)
        groups = (
            f"FROM (SELECT DISTINCT {lhs}, {rhs} FROM {_q(fd.table)}) d "
            f"GROUP BY {lhs} HAVING count(*) > 1"
        )
        count = int(engine.execute(f"SELECT count(*) FROM (SELECT {lhs} {groups}) g").scalar())
        if count:
            rows = engine.execute(f"SELECT {lhs} {groups} ORDER BY {lhs} LIMIT {MAX_EXAMPLES}").rows if examples else []
            found.append(Violation("functional_dependency", str(fd), count, _examples(rows), declared))
    return found


def _key_violations(
    engine: Engine, table: str, columns: tuple[str, ...], kind: str, declared: bool, *, nulls: bool, examples: bool = True
) -> list[Violation]:
    cols = ", ".join(_q(c) for c in columns)
    label = f"{table}({', '.join(columns)})"
    not_null = " AND ".join(f"{_q(c)} IS NOT NULL" for c in columns)
    groups = f"FROM {_q(table)} WHERE {not_null} GROUP BY {cols} HAVING count(*) > 1"
    count = int(engine.execute(f"SELECT count(*) FROM (SELECT {cols} {groups}) g").scalar())
    shown: tuple[Any, ...] = ()
    if count and examples:
        shown = _examples(engine.execute(f"SELECT {cols} {groups} ORDER BY {cols} LIMIT {MAX_EXAMPLES}").rows)
    if nulls:
        any_null = " OR ".join(f"{_q(c)} IS NULL" for c in columns)
        null_rows = int(engine.execute(f"SELECT count(*) FROM {_q(table)} WHERE {any_null}").scalar())
        if null_rows:
            count += null_rows
            shown = (shown + (None,))[:MAX_EXAMPLES] if examples else shown
    return [Violation(kind, label, count, shown, declared)] if count else []


def _examples(rows: Sequence[tuple[Any, ...]]) -> tuple[Any, ...]:
    return tuple(r[0] if len(r) == 1 else tuple(r) for r in rows)


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_show(v) for v in value) + ")"
    return "NULL" if value is None else repr(value)

