"""``pimento search`` (the search alone, on the synthetic database) and ``pimento ask`` (a private answer).

Both build one :class:`pimento.release.Request` for the question. ``search`` reads it with
:func:`pimento.release.interpret` (the catalog, the custodian's settings and the synthetic
copy only; it spends nothing) and shows the search; ``ask`` previews it with
:meth:`pimento.release.Session.preview`, has the reading confirmed, then answers it with
:meth:`pimento.release.Session.answer` and ``expect_sql`` set to the confirmed SQL (a reading that
changed is refused before the charge). Answers print with :func:`pimento.cli._answers.print_answer`
(shared with ``pimento sql``). The release layer is imported inside the commands, so that
``pimento --help`` stays fast.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

import typer
from rich.markup import escape

from pimento.cli._checks import SEARCH_VARIANTS, check_number_text, check_question, check_variant, require_database
from pimento.cli._common import TRUSTED_CONTEXT, console, emit_json, err_console, handle_errors
from pimento.errors import UserError

__all__ = ["VARIANT_HELP", "ask_cmd", "register", "search_cmd"]

#: The --variant help: the names of pimento.search.config.VARIANTS, from their copy in pimento.cli._checks
#: (so that `pimento --help` does not import the search).
VARIANT_HELP = f"Search variant: {', '.join(SEARCH_VARIANTS)}."


def _config(rollouts: int, seed: int, variant: str):
    from pimento.search.config import config_for_variant

    return config_for_variant(variant, rollouts=rollouts, seed=seed)


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
    variant: str = typer.Option("full", "--variant", help=VARIANT_HELP),
    seed: int = typer.Option(0, "--seed", help="Random seed of the search."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Search the synthetic database for the lowest-sensitivity correct formulation (spends nothing)."""
    require_database(db)
    check_question(question, allow_empty=bool(seed_sql))
    check_number_text(epsilon, "epsilon")
    check_number_text(delta or None, "delta")
    check_variant(variant)
    from pimento.cli._answers import alternatives_table
    from pimento.engines.database import load_database
    from pimento.mechanisms import Ledger
    from pimento.release import Request, interpret

    # beta as the release at (epsilon, delta) will use it, under the custodian's [release] settings.
    request = Request.for_question(question, epsilon=epsilon, delta=delta or None, synthetic=synthetic, seed_sql=tuple(seed_sql), k=k,
                                   config=_config(rollouts, seed, variant), llm=llm)
    # Schema and pimento.toml only: the private data is never read by the search.
    schema = load_database(db, read_only=True)
    catalog = schema.catalog
    schema.close()
    location = str(schema.location)
    with Ledger.for_database(location, schema.settings) as ledger:  # a copy not charged to this database is refused
        outcome = interpret(request, catalog=catalog, settings=schema.settings, ledger=ledger, location=location).outcome
    if json_out:
        emit_json(outcome.to_dict())
        return
    console.print(f"[bold]chosen[/] (synthetic RS {outcome.result.synthetic_rs:.4g}): {outcome.result.sql}")
    console.print(alternatives_table(outcome))
    console.print(f"{outcome.result.evaluations} evaluations, {outcome.result.pruned} pruned, {outcome.seconds:.2f} s")


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
    variant: str = typer.Option("full", "--variant", help=VARIANT_HELP),
    seed: int = typer.Option(0, "--seed", help="Random seed of the search."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Release without asking to confirm the interpretation (refused when its confidence is low)."),
    confirm_sql: str = typer.Option(None, "--confirm-sql", help="Release only if the interpretation is exactly this SQL (non-interactive confirmation, also of a low-confidence reading)."),
    bounds: list[str] = typer.Option([], "--bounds", help="Narrow the custodian's clipping bounds of a summed column for this question: "
                                     "Table.column=LOWER:UPPER, inside its [bounds] (repeatable; used when the reading is a SUM or AVG of it)."),
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
    require_database(db)
    check_question(question, allow_empty=bool(seed_sql))
    check_number_text(epsilon, "epsilon")
    check_number_text(delta, "delta")
    check_variant(variant)
    from pimento.cli._answers import print_answer
    from pimento.release import Request, Session

    request = Request.for_question(
        question, epsilon=epsilon, delta=delta, analyst=analyst, mode=mode, context=context, neighbours=neighbours,
        synthetic=synthetic, seed_sql=tuple(seed_sql), k=k, config=_config(rollouts, seed, variant), llm=llm, bounds=bounds,
    )
    with Session(db, analyst=analyst or "default") as session:
        seen = session.preview(request)
        shown = seen.to_dict()
        if preview_only:
            if json_out:
                emit_json(shown)
            else:
                _print_interpretation(shown)
            return
        interactive_shown = confirm_sql is None and not (yes and seen.confidence != "low")
        if not interactive_shown:
            print_noise_warning(shown)  # said before the charge, also when nothing is asked
        if confirm_sql is None:
            confirm_sql = _confirmed_sql(shown, yes=yes, json_out=json_out)
        answer = session.answer(replace(request, expect_sql=confirm_sql))
    if json_out:
        emit_json(answer.to_dict())
        return
    if not interactive_shown and not answer.exact and answer.search is not None:
        print_notes(answer.search.notes)
    print_answer(answer)


def _print_interpretation(shown: dict[str, Any]) -> None:
    """The interpretation found on the synthetic copy: what will be counted, how sure, how accurate."""
    if "aggregate" in shown:
        _print_grouped_interpretation(shown)
        return
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
    drivers = sorted(shown.get("synthetic_shapley", {}).items(), key=lambda kv: -kv[1])
    total = sum(share for _name, share in drivers)
    if drivers and total > 0:
        shares = ", ".join(f"{name} {share / total * 100:.0f}%" for name, share in drivers)
        console.print(f"what drives the noise: the relations' shares of the sensitivity on the synthetic copy: {shares}", highlight=False)
    print_noise_warning(shown)
    print_notes(shown.get("notes", ()))
    others = [a for a in shown["alternatives"] if a["sql"] != shown["chosen_sql"]][:3]
    for a in others:
        console.print(f"  [dim]also considered: {a['sql']}[/]", highlight=False)


def _print_grouped_interpretation(shown: dict[str, Any]) -> None:
    """A question read as grouped or summed: the reading, its groups, cost and predicted error, the formulations weighed."""
    console.print(f"[bold]{escape(shown['question'])}[/]")
    console.print(f"will answer: {escape(shown['reading'])}", highlight=False)
    console.print(f"SQL: {escape(shown['chosen_sql'])}", highlight=False)
    if shown["confidence"] == "low":
        console.print(
            f"[bold yellow]low confidence[/]: the {shown['readings_proposed']} readings proposed for this question give "
            "different answers on the synthetic copy; check that this is the one you mean",
            highlight=False,
        )
    if shown["groups"] is not None:
        console.print(f"groups: {shown['groups']}, every one shown, zeros included ({escape(shown['domain'])})", highlight=False)
    else:
        console.print(f"groups: {escape(shown['domain'])}: {escape(shown['partition_selection']['note'])}", highlight=False)
    cost = shown["cost"]
    predicted = shown["predicted_error"]
    relative = shown.get("predicted_relative_error")
    said = ""
    if relative is not None:  # an AVG's error is relative to half its declared range (pimento.release.aggregate_accuracy)
        said = (f" ({float(relative) * 100:.3g}% of half the declared bounds' range)" if shown.get("aggregate") == "avg" else
                f" ({float(relative) * 100:.3g}% of the median group value on the copy, {predicted['median_value_on_copy']})")
    console.print(
        f"cost: epsilon {cost['epsilon']} delta {cost['delta']}; expected accuracy per group about +-{shown['estimated_half_width_95']:.4g} "
        f"(median over the groups, {predicted['interval_level'] * 100:.0f}%){said}; estimated on the synthetic copy, the released "
        "intervals are usually wider",
        highlight=False,
    )
    if shown.get("budget_split"):
        console.print(f"budget split: {escape(shown['budget_split'])}", highlight=False)
    if shown.get("epsilon_for_10_percent"):
        console.print(f"for about +-10% you need epsilon {shown['epsilon_for_10_percent']}", highlight=False)
    print_noise_warning(shown)
    print_notes(shown.get("notes", ()))
    for f in shown["formulations"]:
        if f["sql"] != shown["chosen_sql"]:
            console.print(f"  [dim]also considered (predicted error {f['predicted_relative_error']:.3g}): {escape(f['sql'])}[/]",
                          highlight=False)


def print_noise_warning(shown: dict[str, Any]) -> None:
    """The preview's warning when the answer would be mostly noise (:mod:`pimento.release.accuracy`), on stderr."""
    if shown.get("noise_warning"):
        err_console.print(f"[bold yellow]warning[/]: {escape(shown['noise_warning'])}", highlight=False)


def print_notes(notes) -> None:
    """Search notes the analyst must see (the LLM was unreachable and the offline parser answered), on stderr."""
    for note in notes:
        err_console.print(f"[bold yellow]note[/]: {escape(note)}", highlight=False)


def _confirmed_sql(shown: dict[str, Any], *, yes: bool, json_out: bool) -> str:
    """The SQL the analyst confirms (asked on a terminal), or a UserError: nothing is spent without it."""
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


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app`` (wiring only: the commands are the module-level functions above)."""
    app.command("search")(search_cmd)
    app.command("ask")(ask_cmd)
