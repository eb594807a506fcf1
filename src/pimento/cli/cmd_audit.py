"""``pimento audit``: show and verify the hash-chained audit log of releases."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from pimento.cli._common import config_option, console, db_option, emit_json, err_console, handle_errors, json_option

__all__ = ["register", "resume_cmd", "show_cmd", "verify_cmd"]


@handle_errors
def verify_cmd(
    db: str = db_option(),
    config: str = config_option(),
    expect_head: str = typer.Option(None, "--expect-head", help="Last hash recorded elsewhere; detects a truncated log."),
    json_out: bool = json_option(),
) -> None:
    """Check the ledger and its audit log; exit 1 if anything was edited, deleted, reordered or truncated.

    A ledger file that is damaged (a malformed page, bytes that are not SQLite) is an error
    (exit 2, LedgerIntegrityError) before anything else is read. Then it closes (with an audit row "aborted, nothing released") every pending charge whose
    process is gone; then recomputes the audit chain and the chain over the charges, checks
    that every charge has exactly one audit row (or is still pending) with its budget, and
    compares both heads with the witness file beside the ledger.
    """
    from pimento.cli._checks import require_database

    require_database(db)
    from pimento.cli._ledger_common import ledger_for

    ledger, _path, _existed, _location = ledger_for(db, config, create=False)
    try:
        ledger.check_file()
        closed = ledger.close_abandoned() if ledger.verify_audit().ok else 0
        report = ledger.verify_audit(expect_head=expect_head)
    finally:
        ledger.close()
    if json_out:
        emit_json({**report.to_dict(), "closed_abandoned": closed})
    elif report.ok:
        console.print(
            f"[green]ok[/]: {report.rows} audit rows, {report.charges} charges ({report.pending} pending), chains intact, head {report.head}"
            + (f"; closed {closed} abandoned charge(s) as aborted" if closed else ""),
            highlight=False,
        )
        for note in report.notes:
            console.print(f"note: {note}", highlight=False)
    else:
        err_console.print(f"[bold red]audit log tampered[/]: {len(report.problems)} problem(s) in {report.rows} rows", highlight=False)
        for p in report.problems:
            err_console.print(f"  row {p.seq if p.seq is not None else '-'}: {p.kind}: {p.detail}", highlight=False)
    if not report.ok:
        raise typer.Exit(1)


@handle_errors
def resume_cmd(
    db: str = db_option(),
    config: str = config_option(),
    note: str = typer.Option(None, "--note", help="Why the releases may go on (kept in the audit row of the resume)."),
    json_out: bool = json_option(),
) -> None:
    """Resume the releases on a halted deployment; prints what halted it.

    A release that failed after its charge halts the deployment: every release request of every
    analyst is then refused with one fixed message until this command (an audited custodian
    action) lifts the halt. Look at the failure first (the rows printed here, `pimento audit
    show`): each resume lets a failure that depends on the data be observed once more.
    """
    from pimento.cli._checks import require_database

    require_database(db)
    from pimento.cli._ledger_common import ledger_for

    ledger, _path, existed, location = ledger_for(db, config, create=False)
    try:
        lifted = ledger.resume(location, note) if existed else []
    finally:
        ledger.close()
    if json_out:
        emit_json({"resumed": bool(lifted), "halts": lifted})
        return
    if not lifted:
        console.print("not halted: the releases on this deployment go on; nothing was written", highlight=False)
        return
    err_console.print(
        "[bold yellow]warning[/]: the halts below hold private data (engine text), for the custodian only", highlight=False, soft_wrap=True
    )
    for row in lifted:
        details = row.get("details") or {}
        what = details.get("error") or row.get("detail") or "-"
        console.print(
            f"halted at audit row {row.get('seq', '-')} ({row.get('time', '-')}): charge {row.get('failed_charge') or '-'}, "
            f"analyst {details.get('analyst') or '-'}, sql {details.get('sql') or '-'}: {what}",
            highlight=False, soft_wrap=True, markup=False,
        )
    console.print(f"resumed: releases on {location} go on" + (f" (note: {note})" if note else ""), highlight=False, markup=False)


@handle_errors
def show_cmd(
    db: str = db_option(),
    config: str = config_option(),
    limit: int = typer.Option(20, "--limit", min=0, help="Show the last N rows (0: all)."),
    json_out: bool = json_option(),
) -> None:
    """Custodian tool: shows private data, not for analysts. List the latest rows: releases (time,
    analyst, question, SQL, eps, delta, noise, value, and the private quantities kept for the
    custodian), failures, aborts, synthetic-copy charges and custodian-tool uses."""
    from pimento.cli._checks import require_database

    require_database(db)
    from pimento.cli._ledger_common import ledger_for

    ledger, _path, _existed, _location = ledger_for(db, config, create=False)
    try:
        rows = ledger.audit_rows(limit=limit or None)
    finally:
        ledger.close()
    err_console.print(
        "[bold yellow]warning[/]: pimento audit show is a custodian tool: the log holds private data, not for analysts",
        highlight=False,
        soft_wrap=True,
    )
    if json_out:
        emit_json(rows)
        return
    console.print(audit_table(rows))


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app`` (wiring only: the commands are the module-level functions above)."""
    audit = typer.Typer(
        help="Custodian tool: shows private data, not for analysts. Show and verify the append-only, hash-chained audit log "
        "of releases, failures, aborts, synthetic copies and custodian-tool uses.",
        no_args_is_help=True,
    )
    app.add_typer(audit, name="audit")
    audit.command("verify")(verify_cmd)
    audit.command("resume")(resume_cmd)
    audit.command("show")(show_cmd)


