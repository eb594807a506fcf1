"""``pimento synth``: write a DP synthetic copy of a database (same schema, valid keys)."""

from __future__ import annotations

import typer

from pimento.cli._checks import check_number_text, refuse_existing_output, require_database
from pimento.cli._common import StageProgress, console, emit_json, handle_errors, open_database

__all__ = ["SYNTH_STAGES", "register", "synth_cmd"]

#: The synthesizer's progress stages as people read them (``pimento synth`` and ``pimento demo run``).
SYNTH_STAGES = {"read": "reading tables", "encode": "choosing categories", "fit": "fitting models", "sample": "sampling", "write": "writing"}


@handle_errors
def synth_cmd(
    db: str = typer.Option(..., "--db", help="Private database file (DuckDB/SQLite) or postgresql:// DSN."),
    out: str = typer.Option(..., "--out", help="The synthetic DuckDB file to write (must not exist)."),
    epsilon: str = typer.Option(..., "--epsilon", help="epsilon_syn, e.g. 1.6 (exact decimal)."),
    delta: str = typer.Option(..., "--delta", help="delta_syn, e.g. 1e-6."),
    root: str = typer.Option(None, "--root", help="Root private relation (privacy unit); default: [privacy] root."),
    seed: int = typer.Option(0, "--seed", help="Sampling seed (the DP noise never depends on it)."),
    link_context: str = typer.Option(
        None,
        "--link-context",
        help="Comma-separated Table.column of private non-root tables treated as PUBLIC link context "
        "(weakens the guarantee for those columns, see docs/synthetic-data.md); adds to [synth] link_context.",
    ),
    public_values: str = typer.Option(
        None,
        "--public-values",
        help="Comma-separated Table.column whose set of values is public (read without budget); "
        "adds to [synth] public_values.",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Custodian tool (reads the private database; its output is DP). Generate an (epsilon, delta)-DP
    synthetic database that keeps every declared constraint.

    The spend is charged, before the private data is read, to the same ledger the releases
    charge (that of the resolved database); the copy records the charge's copy id, and
    `ask`/`search` refuse a copy whose charge is not in that ledger. Declared public inputs
    (public value sets, link context) are copied without noise: the copy is DP for
    neighbours that agree on them, and the output names them.
    """
    # What the arguments alone make wrong is refused first, before the synthesizer (JAX) is imported.
    require_database(db)
    refuse_existing_output(out)
    check_number_text(epsilon, "epsilon")
    check_number_text(delta, "delta")
    from pimento.release.synthetic import make_copy

    database = open_database(db)
    with StageProgress("synth", SYNTH_STAGES, json_out=json_out) as report:
        result = make_copy(
            database, out, epsilon, delta, root=root, seed=seed, progress=report, link_context=link_context, public_values=public_values
        )
    if json_out:
        payload = result.to_dict()
        keys = ("caps", "ties", "free_text", "column_types", "budget", "dropped_in_repair", "link_context", "public_values", "link_degrees",
                "public_directory")
        payload["details"] = {k: result.details[k] for k in keys if k in result.details}
        emit_json(payload)
    else:
        from rich.table import Table

        table = Table(title=f"synthetic database {result.path}")
        table.add_column("table")
        table.add_column("rows", justify="right")
        for name, n in result.rows.items():
            table.add_row(name, str(n))
        console.print(table)
        console.print(
            f"spent epsilon={result.epsilon} delta={result.delta} (root {result.root}), charged to the ledger of {result.database} "
            f"(charge {result.ledger_charge}, copy {result.copy_id}); {result.seconds:.1f} s",
            highlight=False,
        )
        console.print(f"guarantee: {result.guarantee()}", highlight=False)
    result.engine.close()


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app`` (wiring only: the commands are the module-level functions above)."""
    app.command("synth")(synth_cmd)
