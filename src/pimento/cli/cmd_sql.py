"""``pimento sql``: answer SQL in one of the four release modes (ci, dp, split, contextual).

A custodian-side tool: ``--analyst`` and ``--context`` are the caller's word (:data:`TRUSTED_CONTEXT`);
analysts reach Pimento through ``pimento serve``, whose keys bind both.
"""

from __future__ import annotations

import typer

from pimento.cli._common import TRUSTED_CONTEXT, console, db_option, emit_json, handle_errors, json_option, print_authorized_rows

__all__ = ["describe_release", "print_ci", "register"]


def print_ci(data: dict) -> None:
    """A CI-mode answer: the authorized result, exact, with its context and guarantee."""
    from rich.markup import escape

    print_authorized_rows(data, title="on the authorized data (unauthorized cells are NULL)")
    traced = [c for c in (data.get("provenance") or {}).get("cells", []) if c["texts"]]
    if traced:  # the custodian's [provenance] lets the text of authorized cells flow (docs/ingest.md)
        console.print(f"read from ({data['provenance']['release']}):", highlight=False)
        for c in traced[:20]:
            console.print(f"  row {c['row'] + 1}, {escape(c['column'])}: " + " | ".join(escape(t["text"]) for t in c["texts"]),
                          highlight=False)
        if len(traced) > 20:
            console.print(f"  ... {len(traced) - 20} more traced cells (use --json)")
    console.print(f"guarantee: {data['guarantee']}", highlight=False)


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
        db: str = db_option(),
        sql: str = typer.Option(..., "--sql", help="One counting query: SELECT COUNT(*) FROM ... [JOIN ...] [WHERE ...] (--mode ci: any SELECT)."),
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
        json_out: bool = json_option(),
    ) -> None:
        """Answer a counting query with noise calibrated to its residual sensitivity; the ledger is charged first.

        Runs under the custodian's pimento.toml beside the database (ledger, caps, private relations).
        Custodian-side tool: --analyst and --context are trusted input; analysts use `pimento serve`,
        where the key fixes the analyst and the context.
        """
        from pimento.release.session import Session

        with Session(db, private=private.split(",") if private else None, analyst=analyst) as session:
            answer = session.release_sql(sql, epsilon, delta, analyst=analyst, mode=mode, context=context, neighbours=neighbours)
        data = answer.to_dict()
        if json_out:
            emit_json(data)
            return
        if mode == "ci":
            print_ci(data)
            return
        if mode == "split":
            console.print(f"authorized part (exact): [bold]{data['authorized_exact']}[/]", highlight=False)
            console.print(f"remainder ({data['remainder']}):", highlight=False)
        lo, hi = data["interval"]
        clamped = f"  [dim]clamped at 0 (noisy value {data['value_unclamped']})[/]" if data.get("clamped") else ""
        console.print(f"[bold]{data['value']}[/]  (95% interval {lo} .. {hi}){clamped}{'  [dim]cached, no new cost[/]' if data['cached'] else ''}", highlight=False)
        console.print(describe_release(data), highlight=False)
        if mode != "dp":
            ctx = data["context"]
            console.print(f"guarantee: {data['guarantee_kind']}; context {ctx['sender']} -> {ctx['recipient']} for {ctx['purpose']}",
                          highlight=False)
        console.print(f"[dim]{data['sql']}[/]", highlight=False)