def _short(value: object, digits: int = 4) -> str:
    """A number in at most about ``digits + 6`` characters (``digits`` significant digits): the audit
    log keeps exact values of up to ~70 digits (a Fraction's decimal expansion), which `--json`
    still prints. Text that is not a number is cut at 12 characters."""
    if value is None or value == "":
        return "-"
    text = str(value)
    if len(text) <= digits + 6:
        return text
    try:
        from fractions import Fraction

        number = float(Fraction(text))
    except (ValueError, ZeroDivisionError, OverflowError):
        return text if len(text) <= 12 else text[:11] + "\u2026"
    return f"{number:.{digits}g}"


def _value_cell(row: dict) -> str:
    """The released value over its interval, both shortened; a split release says its value is the
    noisy remainder and gives the exact authorized part (:func:`pimento.mechanisms.audit.released_part`)."""
    from pimento.mechanisms.audit import released_part

    value = _short(row.get("value"), 7)
    interval = row.get("interval")
    if isinstance(interval, (list, tuple)) and len(interval) == 2:
        value = f"{value}\n{_short(interval[0])}..{_short(interval[1])}"
    part = released_part(row)
    if part.get("part") == "remainder":
        value = f"exact {_short(part.get('authorized_exact'), 7)}\n+ rem. {value}"
    return value


def _who_cell(row: dict) -> str:
    """The analyst over the release's mode (its name only; ``--json`` has the policy and context)."""
    from pimento.mechanisms.audit import released_part

    mode = released_part(row).get("mode")
    who = str(row.get("analyst") or "-")
    return f"{who}\n{mode}" if mode else who


def audit_table(rows: list[dict]) -> Table:
    """The audit rows as a table readable at 80 columns: numbers shortened, two short lines per cell
    (analyst over mode, epsilon over delta, noise over scale, value over interval; a split release's exact part first), the question/SQL column wrapping. Row text is escaped
    (a question or SQL with brackets is not Rich markup)."""
    from rich.markup import escape

    table = Table(show_lines=True, padding=(0, 1), pad_edge=False, expand=False)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("time UTC", no_wrap=True)
    table.add_column("who\nmode", max_width=10, overflow="fold")
    table.add_column("eps\ndelta", no_wrap=True)
    table.add_column("noise\nscale", no_wrap=True)
    table.add_column("value\ninterval", no_wrap=True)
    table.add_column("question / SQL", ratio=1, min_width=16, overflow="fold")
    for r in rows:
        kind = r.get("kind") or "release"
        if kind == "custodian":
            what = f"custodian tool [bold]{escape(str(r.get('tool')))}[/]: " + escape(json.dumps(r.get("details"), default=str)[:300])
        elif kind == "halt":
            found = r.get("details")
            details: dict = found if isinstance(found, dict) else {}
            what = f"[yellow]halted[/] after charge {escape(str(r.get('failed_charge') or '-'))}: " + escape(str(details.get("error") or "")[:300])
            if details.get("sql"):
                what += f"\n[dim]{escape(str(details['sql']))}[/]"
        elif kind == "synthetic":
            what = escape(f"synthetic copy {r.get('copy_id')} ({r.get('note') or ''})")
        else:
            what = (escape(str(r["question"])) + "\n" if r.get("question") else "") + (f"[dim]{escape(str(r['sql']))}[/]" if r.get("sql") else "")
        outcome = r.get("outcome")
        if outcome and outcome != "released":
            what = f"[yellow]{escape(str(outcome))}[/] {escape(str(r.get('detail') or ''))}\n{what}".strip()
        eps = r.get("epsilon", r.get("charge_epsilon"))
        dlt = r.get("delta", r.get("charge_delta"))
        time_text = str(r.get("time", ""))[5:16].replace("T", " ")
        table.add_row(
            str(r["seq"]), time_text, escape(_who_cell(r)), f"{_short(eps)}\n{_short(dlt)}",
            f"{_short(r.get('noise'))}\n{_short(r.get('scale'))}", _value_cell(r), what,
        )
    return table
