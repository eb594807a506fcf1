"""``pimento search`` (the search alone, on the synthetic database) and ``pimento ask`` (DP answer)."""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from pimento.cli._common import TRUSTED_CONTEXT, console, emit_json, err_console, handle_errors
from pimento.search.mcts import VARIANTS

__all__ = ["register"]

def _config(rollouts: int, seed: int, variant: str):
    from pimento.search.mcts import config_for_variant

    return config_for_variant(variant, rollouts=rollouts, seed=seed)


def _alternatives_table(outcome) -> Table:
    """The formulations weighed, readable at 80 columns: the SQL takes the width, numbers never wrap."""
    table = Table(title="formulations evaluated on the synthetic database", caption="cl: execution cluster (its size)")
    table.add_column("cl", no_wrap=True)
    table.add_column("answer", justify="right", no_wrap=True)
    table.add_column("RS", justify="right", no_wrap=True)
    table.add_column("source", no_wrap=True)
    table.add_column("SQL", overflow="fold", ratio=1)
    for alt in outcome.result.alternatives[:12]:
        source = alt.source.replace("warm-start ", "warm")
        table.add_row(f"{str(alt.cluster)[:6]} ({alt.cluster_size})", str(alt.synthetic_answer), f"{alt.synthetic_rs:.4g}", source, alt.sql)
    return table


