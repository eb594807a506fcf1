"""Which columns a join may equate: only those whose equality is the equality T_E groups by.

Residual sensitivity counts, for each join class, join results per *value* of the class (a GROUP
BY on each column, then equality between the groups). That is an upper bound of local
sensitivity only if two stored values join exactly when they fall in the same group, i.e. the
engine's ``a.x = b.y`` must be the identity on a common set of values, applied without a lossy
conversion. An implicit cast breaks this: ``'1'``, ``'01'`` and ``'001'`` are three groups of a
VARCHAR column and all equal the INTEGER 1; two BIGINTs above 2^53 are two groups and both equal
one DOUBLE; SQLite applies numeric affinity to a TEXT column compared with an INTEGER column. A
collation does too: under ``COLLATE NOCASE`` ``'x'`` and ``'X'`` are two groups of the other
column and both join the same row.

So a join class is accepted only when every column in it has the same *join type*
(:func:`join_type`), a key chosen so that columns with equal keys compare without a conversion
that merges values, on DuckDB, SQLite and PostgreSQL alike (the catalog does not say which engine
it came from, so the rule holds for all three at once). The key is the pair (SQLite affinity,
family):

* ``int``: signed integer types up to 64 bits (TINYINT .. BIGINT, INT2/4/8, SERIAL spellings):
  DuckDB and PostgreSQL widen exactly; SQLite compares stored values without conversion;
* ``text``: VARCHAR, TEXT, CHAR(n) as DuckDB and SQLite read it, CHARACTER VARYING, CLOB: byte
  equality (no padding) on every engine, no conversion between them;
* ``float``: REAL, FLOAT, DOUBLE (PRECISION), FLOAT4/8: float4 widens to float8 exactly;
* ``decimal(p,s)``: DECIMAL and NUMERIC with the same precision and scale (DuckDB turns
  DECIMALs whose common type needs more than 38 digits into DOUBLE);
* anything else: the exact type as the engine spells it (DATE, TIMESTAMP, TIMESTAMP WITH TIME
  ZONE, BOOLEAN, UUID, BLOB, HUGEINT, PostgreSQL ``character(n)`` ...). Two columns of the same
  type never convert.

Refused: different keys in one class (INTEGER vs DOUBLE, INTEGER vs DECIMAL, VARCHAR vs DATE,
VARCHAR vs UUID, TIMESTAMP vs TIMESTAMP_NS or WITH TIME ZONE, ``character(n)`` vs ``varchar``,
a SQLite column without a type vs a TEXT one), nested types (arrays, STRUCT, MAP, UNION), and a
type that names a collation. Collations the catalog does not show are checked by the engine
layer (``pimento.sensitivity`` asks the engine). The rule depends on the schema only, never on
the data, so a refusal discloses nothing about the private rows.

``src/pimento/sensitivity/PROOF.md`` (section 1, "Join equality") argues why equal keys suffice.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pimento.errors import UnsupportedQuery
from pimento.schema import Catalog, Column
from pimento.sql.ir import Attribute, CountQuery

__all__ = ["JOIN_TYPES_CONSTRUCT", "check_join_types", "join_type", "sqlite_affinity"]

#: The ``UnsupportedQuery.construct`` of a refused join class.
JOIN_TYPES_CONSTRUCT = "mixed_type_join"

_SIGNED_INTEGERS = frozenset(
    {
        "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "BIGINT", "INT1", "INT2", "INT4", "INT8",
        "SERIAL", "SERIAL2", "SERIAL4", "SERIAL8", "SMALLSERIAL", "BIGSERIAL", "BIG INT", "UNSIGNED BIG INT",
    }
)  # fmt: skip
_TEXT = frozenset(
    {"VARCHAR", "TEXT", "CHAR", "CHARACTER VARYING", "VARYING CHARACTER", "NVARCHAR", "NCHAR", "NATIVE CHARACTER", "CLOB"}
)
_FLOAT = frozenset({"REAL", "FLOAT", "FLOAT4", "FLOAT8", "DOUBLE", "DOUBLE PRECISION"})
_DECIMAL = frozenset({"DECIMAL", "NUMERIC"})
_NESTED = re.compile(r"\[|\b(STRUCT|MAP|UNION|LIST|ARRAY|ROW)\b")


def sqlite_affinity(raw: str) -> str:
    """SQLite's column affinity for a declared type (rules 1-5 of "Datatypes In SQLite", 3.1).

    >>> sqlite_affinity("VARCHAR(20)"), sqlite_affinity("STRING"), sqlite_affinity("FLOATING POINT"), sqlite_affinity("")
    ('TEXT', 'NUMERIC', 'INTEGER', 'BLOB')
    """
    upper = raw.upper()
    if "INT" in upper:
        return "INTEGER"
    if any(k in upper for k in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if "BLOB" in upper or not upper.strip():
        return "BLOB"
    if any(k in upper for k in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def join_type(column: Column) -> tuple[str, str] | None:
    """The join key of a column (see the module docstring), or None when no join on it is accepted.

    A catalog built by hand (no engine type) keys on its declared family.

    >>> join_type(Column("a", "integer", "BIGINT")) == join_type(Column("b", "integer", "int4"))
    True
    >>> join_type(Column("a", "text", "VARCHAR")) == join_type(Column("b", "integer", "INTEGER"))
    False
    """
    raw = " ".join((column.raw_type or "").upper().split())
    if not raw:
        if column.type != "text":
            return ("family", column.type)  # a hand-made catalog: its declared family is all we know
        return ("BLOB", "untyped")  # SQLite: no declared type, no affinity (or a hand-made text column)
    if "COLLATE" in raw or _NESTED.search(raw):
        return None
    affinity = sqlite_affinity(raw)
    base = re.sub(r"\s*\(.*\)\s*", " ", raw).strip()  # VARCHAR(20) -> VARCHAR, NUMERIC(10, 2) -> NUMERIC
    if base in _SIGNED_INTEGERS:
        return (affinity, "int")
    if base in _TEXT:
        return (affinity, "text")
    if base in _FLOAT:
        return (affinity, "float")
    if base in _DECIMAL:
        args = re.sub(r"\s", "", raw[len(base) :])  # "(10,2)" or ""
        return (affinity, f"decimal{args}")
    if base in ("CHARACTER", "BPCHAR"):
        return (affinity, "bpchar")  # PostgreSQL char(n): trailing blanks are insignificant
    return (affinity, raw)


def check_join_types(query: CountQuery, catalog: Catalog) -> CountQuery:
    """``query`` itself, or :class:`UnsupportedQuery` if a join class equates columns of different join types.

    Columns of tables the catalog does not hold are not checked (the parser resolves every table
    against the catalog, so this only happens for IR built by hand).
    """
    for klass in query.equivalence_classes:
        typed: list[tuple[Attribute, Column]] = []
        for attr in sorted(klass):
            column = _column(query, catalog, attr)
            if column is not None:
                typed.append((attr, column))
        for attr, column in typed:
            if join_type(column) is None:
                raise UnsupportedQuery(
                    JOIN_TYPES_CONSTRUCT,
                    f"join on {attr} of type {column.raw_type}: a join column of a nested type or with "
                    "a collation compares values that a count by value keeps apart",
                    hint="join on a column of a plain scalar type without COLLATE",
                )
        keys = {join_type(column) for _, column in typed}
        if len(keys) > 1:
            raise UnsupportedQuery(
                JOIN_TYPES_CONSTRUCT,
                "join between columns of different types: "
                + _describe(typed)
                + "; the engine converts one side before comparing, which can make distinct values equal",
                hint="store the joined columns with the same type (or join other columns); a CAST in the "
                "join condition is outside the counting class",
            )
    return query


def _column(query: CountQuery, catalog: Catalog, attr: Attribute) -> Column | None:
    table = query.relation(attr.alias).table
    if not catalog.has_table(table):
        return None
    entry = catalog.table(table)
    return entry.column(attr.column) if entry.has_column(attr.column) else None


def _describe(typed: Iterable[tuple[Attribute, Column]]) -> str:
    return ", ".join(f"{attr} ({column.raw_type or column.type})" for attr, column in typed)
