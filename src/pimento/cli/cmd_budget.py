"""``pimento budget``: privacy-budget caps, spent and left, per database and per analyst."""

from __future__ import annotations

import typer
from rich.table import Table

from pimento.cli._common import config_option, console, db_option, emit_json, handle_errors, json_option

__all__ = ["budget_cmd", "register"]


@handle_errors
def budget_cmd(
    db: str = db_option(),
    config: str = config_option(),
    json_out: bool = json_option(),
) -> None:
    """Show the privacy-budget ledger of a database: caps, spent and left per analyst."""
    from pimento.cli._ledger_common import ledger_for

    ledger, path, existed, location = ledger_for(db, config, create=False)
    try:
        summary = ledger.summary(location)
        halts = ledger.halts(location)
    finally:
        ledger.close()
    summary["ledger"] = str(path)
    summary["ledger_exists"] = existed
    summary["halted"] = halted_state(halts)
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
    for heading in ("who", "cap (eps, delta)", "spent (eps, delta)", "left (eps, delta)"):
        table.add_column(heading)

    def pair(b: dict | None) -> str:
        return "-" if b is None else f"{b['epsilon']}, {b['delta']}"

    table.add_row("[bold]database total[/]", pair(summary["cap"]), pair(summary["spent"]), pair(summary["left"]))
    for row in summary["analysts"]:
        table.add_row(row["analyst"], pair(row["cap"]), pair(row["spent"]), pair(row["left"]))
    console.print(table)
    console.print(f"answer cache: {'on' if summary['answer_cache'] else 'off'}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app`` (wiring only: the commands are the module-level functions above)."""
    app.command("budget")(budget_cmd)


def halted_state(halts: list[dict]) -> dict | None:
    """``None`` when releases go on; else the audit row of the oldest halt in force and how many are.

    Never the halt's details (they hold engine text) nor its time (`pimento audit show` has both).
    """
    if not halts:
        return None
    return {"since_audit_row": halts[0].get("seq"), "halts": len(halts)}
