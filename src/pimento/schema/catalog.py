"""The catalog: tables, columns, keys, foreign keys, unique keys, functional dependencies.

A :class:`Catalog` is what Pimento knows about a database's schema: what the engine
reports (introspection) merged with what ``pimento.toml`` declares (private relations,
extra foreign keys, unique keys, functional dependencies). Names are matched
case-insensitively, as SQL does; the spelling stored is the database's own.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace

from pimento.errors import CatalogError

__all__ = [
    "Catalog",
    "Column",
    "ForeignKey",
    "FunctionalDependency",
    "Table",
    "normalize_type",
]

_TYPE_FAMILIES = (
    ("boolean", ("BOOL",)),
    ("integer", ("INT", "SERIAL")),
    ("real", ("REAL", "FLOA", "DOUB", "DEC", "NUMERIC")),
    ("timestamp", ("TIMESTAMP", "DATETIME")),
    ("date", ("DATE",)),
    ("time", ("TIME",)),
    ("text", ("CHAR", "TEXT", "CLOB", "STRING", "UUID", "VARCHAR")),
    ("blob", ("BLOB", "BYTEA", "BINARY")),
)


def normalize_type(raw: str) -> str:
    """Map an engine's type name to a family: integer, real, text, boolean, date, ...

    >>> normalize_type("VARCHAR(20)"), normalize_type("BIGINT"), normalize_type("double precision")
    ('text', 'integer', 'real')
    """
    upper = (raw or "").upper()
    for family, needles in _TYPE_FAMILIES:
        if any(needle in upper for needle in needles):
            return family
    return "other" if upper else "text"


@dataclass(frozen=True)
class Column:
    """A column: its name, type family, the engine's raw type, nullability, and the database's comment on it.

    ``comment`` is what ``COMMENT ON COLUMN`` stored (DuckDB, PostgreSQL; None where there is none or the
    engine has no comments): the schema's own words for the column, read by the offline policy extractor.
    It takes no part in equality or hashing, so that two catalogs that differ only in comments are equal.
    """

    name: str
    type: str = "text"
    raw_type: str = ""
    nullable: bool = True
    comment: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ForeignKey:
    """``table(columns) -> ref_table(ref_columns)``; ``declared`` if it came from pimento.toml."""

    table: str
    columns: tuple[str, ...]
    ref_table: str
    ref_columns: tuple[str, ...]
    declared: bool = False

    def __post_init__(self) -> None:
        if len(self.columns) != len(self.ref_columns) or not self.columns:
            raise CatalogError(f"foreign key {self} has mismatched column lists")

    def __str__(self) -> str:
        return f"{self.table}({', '.join(self.columns)}) -> {self.ref_table}({', '.join(self.ref_columns)})"


@dataclass(frozen=True)
class FunctionalDependency:
    """Within ``table``, the values of ``lhs`` determine the values of ``rhs``."""

    table: str
    lhs: tuple[str, ...]
    rhs: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.table}.({', '.join(self.lhs)}) -> {self.table}.({', '.join(self.rhs)})"


@dataclass(frozen=True)
class Table:
    """A relation: columns, primary key, unique keys, whether it holds private data, and its comment
    (``COMMENT ON TABLE``; None where there is none; no part of equality, as :attr:`Column.comment`)."""

    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()
    unique: tuple[tuple[str, ...], ...] = ()
    private: bool = True
    comment: str | None = field(default=None, compare=False)

    def column(self, name: str) -> Column:
        """The column called ``name`` (case-insensitive), or a CatalogError naming close matches."""
        lowered = name.lower()
        for column in self.columns:
            if column.name.lower() == lowered:
                return column
        raise CatalogError(
            f"table {self.name!r} has no column {name!r}",
            hint=_suggest(name, [c.name for c in self.columns]),
        )

    def has_column(self, name: str) -> bool:
        lowered = name.lower()
        return any(c.name.lower() == lowered for c in self.columns)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def is_key(self, columns: tuple[str, ...] | list[str]) -> bool:
        """True if ``columns`` contain the primary key or a declared unique key."""
        wanted = {c.lower() for c in columns}
        keys = [self.primary_key, *self.unique]
        return any(key and {k.lower() for k in key} <= wanted for key in keys)


@dataclass(frozen=True)
class Catalog:
    """Tables, foreign keys and functional dependencies of one database."""

    tables: tuple[Table, ...]
    foreign_keys: tuple[ForeignKey, ...] = ()
    functional_dependencies: tuple[FunctionalDependency, ...] = ()
    _index: dict[str, Table] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index = {t.name.lower(): t for t in self.tables}
        if len(index) != len(self.tables):
            raise CatalogError("two tables have the same name up to case")
        object.__setattr__(self, "_index", index)

    def table(self, name: str) -> Table:
        """The table called ``name`` (case-insensitive), or a CatalogError naming close matches."""
        found = self._index.get(name.lower())
        if found is None:
            raise CatalogError(
                f"unknown table {name!r}",
                hint=_suggest(name, [t.name for t in self.tables]) or "run `pimento catalog` to list tables",
            )
        return found

    def has_table(self, name: str) -> bool:
        return name.lower() in self._index

    @property
    def table_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tables)

    @property
    def private_tables(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tables if t.private)

    def is_private(self, name: str) -> bool:
        return self.table(name).private

    def foreign_keys_of(self, table: str) -> tuple[ForeignKey, ...]:
        """Foreign keys leaving ``table``."""
        lowered = table.lower()
        return tuple(fk for fk in self.foreign_keys if fk.table.lower() == lowered)

    def foreign_keys_into(self, table: str) -> tuple[ForeignKey, ...]:
        """Foreign keys pointing at ``table``."""
        lowered = table.lower()
        return tuple(fk for fk in self.foreign_keys if fk.ref_table.lower() == lowered)

    def dependencies_of(self, table: str) -> tuple[FunctionalDependency, ...]:
        lowered = table.lower()
        return tuple(fd for fd in self.functional_dependencies if fd.table.lower() == lowered)

    def with_private(self, names: tuple[str, ...] | list[str] | None) -> Catalog:
        """A copy where exactly ``names`` are private; ``None`` keeps the current marking."""
        if names is None:
            return self
        wanted = {self.table(n).name.lower() for n in names}
        tables = tuple(replace(t, private=t.name.lower() in wanted) for t in self.tables)
        return replace(self, tables=tables)

    def to_dict(self) -> dict:
        """A JSON-ready description (used by ``pimento catalog --json``). A table's or column's ``comment`` is
        there only where the database has one, so that a catalog without comments is described as before."""
        return {
            "tables": [
                {
                    "name": t.name,
                    "private": t.private,
                    "primary_key": list(t.primary_key),
                    "unique": [list(u) for u in t.unique],
                    "columns": [
                        {"name": c.name, "type": c.type, "raw_type": c.raw_type, "nullable": c.nullable,
                         **_commented(c.comment)}
                        for c in t.columns
                    ],
                    **_commented(t.comment),
                }
                for t in self.tables
            ],
            "foreign_keys": [
                {
                    "table": fk.table,
                    "columns": list(fk.columns),
                    "ref_table": fk.ref_table,
                    "ref_columns": list(fk.ref_columns),
                    "declared": fk.declared,
                }
                for fk in self.foreign_keys
            ],
            "functional_dependencies": [
                {"table": fd.table, "lhs": list(fd.lhs), "rhs": list(fd.rhs)} for fd in self.functional_dependencies
            ],
        }


def _commented(comment: str | None) -> dict[str, str]:
    return {} if comment is None else {"comment": comment}


def _suggest(name: str, candidates: list[str]) -> str | None:
    lowered = {c.lower(): c for c in candidates}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.6)
    if not close:
        return None
    return "did you mean " + " or ".join(repr(lowered[c]) for c in close) + "?"
