"""``pimento catalog``: tables, columns, keys, foreign keys, FDs and private flags of a database."""

from __future__ import annotations

import typer
from rich.table import Table

from pimento.cli._checks import require_database
from pimento.cli._common import (
    console,
    db_option,
    emit_json,
    err_console,
    handle_errors,
    json_option,
    open_custodian_database,
    split_names,
)

__all__ = ["catalog_cmd", "register"]


@handle_errors
def catalog_cmd(
    db: str = db_option(),
    private: str = typer.Option(
        None, "--private", help="Comma-separated relations to treat as private in addition to pimento.toml's."
    ),
    config: str = typer.Option(
        None, "--config", help="Custodian tool: a pimento.toml to use instead of the one beside --db."
    ),
    check: bool = typer.Option(
        False,
        "--check",
        help="Custodian tool: also check every key, foreign key and FD against the data, showing counts and "
        "example values (private data; written to the audit log); exit 1 if one fails.",
    ),
    json_out: bool = json_option(),
) -> None:
    """Show what Pimento knows about a database's schema (introspection merged with pimento.toml),
    and which relations are private and why. With --check it is a custodian tool."""
    require_database(db)
    from pimento.engines.database import validate_constraints
    from pimento.schema.merge import privacy_marks

    database = open_custodian_database(db, private=private, config=config)
    try:
        catalog = database.catalog
        marks = {m.relation: m for m in privacy_marks(catalog, database.settings, private=split_names(private))}
        violations = None
        if check:
            violations = validate_constraints(database)
            _audit(database, config, violations)
    finally:
        database.close()
    if json_out:
        payload = {"location": database.location, "engine": database.engine.name, **catalog.to_dict()}
        for table in payload["tables"]:
            table["private_reason"] = marks[table["name"]].reason
        if violations is not None:
            payload["violations"] = [v.to_dict() for v in violations]
        emit_json(payload)
    else:
        _show(database, catalog, marks, violations)
    if violations:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app`` (wiring only: the commands are the module-level functions above)."""
    app.command("catalog")(catalog_cmd)


def _audit(database, config: str | None, violations) -> None:
    """Write the use of ``--check`` (a custodian tool: it shows private data) to the audit log."""
    from pimento.mechanisms import Ledger

    ledger = Ledger.for_database(str(database.location), database.settings)
    try:
        ledger.record_custodian_action(
            str(database.location),
            "catalog --check",
            {"config": config, "failing": [v.declaration for v in violations]},
        )
    finally:
        ledger.close()


def _show(database, catalog, marks, violations) -> None:
    console.print(f"[bold]{database.location}[/] ({database.engine.name})", highlight=False)
    tables = Table(title="Relations", show_lines=True)
    for heading in ("relation", "private (why)", "columns", "primary key", "unique"):
        tables.add_column(heading)
    for table in catalog.tables:
        columns = "\n".join(
            f"{c.name} [dim]{c.raw_type or c.type}{'' if c.nullable else ' NOT NULL'}[/]" for c in table.columns
        )
        tables.add_row(
            table.name,
            ("[red]private[/]" if table.private else "[green]public[/]") + f"\n[dim]{marks[table.name].reason}[/]",
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
        err_console.print("[bold yellow]custodian tool: the violations shown contain private data (counts, example values)[/]", highlight=False)
        if not violations:
            console.print("[green]all constraints hold on the data[/]")
        for violation in violations:
            console.print(f"[bold red]violation:[/] {violation.message}", highlight=False)
