"""Quoting identifiers: the one function every layer uses to put a table or column name into SQL.

sqlglot quotes for the dialect (double quotes in DuckDB, SQLite and PostgreSQL, backticks in
Spark) and escapes the quote character inside the name, so a name with quotes, spaces, a
keyword or non-ASCII letters reaches the engine as exactly that name.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp

__all__ = ["quote_identifier", "quote_identifiers"]


def quote_identifier(name: str, dialect: str = "duckdb") -> str:
    """``name`` as a quoted identifier of ``dialect``.

    >>> quote_identifier('we"ird table')
    '"we""ird table"'
    >>> quote_identifier("select", "spark")
    '`select`'
    """
    return exp.to_identifier(name, quoted=True).sql(dialect=dialect)


def quote_identifiers(names: Iterable[str], dialect: str = "duckdb") -> str:
    """Comma-separated quoted identifiers (a column list).

    >>> quote_identifiers(["a", "b c"])
    '"a", "b c"'
    """
    return ", ".join(quote_identifier(n, dialect) for n in names)
