"""``pimento synth``: write a DP synthetic copy of a database (same schema, valid keys)."""

from __future__ import annotations

import typer

from pimento.cli._common import console, emit_json, err_console, handle_errors, open_database

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("synth")
    @handle_errors
    def synth_cmd(
        db: str = typer.Option(..., "--db", help="Private database file (DuckDB/SQLite) or postgresql:// DSN."),
        out: str = typer.Option(..., "--out", help="The synthetic DuckDB file to write (must not exist)."),
        epsilon: str = typer.Option(..., "--epsilon", help="epsilon_syn, e.g. 1.6 (exact decimal)."),
        delta: str = typer.Option(..., "--delta", help="delta_syn, e.g. 1e-6."),
        root: str = typer.Option(None, "--root", help="Root private relation (privacy unit); default: [privacy] root."),
        seed: int = typer.Option(0, "--seed", help="Sampling seed (the DP noise never depends on it)."),
        link_context: str = typer.Option(
            None,
            "--link-context",
            help="Comma-separated Table.column of private non-root tables treated as PUBLIC link context "
            "(weakens the guarantee for those columns, see docs/synthetic-data.md); adds to [synth] link_context.",
        ),
        public_values: str = typer.Option(
            None,
            "--public-values",
            help="Comma-separated Table.column whose set of values is public (read without budget); "
            "adds to [synth] public_values.",
        ),
        no_ledger: bool = typer.Option(False, "--no-ledger", help="Do not charge the ledger (the spend is still recorded in the output)."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Generate an (epsilon, delta)-DP synthetic database that keeps every declared constraint."""
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        from pimento.synth import synthesize

        database = open_database(db)
        root_name = root or database.settings.privacy.root
        ledger = None
        if not no_ledger:
            from pimento.mechanisms.ledger import Ledger

            ledger = Ledger.for_database(db, database.settings)
        declared = database.settings.synth
        contexts = _merge(declared.link_context, link_context)
        public = _merge(declared.public_values, public_values)
        stages = {"read": "reading tables", "encode": "choosing categories", "fit": "fitting models", "sample": "sampling", "write": "writing"}
        progress = Progress(
            TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
            console=err_console, disable=json_out, transient=True,
        )
        tasks: dict[str, int] = {}

        def report(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task(stages.get(stage, stage), total=max(total, 1))
            progress.update(tasks[stage], completed=done, total=max(total, 1))

        try:
            with progress:
                result = synthesize(
                    database.engine, database.catalog, out, epsilon, delta, root=root_name, seed=seed,
                    progress=report, link_context=contexts, public_values=public, caps=dict(declared.caps) or None,
                    ledger=ledger, database=db,
                )
        finally:
            if ledger is not None:
                ledger.close()
        if json_out:
            payload = result.to_dict()
            keys = ("caps", "ties", "free_text", "budget", "dropped_in_repair", "link_context", "public_values", "link_degrees", "public_directory")
            payload["details"] = {k: result.details[k] for k in keys if k in result.details}
            emit_json(payload)
        else:
            from rich.table import Table

            table = Table(title=f"synthetic database {result.path}")
            table.add_column("table")
            table.add_column("rows", justify="right")
            for name, n in result.rows.items():
                table.add_row(name, str(n))
            console.print(table)
            console.print(
                f"spent epsilon={result.epsilon} delta={result.delta} (root {result.root}); "
                + (f"ledger charge {result.ledger_charge}" if result.ledger_charge else "not charged to a ledger (recorded in _pimento_synth_meta)")
                + f"; {result.seconds:.1f} s"
            )
        result.engine.close()


def _merge(declared: list[str], flag: str | None) -> list[str]:
    """Entries of pimento.toml, then those of a comma-separated flag (duplicates dropped)."""
    out: list[str] = []
    for item in [*declared, *(flag.split(",") if flag else [])]:
        item = item.strip()
        if item and item not in out:
            out.append(item)
    return out
