"""``pimento sensitivity``: residual sensitivity of a counting query, with its T_E and Shapley values."""

from __future__ import annotations

import sys

import typer
from rich.table import Table

from pimento.cli._common import console, emit_json, handle_errors, open_database

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("sensitivity")
    @handle_errors
    def sensitivity_cmd(
        db: str = typer.Option(..., "--db", help="Database file (DuckDB/SQLite) or postgresql:// DSN."),
        sql: str = typer.Option(..., "--sql", help="The counting query; '-' reads it from standard input."),
        beta: float = typer.Option(None, "--beta", help="Smoothing parameter beta > 0."),
        epsilon: str = typer.Option(None, "--epsilon", help="Derive beta from epsilon (eps/10, or with --delta eps/(2 ln(2/delta)))."),
        delta: str = typer.Option(None, "--delta", help="Delta for (eps, delta)-DP; needs --epsilon."),
        private: str = typer.Option(None, "--private", help="Comma-separated private relations (default: pimento.toml, else all)."),
        gs: int = typer.Option(None, "--gs", help="Global sensitivity cap (default: 1 for one relation, else none)."),
        show_sql: bool = typer.Option(False, "--show-sql", help="Also print the SQL statement that computed T_E."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Residual sensitivity RS_beta of a counting query on the private database."""
        from pimento.errors import PrivacyParameterError
        from pimento.sensitivity import beta_from_epsilon, residual_sensitivity
        from pimento.sql import parse_count_query

        if (beta is None) == (epsilon is None):
            raise PrivacyParameterError("give exactly one of --beta or --epsilon", hint="e.g. --beta 0.1 or --epsilon 1 --delta 1e-6")
        if delta is not None and epsilon is None:
            raise PrivacyParameterError("--delta needs --epsilon")
        if epsilon is not None:
            try:
                beta = beta_from_epsilon(epsilon, delta)
            except ArithmeticError:
                raise PrivacyParameterError(f"cannot read epsilon {epsilon!r} / delta {delta!r} as numbers") from None
        text = sys.stdin.read() if sql == "-" else sql
        database = open_database(db, private=private)
        query = parse_count_query(text, database.catalog)
        result = residual_sensitivity(database.engine, query, database.catalog, beta, gs=gs)
        payload = result.to_dict()
        payload["sql"] = query.to_sql(database.engine.dialect)
        if show_sql:
            payload["te_sql"] = list(result.sql)
        if json_out:
            emit_json(payload)
            return
        table = Table(title=f"Residual sensitivity (beta = {result.beta:g})", show_header=False)
        table.add_row("RS (rounded up)", f"{result.rs_float:.6g}")
        table.add_row("LS (k = 0)", str(result.ls))
        table.add_row("k*", str(result.k_star))
        table.add_row("s*", ", ".join(f"{k}={v}" for k, v in result.s_star.items()) or "-")
        table.add_row("maximising relation", result.argmax or "-")
        table.add_row("private", ", ".join(result.private) or "(none)")
        table.add_row("SQL statements", str(result.count_sql_statements))
        table.add_row("seconds", f"{result.seconds:.3f}")
        console.print(table)
        te = Table(title="T_E (kept relations)")
        te.add_column("E")
        te.add_column("T_E", justify="right")
        for key, value in result.te.items():
            te.add_row(key, str(value))
        console.print(te)
        sh = Table(title="Shapley attribution")
        sh.add_column("relation")
        sh.add_column("phi", justify="right")
        for key, value in result.shapley.items():
            sh.add_row(key, f"{value:.6g}")
        console.print(sh)
