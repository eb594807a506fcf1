"""``pimento sql``: answer SQL in one of the four release modes (ci, dp, split, contextual).

The command builds one :class:`pimento.release.Request` and answers it with
:meth:`pimento.release.Session.answer`; the answer is printed by :func:`pimento.cli._answers.print_answer`
(shared with ``pimento ask``), or as ``answer.to_dict()`` under ``--json``. The release layer is
imported inside the command, so that ``pimento --help`` stays fast.

A custodian-side tool: ``--analyst`` and ``--context`` are the caller's word (:data:`TRUSTED_CONTEXT`);
analysts reach Pimento through ``pimento serve``, whose keys bind both.
"""

from __future__ import annotations

import typer

from pimento.cli._checks import check_number_text, require_database
from pimento.cli._common import TRUSTED_CONTEXT, db_option, emit_json, handle_errors, json_option

__all__ = ["register", "sql_cmd"]


@handle_errors
def sql_cmd(
    db: str = db_option(),
    sql: str = typer.Option(..., "--sql", help="One counting query: SELECT COUNT(*) FROM ... [JOIN ...] [WHERE ...]; in --mode dp also GROUP BY, SUM and AVG "
                     "(docs/grouped.md); --mode ci: any SELECT."),
    epsilon: str = typer.Option(None, "--epsilon", help="Privacy budget of this release, e.g. 0.5 (exact decimal or 1/3); not for --mode ci."),
    delta: str = typer.Option(None, "--delta", help="(eps, delta)-DP with Laplace noise; omit for pure eps-DP."),
    analyst: str = typer.Option("default", "--analyst", help="Who is asking; charged in the ledger (trusted input, as --context)."),
    private: str = typer.Option(None, "--private", help="Comma-separated relations to treat as private in addition to pimento.toml's."),
    mode: str = typer.Option("dp", "--mode", help="Release mode: ci | dp | split | contextual (docs/modes.md)."),
    context: str = typer.Option(None, "--context", help="sender=KIND:ID,recipient=KIND:ID,purpose=NAME (modes ci, split, contextual); "
                                "values verbatim, no blanks around them. " + TRUSTED_CONTEXT),
    neighbours: str = typer.Option(
        None, "--neighbours",
        help="Neighbourhood of the guarantee: add-remove | change | both (default: the custodian's [release] neighbours; "
        "you may only ask for both instead; change and both need --mode contextual).",
    ),
    bounds: list[str] = typer.Option([], "--bounds", help="Narrow the custodian's clipping bounds of the summed column for this "
                                     "request: Table.column=LOWER:UPPER, inside its [bounds] (repeatable; SUM and AVG only; docs/grouped.md)."),
    preview_only: bool = typer.Option(False, "--preview", help="Show the cost, the accuracy estimate on the synthetic copy and the "
                                      "epsilon planner; spend nothing (docs/accuracy.md)."),
    json_out: bool = json_option(),
) -> None:
    """Answer a counting query with noise calibrated to its residual sensitivity; the ledger is charged first.

    Runs under the custodian's pimento.toml beside the database (ledger, caps, private relations).
    Custodian-side tool: --analyst and --context are trusted input; analysts use `pimento serve`,
    where the key fixes the analyst and the context.
    """
    require_database(db)
    check_number_text(epsilon, "epsilon")
    check_number_text(delta, "delta")
    from pimento.release import Request  # light: an unknown --mode is refused before the heavy imports below

    request = Request.for_sql(sql, epsilon=epsilon, delta=delta, analyst=analyst, mode=mode, context=context, neighbours=neighbours,
                              bounds=bounds)
    from pimento.cli._answers import print_answer, print_sql_preview
    from pimento.release import Session
    from pimento.release.sql_preview import noise_check

    with Session(db, private=private.split(",") if private else None, analyst=analyst) as session:
        if preview_only:
            shown = session.preview_sql(request)
            if json_out:
                emit_json(shown)
            else:
                print_sql_preview(shown)
            return
        if request.epsilon is not None:  # the quick check on the synthetic copy: warned on stderr before the charge, then spent
            checked = noise_check(lambda: session.preview_sql(request, epsilons=()), full=lambda: session.preview_sql(request),
                                accept_noise=True)  # a preview that fails: the release refuses below, before any charge
            if checked is not None:
                print_sql_preview(dict(checked), warning_only=True)
        answer = session.answer(request)
    if json_out:
        emit_json(answer.to_dict())
        return
    print_answer(answer)


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app`` (wiring only: the commands are the module-level functions above)."""
    app.command("sql")(sql_cmd)
