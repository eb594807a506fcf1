"""``pimento audit``: show and verify the hash-chained audit log of releases."""

from __future__ import annotations

import typer
from rich.table import Table

from pimento.cli._common import console, emit_json, err_console, handle_errors

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    audit = typer.Typer(help="Show and verify the append-only, hash-chained audit log of releases.", no_args_is_help=True)
    app.add_typer(audit, name="audit")

    @audit.command("verify")
    @handle_errors
    def verify_cmd(
        db: str = typer.Option(..., "--db", help="Database file (DuckDB/SQLite) or postgresql:// DSN."),
        config: str = typer.Option(None, "--config", help="pimento.toml to use (default: the one beside --db)."),
        expect_head: str = typer.Option(None, "--expect-head", help="Last hash recorded elsewhere; detects a truncated log."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Recompute the hash chain; exit 1 if any row was edited, deleted, reordered or truncated."""
        from pimento.cli._ledger_common import ledger_for

        ledger, _path, _existed = ledger_for(db, config, create=False)
        try:
            report = ledger.verify_audit(expect_head=expect_head)
        finally:
            ledger.close()
        if json_out:
            emit_json(report.to_dict())
        elif report.ok:
            console.print(f"[green]ok[/]: {report.rows} rows, chain intact, head {report.head}", highlight=False)
        else:
            err_console.print(f"[bold red]audit log tampered[/]: {len(report.problems)} problem(s) in {report.rows} rows", highlight=False)
            for p in report.problems:
                err_console.print(f"  row {p.seq if p.seq is not None else '-'}: {p.kind}: {p.detail}", highlight=False)
        if not report.ok:
            raise typer.Exit(1)

    @audit.command("show")
    @handle_errors
    def show_cmd(
        db: str = typer.Option(..., "--db", help="Database file (DuckDB/SQLite) or postgresql:// DSN."),
        config: str = typer.Option(None, "--config", help="pimento.toml to use (default: the one beside --db)."),
        limit: int = typer.Option(20, "--limit", min=0, help="Show the last N rows (0: all)."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """List the latest releases: time, analyst, question, SQL, mode, eps, delta, noise scale, released value."""
        from pimento.cli._ledger_common import ledger_for

        ledger, _path, _existed = ledger_for(db, config, create=False)
        try:
            rows = ledger.audit_rows(limit=limit or None)
        finally:
            ledger.close()
        if json_out:
            emit_json(rows)
            return
        table = Table(show_lines=True)
        for heading in ("#", "time (UTC)", "analyst", "eps, delta", "noise, scale", "value"):
            table.add_column(heading, no_wrap=True)
        table.add_column("question / SQL", ratio=1)
        for r in rows:
            what = (f"{r['question']}\n" if r.get("question") else "") + f"[dim]{r['sql']}[/]"
            table.add_row(
                str(r["seq"]), r["time"][5:19].replace("T", " "), r["analyst"], f"{r['epsilon']}, {r['delta']}", f"{r['noise']}, {r['scale']}", r["value"], what
            )
        console.print(table)
