"""``pimento sensitivity``: residual sensitivity of a counting query, with its T_E and Shapley values.

A custodian tool: it prints exact quantities of the private database (T_E, RS, LS), which no
analyst may see (they are deterministic functions of the data; one T_E can be one patient's
number of visits). Every run is written to the audit log, and a warning goes to stderr.
"""

from __future__ import annotations

import sys

import typer
from rich.table import Table

from pimento.cli._checks import check_number_text, require_database
from pimento.cli._common import console, emit_json, err_console, handle_errors, open_database

__all__ = ["CUSTODIAN_WARNING", "register", "sensitivity_cmd"]

#: Printed on stderr by every run (and the first line of the command's help).
CUSTODIAN_WARNING = "custodian tool: shows private data, not for analysts"


@handle_errors
def sensitivity_cmd(
    db: str = typer.Option(..., "--db", help="Database file (DuckDB/SQLite) or postgresql:// DSN."),
    sql: str = typer.Option(..., "--sql", help="The counting query; '-' reads it from standard input."),
    beta: float = typer.Option(None, "--beta", help="Smoothing parameter beta > 0."),
    epsilon: str = typer.Option(None, "--epsilon", help="Use the beta a release at this epsilon (and --delta) uses: the mechanism's, after the custodian's [release] rs_bound_share."),
    delta: str = typer.Option(None, "--delta", help="Delta for (eps, delta)-DP; needs --epsilon."),
    private: str = typer.Option(None, "--private", help="Comma-separated private relations (default: pimento.toml, else all)."),
    gs: int = typer.Option(None, "--gs", help="Global sensitivity cap (default: 1 for one relation, else none)."),
    show_sql: bool = typer.Option(False, "--show-sql", help="Also print the SQL statement that computed T_E."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    from pimento.errors import PimentoError, PrivacyParameterError

    if (beta is None) == (epsilon is None):
        raise PrivacyParameterError("give exactly one of --beta or --epsilon", hint="e.g. --beta 0.1 or --epsilon 1 --delta 1e-6")
    if delta is not None and epsilon is None:
        raise PrivacyParameterError("--delta needs --epsilon")
    require_database(db)
    check_number_text(epsilon, "epsilon")
    check_number_text(delta, "delta")
    from pimento.mechanisms.ledger import Ledger
    from pimento.sensitivity import residual_sensitivity
    from pimento.sql import parse_count_query

    text = sys.stdin.read() if sql == "-" else sql
    database = open_database(db, private=private)
    if epsilon is not None:
        # The beta a release at (epsilon, delta) uses: the mechanism's, after the custodian's
        # share of epsilon for the DP bound of RS ([release] rs_bound_share).
        from pimento.mechanisms import mechanism_for

        try:
            beta = mechanism_for(epsilon, delta, share=database.settings.release.rs_bound_share).beta_float()
        except ArithmeticError:
            database.close()
            raise PrivacyParameterError(f"cannot read epsilon {epsilon!r} / delta {delta!r} as numbers") from None
        except PimentoError:
            database.close()
            raise
    location = str(database.location)
    asked = {"sql": text, "beta": beta, "private": private, "gs": gs}
    with Ledger.for_database(location, database.settings) as ledger:
        try:
            query = parse_count_query(text, database.catalog)
            result = residual_sensitivity(database.engine, query, database.catalog, beta, gs=gs)
        except PimentoError as exc:
            ledger.record_custodian_action(location, "sensitivity", {**asked, "error": exc.one_line()})
            raise
        payload = result.to_dict()
        payload["sql"] = query.to_sql(database.engine.dialect)
        # Recorded before anything is shown: the custodian's log holds what was asked and what was seen.
        ledger.record_custodian_action(location, "sensitivity", {**asked, "result": payload})
    # One line on stderr before private values are shown (a failed run prints only its error line).
    err_console.print(
        f"[bold yellow]warning[/]: pimento sensitivity is a {CUSTODIAN_WARNING}; this run is recorded in the audit log",
        highlight=False,
        soft_wrap=True,
    )
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
    for key, count in result.te.items():
        te.add_row(key, str(count))
    console.print(te)
    sh = Table(title="Shapley attribution")
    sh.add_column("relation")
    sh.add_column("phi", justify="right")
    for key, value in result.shapley.items():
        sh.add_row(key, f"{value:.6g}")
    console.print(sh)


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app`` (wiring only: the commands are the module-level functions above)."""
    app.command("sensitivity", help=f"{CUSTODIAN_WARNING.capitalize()}. Residual sensitivity RS_beta of a counting query on the private database, with its T_E values and Shapley attribution; every run is written to the audit log.")(sensitivity_cmd)
