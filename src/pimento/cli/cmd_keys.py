"""``pimento keys``: the custodian issues, lists and revokes the analysts' API keys of ``pimento serve``."""

from __future__ import annotations

import typer
from rich.table import Table

from pimento.cli._checks import require_database
from pimento.cli._common import console, emit_json, err_console, handle_errors, json_option

__all__ = ["add_cmd", "list_cmd", "register", "revoke_cmd"]


def _store(db: str):
    require_database(db)  # before the service is imported, and before a keys file could be created
    from pimento.service.deployment import Deployment

    return Deployment(db)


@handle_errors
def add_cmd(
    db: str = typer.Option(..., "--db", help="The deployment's database (its pimento.toml decides the ledger)."),
    analyst: str = typer.Option(..., "--analyst", help="The analyst the key speaks for (charged in the ledger)."),
    principal: str = typer.Option(None, "--principal", help="The policy principal the analyst is, KIND:ID (e.g. employee:17): "
                                  "the recipient of every context the key uses."),
    senders: list[str] = typer.Option(None, "--sender", help="A sender the key may use in modes ci, split, contextual, KIND:ID "
                                      "(repeat for several; the analyst picks among them and can name no other)."),
    purposes: list[str] = typer.Option(None, "--purpose", help="A purpose the key may declare, one the policy lists "
                                       "(repeat for several; the analyst picks among them and can name no other)."),
    json_out: bool = json_option(),
) -> None:
    """Issue a key for an analyst and print it once: only its SHA-256 is stored.

    The key fixes the analyst (charged in the ledger) and, for modes ci, split and contextual, the
    context: the recipient is --principal, the sender and purpose are among --sender and --purpose.
    With a policy configured, each principal and purpose must be one it knows. Without --sender and
    --purpose the key serves mode dp only.
    """
    entry, secret = _store(db).add_key(analyst, principal, senders or (), purposes or ())
    if json_out:
        emit_json({**entry.to_dict(), "key": secret})
        return
    console.print(secret, highlight=False, soft_wrap=True)
    bound = f"; senders {', '.join(entry.senders)}; purposes {', '.join(entry.purposes)}" if entry.bound else ""
    err_console.print(
        f"key {entry.id} for analyst {entry.analyst}" + (f" ({entry.principal}{bound})" if entry.principal else "")
        + ": shown once, only its hash is kept; hand it to the analyst over a private channel",
        highlight=False,
    )


@handle_errors
def list_cmd(
    db: str = typer.Option(..., "--db", help="The deployment's database."),
    json_out: bool = json_option(),
) -> None:
    """List the keys issued (id, analyst, principal, senders, purposes, created, revoked); never the keys."""
    items = [k.to_dict() for k in _store(db).keys.keys()]
    if json_out:
        emit_json({"keys": items})
        return
    table = Table()
    for heading in ("id", "analyst", "principal", "senders", "purposes", "created", "revoked"):
        table.add_column(heading)
    for k in items:
        table.add_row(k["id"], k["analyst"], k["principal"] or "-", ", ".join(k["senders"]) or "-", ", ".join(k["purposes"]) or "-",
                      k["created"], k["revoked"] or "-")
    console.print(table)


@handle_errors
def revoke_cmd(
    db: str = typer.Option(..., "--db", help="The deployment's database."),
    key_id: str = typer.Option(..., "--id", help="The key's id (from `pimento keys list`)."),
    json_out: bool = json_option(),
) -> None:
    """Revoke a key: a running service refuses it from its next request on."""
    entry = _store(db).revoke_key(key_id)
    if json_out:
        emit_json(entry.to_dict())
        return
    console.print(f"revoked key {entry.id} of analyst {entry.analyst} at {entry.revoked}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app`` (wiring only: the commands are the module-level functions above)."""
    keys = typer.Typer(
        help="Custodian tool: issue, list and revoke the analysts' API keys of `pimento serve` "
        "(stored hashed in <ledger>.keys.json beside the ledger).",
        no_args_is_help=True,
    )
    app.add_typer(keys, name="keys")
    keys.command("add")(add_cmd)
    keys.command("list")(list_cmd)
    keys.command("revoke")(revoke_cmd)
