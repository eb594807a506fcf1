"""``pimento authorize``: CI mode, an analyst query answered over the authorized data of a context.

Analyst-facing: the output holds the public inputs (context, policy name, SQL) and the
query's result on the authorized data, nothing else. Which norms decided and how many cells
they withheld is private; the custodian sees it with ``pimento policy explain``.
"""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from pimento.cli._common import console, emit_json, handle_errors

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("authorize")
    @handle_errors
    def authorize_cmd(
        db: str = typer.Option(..., "--db", help="Database (the one the policy was compiled against)."),
        policy: str = typer.Option(..., "--policy", help="Compiled policy (JSON from `pimento policy compile`)."),
        sender: str = typer.Option(..., "--sender", help="Sender identity, KIND:ID (e.g. employee:10)."),
        recipient: str = typer.Option(..., "--recipient", help="Recipient (querier) identity, KIND:ID."),
        purpose: str = typer.Option(..., "--purpose", help="Declared purpose (a value listed in the policy)."),
        sql: str = typer.Option(..., "--sql", help="The analyst query (any single SELECT the engine runs)."),
        config: str = typer.Option(None, "--config", help="pimento.toml to use (default: the one beside --db)."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Answer SQL with only the cells the policy authorizes for (sender, recipient, purpose).

        Prints the authorized result only; unauthorized cells read NULL, rows without an
        authorized cell are absent. Diagnostics are a custodian tool: `pimento policy explain`.
        """
        from pimento.cli.cmd_policy import load_compiled
        from pimento.engines.database import load_database
        from pimento.policy import Enforcer

        compiled = load_compiled(policy)
        database = load_database(db, config=config)
        try:
            enforcer = Enforcer(compiled, database.engine, database.catalog)
            context = enforcer.context(sender, recipient, purpose)
            payload = enforcer.authorize(context, sql).to_dict()
        finally:
            database.close()
        if json_out:
            emit_json(payload)
            return
        ctx = payload["context"]
        console.print(f"[bold]{ctx['sender']} -> {ctx['recipient']}[/] for {ctx['purpose']} "
                      f"under policy {payload['policy']}", highlight=False)
        table = Table(title=f"{len(payload['rows'])} rows (unauthorized cells are NULL)")
        for c in payload["columns"]:
            table.add_column(str(c))
        for row in payload["rows"][:50]:
            table.add_row(*["[dim]NULL[/]" if v is None else escape(str(v)) for v in row])
        console.print(table)
        if len(payload["rows"]) > 50:
            console.print(f"... {len(payload['rows']) - 50} more rows (use --json)")
