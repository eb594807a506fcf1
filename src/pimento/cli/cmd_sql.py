"""``pimento sql``: release a counting SQL query with differential privacy."""

from __future__ import annotations

import typer

from pimento.cli._common import console, emit_json, handle_errors

__all__ = ["describe_release", "register"]


def describe_release(data: dict) -> str:
    """One line on how an answer was released: the noise, the (DP) scale bound, the spend and what is left."""
    if data["interval_basis"] == "global_sensitivity":
        how = f"{data['mechanism']}: {data['noise']} noise of scale {data['noise_scale_upper']:.4g} (global sensitivity 1)"
    else:
        how = (
            f"{data['mechanism']}: {data['noise']} noise, scale at most {data['noise_scale_upper']:.4g} "
            f"(DP estimate from epsilon {data['epsilon_rs_bound']} of the spend)"
        )
    return (
        f"{how}; spent epsilon {data['epsilon']} delta {data['delta']}; "
        f"left epsilon {data['budget_left']['epsilon']} delta {data['budget_left']['delta']}"
    )


def register(app: typer.Typer) -> None:
    @app.command("sql")
    @handle_errors
    def sql_cmd(
        db: str = typer.Option(..., "--db", help="Database file (DuckDB/SQLite) or postgresql:// DSN."),
        sql: str = typer.Option(..., "--sql", help="One counting query: SELECT COUNT(*) FROM ... [JOIN ...] [WHERE ...]."),
        epsilon: str = typer.Option(..., "--epsilon", help="Privacy budget of this release, e.g. 0.5 (exact decimal or 1/3)."),
        delta: str = typer.Option(None, "--delta", help="(eps, delta)-DP with Laplace noise; omit for pure eps-DP."),
        analyst: str = typer.Option("default", "--analyst", help="Who is asking; charged in the ledger."),
        private: str = typer.Option(None, "--private", help="Comma-separated relations to treat as private in addition to pimento.toml's."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Answer a counting query with noise calibrated to its residual sensitivity; the ledger is charged first.

        Runs under the custodian's pimento.toml beside the database (ledger, caps, private relations).
        """
        from pimento.release.session import Session

        with Session(db, private=private.split(",") if private else None, analyst=analyst) as session:
            answer = session.release_sql(sql, epsilon, delta, analyst=analyst)
        data = answer.to_dict()
        if json_out:
            emit_json(data)
            return
        lo, hi = data["interval"]
        console.print(f"[bold]{data['value']}[/]  (95% interval {lo} .. {hi}){'  [dim]cached, no new cost[/]' if data['cached'] else ''}", highlight=False)
        console.print(describe_release(data), highlight=False)
        console.print(f"[dim]{data['sql']}[/]", highlight=False)
