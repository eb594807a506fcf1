"""``pimento parse``: show the CountQuery IR of a SQL query (or the AggregateQuery IR of a grouped
COUNT, SUM or AVG), or why it is outside the class."""

from __future__ import annotations

import sys
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from pimento.cli._checks import require_database
from pimento.cli._common import console, db_option, emit_json, handle_errors, json_option, open_database

__all__ = ["parse_cmd", "register"]


@handle_errors
def parse_cmd(
    db: str = db_option(),
    sql: str = typer.Option(..., "--sql", help="The SQL query; '-' reads it from standard input."),
    dialect: str = typer.Option(None, "--dialect", help="sqlglot dialect of the input (default: generic)."),
    to: str = typer.Option(None, "--to", help="Render the IR in this sqlglot dialect (default: the engine's)."),
    json_out: bool = json_option(),
) -> None:
    """Parse a counting query (or a grouped COUNT, SUM or AVG) into the IR, or name the construct that puts it outside the class."""
    require_database(db)
    from pimento.errors import UnsupportedQuery
    from pimento.sql import parse_count_query
    from pimento.sql.render import describe

    text = sys.stdin.read() if sql == "-" else sql
    database = open_database(db)
    limit = database.settings.database.max_sql_chars
    try:
        try:
            query = parse_count_query(text, database.catalog, dialect=dialect, max_chars=limit)
        except UnsupportedQuery as exc:
            if exc.construct not in _AGGREGATE_CONSTRUCTS:
                raise
            _show_aggregate(text, database, dialect, to, json_out)
            return
    except UnsupportedQuery as exc:
        if json_out:
            emit_json(
                {
                    "supported": False,
                    "construct": exc.construct,
                    "message": exc.message,
                    "line": exc.highlight.line if exc.highlight else None,
                    "column": exc.highlight.column if exc.highlight else None,
                    "text": exc.highlight.text if exc.highlight else None,
                }
            )
            raise typer.Exit(1) from None
        console.print(f"[bold yellow]{escape(exc.message)}[/]")
        if exc.highlight is not None:
            console.print(exc.highlight.render(), highlight=False, markup=False)
        raise typer.Exit(1) from None
    info = describe(query, dialect=to or database.engine.dialect)
    if json_out:
        emit_json({"supported": True, **info})
        return
    table = Table(title="CountQuery", show_header=False)
    table.add_row("count", info["count"])
    table.add_row("relations", ", ".join(f"{r['table']} AS {r['alias']}" for r in info["relations"]))
    table.add_row("joins", "\n".join(info["joins"]) or "-")
    table.add_row("join classes", "\n".join("{" + ", ".join(c) + "}" for c in info["join_classes"]) or "-")
    table.add_row("selections", "\n".join(f"{a}: {p}" for a, p in info["selections"].items()) or "-")
    console.print(table)
    from rich.syntax import Syntax  # Pygments: imported only to print

    console.print(Syntax(query.to_sql(info["dialect"], pretty=True), "sql", word_wrap=True))


#: rejections of the counting parser that the grouped/summed parser may accept
_AGGREGATE_CONSTRUCTS = frozenset({"group_by", "other_aggregate", "multiple_outputs"})


def _show_aggregate(text: str, database: Any, dialect: str | None, to: str | None, json_out: bool) -> None:
    """Print the AggregateQuery IR of a grouped COUNT or a SUM/AVG (its errors are the caller's to show)."""
    from pimento.sql.parse import parse_aggregate_query
    from pimento.sql.render import describe_aggregate

    query = parse_aggregate_query(text, database.catalog, dialect=dialect, max_chars=database.settings.database.max_sql_chars)
    info = describe_aggregate(query, dialect=to or database.engine.dialect)
    if json_out:
        emit_json({"supported": True, **info})
        return
    table = Table(title="AggregateQuery", show_header=False)
    table.add_row("aggregate", info["aggregate"] + (f"({info['column']})" if info["column"] else ""))
    table.add_row("group by", ", ".join(info["group_by"]) or "-")
    table.add_row("relations", ", ".join(f"{r['table']} AS {r['alias']}" for r in info["relations"]))
    table.add_row("joins", "\n".join(info["joins"]) or "-")
    table.add_row("selections", "\n".join(f"{a}: {p}" for a, p in info["selections"].items()) or "-")
    table.add_row("sensitivity of", info["count"])
    console.print(table)
    from rich.syntax import Syntax  # Pygments: imported only to print

    console.print(Syntax(query.to_sql(info["dialect"], pretty=True), "sql", word_wrap=True))


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app`` (wiring only: the commands are the module-level functions above)."""
    app.command("parse")(parse_cmd)
