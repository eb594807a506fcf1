"""``pimento budget``: privacy-budget caps, spent and left, per database and per analyst."""

from __future__ import annotations

import typer
from rich.table import Table

from pimento.cli._common import config_option, console, db_option, emit_json, handle_errors, json_option

__all__ = ["BINDS_WORDS", "binds_of", "budget_cmd", "register"]


@handle_errors
def budget_cmd(
    db: str = db_option(),
    config: str = config_option(),
    json_out: bool = json_option(),
) -> None:
    """Show the privacy-budget ledger of a database: caps, spent and left per analyst."""
    from pimento.cli._checks import require_database

    require_database(db)
    from pimento.cli._ledger_common import ledger_for
    from pimento.mechanisms.caps import cap_statement

    ledger, path, existed, location = ledger_for(db, config, create=False)
    try:
        summary = ledger.summary(location)
        halts = ledger.halts(location)
    finally:
        ledger.close()
    summary["ledger"] = str(path)
    summary["ledger_exists"] = existed
    summary["halted"] = halted_state(halts)
    summary["analyst_caps"] = cap_statement(ledger.settings)
    for row in summary["analysts"]:
        row["binds"] = binds_of(row)
    if json_out:
        emit_json(summary)
        return
    console.print(f"[bold]{summary['database']}[/]  ledger: {path}{'' if existed else ' (no spend yet)'}", highlight=False)
    if summary["halted"] is not None:
        since = summary["halted"]
        console.print(
            f"[bold red]releases halted[/] since audit row {since['since_audit_row'] or '-'}: a release failed "
            "after its charge; every release request is refused "
            "until the custodian resumes (`pimento audit show` says why, `pimento audit resume --db DB` resumes)",
            highlight=False, soft_wrap=True,
        )
    table = Table(show_lines=False)
    for heading in ("who", "cap (eps, delta)", "spent (eps, delta)", "left (eps, delta)", "binds"):
        table.add_column(heading)

    def pair(b: dict | None) -> str:
        return "-" if b is None else f"{b['epsilon']}, {b['delta']}"

    table.add_row("[bold]database total[/]", pair(summary["cap"]), pair(summary["spent"]), pair(summary["left"]), "")
    for row in summary["analysts"]:
        table.add_row(row["analyst"], pair(row["cap"]), pair(row["spent"]), pair(row["left"]), BINDS_WORDS.get(row["binds"] or "", "-"))
    console.print(table)
    console.print(f"caps: {summary['analyst_caps']}", highlight=False, soft_wrap=True, markup=False)
    console.print(f"answer cache: {'on' if summary['answer_cache'] else 'off'}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app`` (wiring only: the commands are the module-level functions above)."""
    app.command("budget")(budget_cmd)


#: How the table says which cap limits what an analyst has left.
BINDS_WORDS = {"analyst": "own cap", "database": "database cap"}


def binds_of(row: dict) -> str | None:
    """Which cap binds for an analyst row of :meth:`Ledger.summary` (:func:`pimento.mechanisms.caps.binding`);
    ``None`` for the synthetic copies' row, which has no cap of its own."""
    from pimento.mechanisms.budget import Budget
    from pimento.mechanisms.caps import binding

    if row.get("cap") is None or row.get("left") is None:
        return None
    cap, spent, left = (Budget.from_text(row[k]["epsilon"], row[k]["delta"]) for k in ("cap", "spent", "left"))
    return binding(cap, spent, left)


def halted_state(halts: list[dict]) -> dict | None:
    """``None`` when releases go on; else the audit row of the oldest halt in force and how many are.

    Never the halt's details (they hold engine text) nor its time (`pimento audit show` has both).
    """
    if not halts:
        return None
    return {"since_audit_row": halts[0].get("seq"), "halts": len(halts)}
