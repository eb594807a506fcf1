"""``pimento catalog``: tables, columns, keys, foreign keys, FDs and private flags of a database."""

from __future__ import annotations

import typer
from rich.table import Table

from pimento.cli._common import console, emit_json, handle_errors, open_database

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("catalog")
    @handle_errors
    def catalog_cmd(
        db: str = typer.Option(..., "--db", help="Database file (DuckDB/SQLite) or postgresql:// DSN."),
        private: str = typer.Option(
            None, "--private", help="Comma-separated private relations (overrides pimento.toml)."
        ),
        config: str = typer.Option(None, "--config", help="pimento.toml to use (default: the one beside --db)."),
        check: bool = typer.Option(
            False, "--check", help="Also check every key, foreign key and FD against the data; exit 1 if one fails."
        ),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Show what Pimento knows about a database's schema (introspection merged with pimento.toml)."""
        from pimento.engines.database import validate_constraints

        database = open_database(db, private=private, config=config)
        try:
            catalog = database.catalog
            violations = validate_constraints(database) if check else None
        finally:
            database.close()
        if json_out:
            payload = {"location": database.location, "engine": database.engine.name, **catalog.to_dict()}
            if violations is not None:
                payload["violations"] = [v.to_dict() for v in violations]
            emit_json(payload)
        else:
            _show(database, catalog, violations)
        if violations:
            raise typer.Exit(1)


def _show(database, catalog, violations) -> None:
    console.print(f"[bold]{database.location}[/] ({database.engine.name})", highlight=False)
    tables = Table(title="Relations", show_lines=True)
    for heading in ("relation", "private", "columns", "primary key", "unique"):
        tables.add_column(heading)
    for table in catalog.tables:
        columns = "\n".join(
            f"{c.name} [dim]{c.raw_type or c.type}{'' if c.nullable else ' NOT NULL'}[/]" for c in table.columns
        )
        tables.add_row(
            table.name,
            "[red]private[/]" if table.private else "[green]public[/]",
            columns,
            ", ".join(table.primary_key) or "-",
            "\n".join("(" + ", ".join(u) + ")" for u in table.unique) or "-",
        )
    console.print(tables)
    if catalog.foreign_keys:
        fks = Table(title="Foreign keys")
        fks.add_column("foreign key")
        fks.add_column("origin")
        for fk in catalog.foreign_keys:
            fks.add_row(str(fk), "pimento.toml" if fk.declared else "database")
        console.print(fks)
    else:
        console.print("no foreign keys")
    if catalog.functional_dependencies:
        fds = Table(title="Functional dependencies (pimento.toml)")
        fds.add_column("dependency")
        for fd in catalog.functional_dependencies:
            fds.add_row(str(fd))
        console.print(fds)
    if violations is not None:
        if not violations:
            console.print("[green]all constraints hold on the data[/]")
        for violation in violations:
            console.print(f"[bold red]violation:[/] {violation.message}", highlight=False)