def register(app: typer.Typer) -> None:
    @app.command("search")
    @handle_errors
    def search_cmd(
        question: str = typer.Argument("", help="The counting question ('' with --seed-sql only)."),
        db: str = typer.Option(..., "--db", help="The private database: only its schema and pimento.toml are read."),
        synthetic: str = typer.Option(
            None, "--synthetic", help="The synthetic database (from `pimento synth`); default: [synth] path, else DB.synthetic.duckdb."
        ),
        seed_sql: list[str] = typer.Option([], "--seed-sql", help="An analyst-supplied warm-start query (repeatable)."),
        rollouts: int = typer.Option(10, "--rollouts", min=0, help="MCTS rollouts."),
        epsilon: str = typer.Option("1", "--epsilon", help="Epsilon of the release the search optimises for (sets beta)."),
        delta: str = typer.Option("1e-6", "--delta", help="Delta of that release ('' for pure epsilon-DP)."),
        k: int = typer.Option(10, "--k", min=1, help="Warm-start candidates from the parser or LLM."),
        llm: str = typer.Option(None, "--llm", help="OpenAI-compatible endpoint for zero-shot warm starts."),
        variant: str = typer.Option("full", "--variant", help=f"Search variant: {', '.join(VARIANTS)}."),
        seed: int = typer.Option(0, "--seed", help="Random seed of the search."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Search the synthetic database for the lowest-sensitivity correct formulation (spends nothing)."""
        from pimento.engines.database import load_database
        from pimento.mechanisms import Ledger, mechanism_for
        from pimento.release.ask import open_synthetic, resolve_synthetic, search_question
        from pimento.release.synthetic import synthetic_guarantee

        # Schema and pimento.toml only: the private data is never read by the search.
        schema = load_database(db, read_only=True)
        catalog = schema.catalog
        schema.close()
        # beta as the release at (epsilon, delta) will use it, under the custodian's [release] settings.
        mechanism = mechanism_for(epsilon, delta or None, share=schema.settings.release.rs_bound_share)
        path = resolve_synthetic(synthetic, schema.location, schema.settings)
        with Ledger.for_database(str(schema.location), schema.settings) as ledger:
            synthetic_guarantee(ledger, str(schema.location), path)  # a copy not charged to this database is refused
        engine = open_synthetic(path)
        try:
            outcome = search_question(
                question, engine, catalog, beta=mechanism.beta_float(), seed_sql=tuple(seed_sql), k=k,
                config=_config(rollouts, seed, variant), llm=llm,
            )
        finally:
            engine.close()
        if json_out:
            emit_json(outcome.to_dict())
            return
        console.print(f"[bold]chosen[/] (synthetic RS {outcome.result.synthetic_rs:.4g}): {outcome.result.sql}")
        console.print(_alternatives_table(outcome))
        console.print(f"{outcome.result.evaluations} evaluations, {outcome.result.pruned} pruned, {outcome.seconds:.2f} s")

    @app.command("ask")
    @handle_errors
    def ask_cmd(
        question: str = typer.Argument(..., help="The counting question."),
        db: str = typer.Option(..., "--db", help="The private database."),
        synthetic: str = typer.Option(
            None, "--synthetic", help="The synthetic database (from `pimento synth`); default: [synth] path, else DB.synthetic.duckdb."
        ),
        mode: str = typer.Option("dp", "--mode", help="Release mode: ci | dp | split | contextual (docs/modes.md)."),
        context: str = typer.Option(None, "--context", help="sender=KIND:ID,recipient=KIND:ID,purpose=NAME (modes ci, split, contextual). " + TRUSTED_CONTEXT),
        neighbours: str = typer.Option(
            None, "--neighbours",
            help="Neighbourhood of the guarantee: add-remove | change | both (default: the custodian's [release] neighbours; "
            "you may only ask for both instead; change and both need --mode contextual).",
        ),
        epsilon: str = typer.Option(..., "--epsilon", help="Epsilon spent on the release."),
        delta: str = typer.Option(None, "--delta", help="Delta spent on the release (omit for pure epsilon-DP)."),
        analyst: str = typer.Option(None, "--analyst", help="Who is asking (charged in the ledger; trusted input, as --context)."),
        seed_sql: list[str] = typer.Option([], "--seed-sql", help="An analyst-supplied warm-start query (repeatable)."),
        rollouts: int = typer.Option(10, "--rollouts", min=0, help="MCTS rollouts."),
        k: int = typer.Option(10, "--k", min=1, help="Warm-start candidates."),
        llm: str = typer.Option(None, "--llm", help="OpenAI-compatible endpoint for zero-shot warm starts."),
        variant: str = typer.Option("full", "--variant", help=f"Search variant: {', '.join(VARIANTS)}."),
        seed: int = typer.Option(0, "--seed", help="Random seed of the search."),
        yes: bool = typer.Option(False, "--yes", "-y", help="Release without asking to confirm the interpretation (refused when its confidence is low)."),
        confirm_sql: str = typer.Option(None, "--confirm-sql", help="Release only if the interpretation is exactly this SQL (non-interactive confirmation, also of a low-confidence reading)."),
        preview_only: bool = typer.Option(False, "--preview", help="Show the interpretation and the accuracy estimate, spend nothing."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Answer a counting question (modes ci, dp, split, contextual), choosing the lowest-sensitivity correct SQL privately.

        Two steps: the interpretation (chosen SQL, its reading, alternatives, accuracy estimate) is
        found on the synthetic copy and shown first, for free; the budget is spent only once it is
        confirmed (interactively, or with --yes, or with --confirm-sql SQL).

        Custodian-side tool: --analyst and --context are trusted input; analysts use
        `pimento serve`, where the key fixes the analyst and the context.
        """
        from pimento.cli.cmd_sql import describe_release, print_ci
        from pimento.release.session import AskAnswer, Session

        arguments = dict(
            synthetic=synthetic, epsilon=epsilon, delta=delta, analyst=analyst,
            seed_sql=tuple(seed_sql), k=k, config=_config(rollouts, seed, variant), llm=llm, mode=mode, context=context,
            neighbours=neighbours,
        )
        with Session(db, analyst=analyst or "default") as session:
            seen = session.preview(question, **arguments)
            shown = seen.to_dict()
            if preview_only:
                if json_out:
                    emit_json(shown)
                else:
                    _print_interpretation(shown)
                return
            interactive_shown = confirm_sql is None and not (yes and shown["confidence"] != "low")
            if confirm_sql is None:
                confirm_sql = _confirmed_sql(shown, yes=yes, json_out=json_out)
            answer = session.ask(question, expect_sql=confirm_sql, **arguments)
        data = answer.to_dict()
        if json_out:
            emit_json(data)
            return
        if not interactive_shown:
            print_notes((data.get("search") or {}).get("notes", ()))
        if mode == "ci":
            console.print(f"[bold]{question}[/]")
            console.print(f"SQL: {data['sql']}", highlight=False)
            print_ci(data)
            return
        assert isinstance(answer, AskAnswer)  # only mode ci answers with a CIAnswer
        lo, hi = data["interval"]
        console.print(f"[bold]{question}[/]")
        if mode == "split":
            console.print(f"authorized part (exact): [bold]{data['authorized_exact']}[/]; remainder ({data['remainder']}):",
                          highlight=False)
        cached = "  [dim]cached, no new cost[/]" if data["cached"] else ""
        clamped = f"  [dim]clamped at 0 (noisy value {data['value_unclamped']})[/]" if data.get("clamped") else ""
        console.print(f"answer: [bold green]{data['value']}[/]  (95% interval {lo} .. {hi}){clamped}{cached}", highlight=False)
        console.print(describe_release(data), highlight=False)
        g = data["guarantee"]
        kind = ("-contextual DP for this context" if mode == "contextual" else "-DP") + f", {g['neighbours']} neighbours"
        console.print(
            f"end-to-end guarantee: ({g['epsilon']}, {g['delta']}){kind} = synthetic copy ({g['epsilon_synthetic']}, "
            f"{g['delta_synthetic']}) + this release ({g['epsilon_release']}, {g['delta_release']})"
            + (f", for neighbours that agree on: {'; '.join(g['public_inputs'])}" if g["public_inputs"] else ""),
            highlight=False,
        )
        console.print(f"SQL: {data['chosen_sql']}", highlight=False)
        drivers = ", ".join(f"{name} {share:.2f}" for name, share in sorted(data["synthetic_shapley"].items(), key=lambda kv: -kv[1]))
        console.print(
            f"on the synthetic copy: residual sensitivity {data['synthetic_rs']:.4g}"
            + (f"; what drives it (Shapley shares): {drivers}" if drivers else ""),
            highlight=False,
        )
        if data["avoided_sql"]:
            console.print(f"avoided (zero-shot top-1): {data['avoided_sql']}", highlight=False)
        console.print(_alternatives_table(answer.search))


def _print_interpretation(shown: dict) -> None:
    """The interpretation found on the synthetic copy: what will be counted, how sure, how accurate."""
    console.print(f"[bold]{shown['question']}[/]")
    console.print(f"will answer: {shown['reading']}", highlight=False)
    console.print(f"SQL: {shown['chosen_sql']}", highlight=False)
    if shown["confidence"] == "low":
        console.print(
            f"[bold yellow]low confidence[/]: the {shown['readings_proposed']} readings proposed for this question give "
            "different answers on the synthetic copy; check that this is the one you mean",
            highlight=False,
        )
    cost = shown["cost"]
    console.print(
        f"cost: epsilon {cost['epsilon']} delta {cost['delta']}; expected accuracy about +-{shown['estimated_half_width_95']:.4g} "
        "(95%, estimated on the synthetic copy; the released interval is usually wider)",
        highlight=False,
    )
    print_notes(shown.get("notes", ()))
    others = [a for a in shown["alternatives"] if a["sql"] != shown["chosen_sql"]][:3]
    for a in others:
        console.print(f"  [dim]also considered: {a['sql']}[/]", highlight=False)


def print_notes(notes) -> None:
    """Search notes the analyst must see (the LLM was unreachable and the offline parser answered), on stderr."""
    for note in notes:
        err_console.print(f"[bold yellow]note[/]: {escape(note)}", highlight=False)


def _confirmed_sql(shown: dict, *, yes: bool, json_out: bool) -> str:
    """The SQL the analyst confirms (asked on a terminal), or a UserError: nothing is spent without it."""
    import sys

    from pimento.errors import UserError

    low = shown["confidence"] == "low"
    if yes and not low:
        return shown["chosen_sql"]
    if not sys.stdin.isatty() or json_out:
        why = "its confidence is low (the readings proposed disagree on the synthetic copy)" if low else "it was not confirmed"
        raise UserError(
            f"nothing was released: {why}; the interpretation is: {shown['chosen_sql']}",
            hint="check it with --preview, then confirm with --confirm-sql \"<that SQL>\""
            + ("" if low else " or --yes"),
        )
    _print_interpretation(shown)
    if not typer.confirm("Release the answer to this SQL and spend the cost above?", default=False):
        raise UserError("nothing was released: not confirmed")
    return shown["chosen_sql"]
