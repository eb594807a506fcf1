"""``pimento authorize``: CI mode, an analyst query answered over the authorized data of a context.

A custodian-side tool: the context (``--sender``, ``--recipient``, ``--purpose``) is the caller's
word (:data:`TRUSTED_CONTEXT`); analysts reach CI mode through ``pimento serve``, whose keys bind it.
The output holds the public inputs (context, policy name, SQL) and the query's result on the
authorized data, nothing else. Which norms decided and how many cells they withheld is private;
the custodian sees it with ``pimento policy explain``. The context goes through the one context
grammar (:meth:`pimento.release.request.Context.parse`), as in ``pimento sql`` and the service.
"""

from __future__ import annotations

import typer

from pimento.cli._checks import require_database
from pimento.cli._common import TRUSTED_CONTEXT, emit_json, handle_errors, json_option, print_authorized_rows

__all__ = ["authorize_cmd", "configured_policy_path", "register"]


def configured_policy_path(settings) -> str:
    """The custodian's compiled policy (``[policy] compiled``), or a clear error: the caller never names one."""
    from pimento.errors import PolicyError

    if not settings.policy.compiled:
        raise PolicyError(
            "no contextual-integrity policy is configured for this database",
            hint="the custodian sets compiled = \"FILE\" under [policy] in the pimento.toml beside the database "
            "(FILE from `pimento policy compile ... --out FILE`)",
        )
    return settings.resolve(settings.policy.compiled)


@handle_errors
def authorize_cmd(
    db: str = typer.Option(..., "--db", help="Database (the one the policy was compiled against)."),
    sender: str = typer.Option(..., "--sender", help="Sender identity, KIND:ID (e.g. employee:10). " + TRUSTED_CONTEXT),
    recipient: str = typer.Option(..., "--recipient", help="Recipient (querier) identity, KIND:ID."),
    purpose: str = typer.Option(..., "--purpose", help="Declared purpose (a value listed in the policy), verbatim."),
    sql: str = typer.Option(..., "--sql", help="The analyst query (any single SELECT the engine runs)."),
    json_out: bool = json_option(),
) -> None:
    """Answer SQL with only the cells the policy authorizes for (sender, recipient, purpose).

    Prints the authorized result only; unauthorized cells read NULL, rows without an
    authorized cell are absent. The policy is the custodian's ([policy] compiled in the
    pimento.toml beside the database). Diagnostics are a custodian tool: `pimento policy explain`.
    Custodian-side tool: the context is trusted input; analysts use `pimento serve`, where the key
    fixes the context.
    """
    require_database(db)
    from pimento.engines.database import load_database
    from pimento.policy import Enforcer, load_compiled_policy
    from pimento.release.request import Context

    spec = Context.parse({"sender": sender, "recipient": recipient, "purpose": purpose})  # the one context grammar
    assert spec is not None  # a dict parses to a context or raises
    database = load_database(db)
    try:
        compiled = load_compiled_policy(configured_policy_path(database.settings))
        enforcer = Enforcer(compiled, database.engine, database.catalog)
        context = enforcer.context(spec.sender, spec.recipient, spec.purpose)
        authorized = enforcer.authorize(context, sql)
    finally:
        database.close()
    if json_out:
        emit_json(authorized.to_dict())
        return
    print_authorized_rows(authorized.context, authorized.policy, authorized.columns, authorized.rows, title="(unauthorized cells are NULL)")


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app`` (wiring only: the commands are the module-level functions above)."""
    app.command("authorize")(authorize_cmd)
