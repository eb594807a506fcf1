"""``pimento sql``: release a counting SQL query with differential privacy."""

from __future__ import annotations

import typer

from pimento.cli._common import console, emit_json, handle_errors

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("sql")
    @handle_errors
    def sql_cmd(
        db: str = typer.Option(..., "--db", help="Database file (DuckDB/SQLite) or postgresql:// DSN."),
        sql: str = typer.Option(..., "--sql", help="One counting query: SELECT COUNT(*) FROM ... [JOIN ...] [WHERE ...]."),
        epsilon: str = typer.Option(..., "--epsilon", help="Privacy budget of this release, e.g. 0.5 (exact decimal or 1/3)."),
        delta: str = typer.Option(None, "--delta", help="(eps, delta)-DP with Laplace noise; omit for pure eps-DP."),
        analyst: str = typer.Option("default", "--analyst", help="Who is asking; charged in the ledger."),
        private: str = typer.Option(None, "--private", help="Comma-separated private relations (overrides pimento.toml)."),
        config: str = typer.Option(None, "--config", help="pimento.toml to use (default: the one beside --db)."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Answer a counting query with noise calibrated to its residual sensitivity; the ledger is charged first."""
        from pimento.release.session import Session

        with Session(db, config=config, private=private.split(",") if private else None, analyst=analyst) as session:
            answer = session.release_sql(sql, epsilon, delta, analyst=analyst)
        data = answer.to_dict()
        if json_out:
            emit_json(data)
            return
        lo, hi = data["interval"]
        console.print(f"[bold]{data['value']}[/]  (95% interval {lo} .. {hi}){'  [dim]cached, no new cost[/]' if data['cached'] else ''}", highlight=False)
        console.print(
            f"noise {data['noise']} scale {data['scale']:.4g} (rs {data['rs']:.4g}), spent epsilon {data['epsilon']} delta {data['delta']}; "
            f"left epsilon {data['budget_left']['epsilon']} delta {data['budget_left']['delta']}",
            highlight=False,
        )
        console.print(f"[dim]{data['sql']}[/]", highlight=False)
