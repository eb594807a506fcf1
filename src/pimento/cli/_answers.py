"""How ``pimento sql`` and ``pimento ask`` show an answer: one function, :func:`print_answer`, over the
typed :class:`~pimento.release.answers.Answer` (its attributes, not its JSON; ``--json`` prints
``answer.to_dict()``).

A noisy count is its value and 95% interval (clamped at zero, said when it was), how it was released
(:func:`describe_release`) and, for a question, the end-to-end guarantee and what the synthetic copy
showed; an exact (ci) answer is its rows on the authorized data (:func:`print_ci`). Numbers are shown
as the JSON shows them: counts as plain numbers, budgets as exact decimals.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

from pimento.cli._common import console, err_console, print_authorized_rows
from pimento.numbers import format_number
from pimento.numbers import json_number

if TYPE_CHECKING:
    from pimento.release.answers import Answer
    from pimento.release.ask import SearchOutcome

__all__ = ["alternatives_table", "describe_release", "grouped_table", "print_answer", "print_ci", "print_grouped"]


def print_answer(answer: Answer) -> None:
    """``answer`` as ``pimento sql`` (SQL) and ``pimento ask`` (a question) print it."""
    asked = answer.question is not None
    if asked:
        console.print(f"[bold]{answer.question}[/]")
    if answer.grouped is not None:
        print_grouped(answer)
        if asked and answer.end_to_end is not None:  # a question read as grouped or summed (a noisy table)
            _print_grouped_question_part(answer)
        return
    if answer.exact:
        if asked:
            console.print(f"SQL: {answer.sql}", highlight=False)
        print_ci(answer)
        return
    if answer.remainder is not None:  # split: the authorized part exact, the remainder noisy
        if asked:
            console.print(f"authorized part (exact): [bold]{answer.authorized_exact}[/]; remainder ({answer.remainder}):", highlight=False)
        else:
            console.print(f"authorized part (exact): [bold]{answer.authorized_exact}[/]", highlight=False)
            console.print(f"remainder ({answer.remainder}):", highlight=False)
    console.print(_value_line(answer, prefix="answer: " if asked else "", style="bold green" if asked else "bold"), highlight=False)
    console.print(describe_release(answer), highlight=False)
    console.print(unit_line(answer), highlight=False)
    if asked:
        _print_question_part(answer)
        return
    if answer.guarantee_kind is not None and answer.context is not None:  # split, contextual
        ctx = answer.context
        console.print(f"guarantee: {answer.guarantee_kind}; context {ctx.sender} -> {ctx.recipient} for {ctx.purpose}", highlight=False)
    console.print(f"[dim]{answer.sql}[/]", highlight=False)


def print_sql_preview(shown: dict[str, Any], *, warning_only: bool = False) -> None:
    """A SQL preview (:func:`pimento.release.sql_preview.preview_sql`): the SQL as run, the cost, the estimate on the
    synthetic copy, the planner and the "mostly noise" warning (stderr); with ``warning_only``, the warning alone."""
    if shown.get("noise_warning"):
        err_console.print(f"[bold yellow]warning[/]: {escape(shown['noise_warning'])}", highlight=False)
    if warning_only:
        return
    console.print(f"SQL: {shown.get('normalized_sql') or shown['sql']}", highlight=False)
    cost = shown["cost"]
    console.print(f"cost: epsilon {cost['epsilon']} delta {cost['delta']} (nothing spent by this preview)", highlight=False)
    if shown.get("groups") is not None:
        console.print(f"groups: {shown['groups']} ({escape(str(shown.get('domain') or ''))})", highlight=False)
    if shown.get("estimated_half_width_95") is not None and shown.get("predicted_error") is not None:  # grouped: per group
        on_copy = shown.get("synthetic") or {}
        console.print(f"expected accuracy per group about +-{shown['estimated_half_width_95']:.4g} (median over the groups, 95%) at "
                      f"epsilon {cost['epsilon']}; the median group value on the synthetic copy is {on_copy.get('answer')}",
                      highlight=False)
    elif shown.get("estimated_half_width_95") is not None:
        on_copy = shown.get("synthetic") or {}
        console.print(f"expected accuracy about +-{shown['estimated_half_width_95']:.4g} (95%) at epsilon {cost['epsilon']}; "
                      f"the synthetic copy's answer is {on_copy.get('answer')}", highlight=False)
    rows = shown.get("planner") or []
    if len(rows) > 1:
        table = Table(title="what epsilon buys (estimated on the synthetic copy)")
        table.add_column("epsilon")
        table.add_column("95% half-width", justify="right")
        for row in rows:
            table.add_row(str(row["epsilon"]), f"+-{row['estimated_half_width_95']:.4g}")
        console.print(table)
    if shown.get("epsilon_for_10_percent"):
        console.print(f"for about +-10% you need epsilon {shown['epsilon_for_10_percent']}", highlight=False)
    for note in shown.get("notes", ()):
        console.print(f"[dim]note: {escape(note)}[/]", highlight=False)


def _value_line(answer: Answer, *, prefix: str, style: str) -> str:
    """The released value and its 95% interval, clamping and the answer cache said."""
    assert answer.value is not None and answer.interval is not None and answer.value_unclamped is not None  # a noisy count
    lo, hi = (json_number(end) for end in answer.interval)
    clamped = f"  [dim]clamped at 0 (noisy value {json_number(answer.value_unclamped)})[/]" if answer.clamped else ""
    cached = "  [dim]cached, no new cost[/]" if answer.cached else ""
    return f"{prefix}[{style}]{json_number(answer.value)}[/]  (95% interval {lo} .. {hi}){clamped}{cached}"


def describe_release(answer: Answer) -> str:
    """One line on how a count was released: the noise, the (DP) scale bound, the spend and what is left."""
    assert answer.noise_scale_upper is not None and answer.epsilon is not None and answer.delta is not None  # a noisy count
    assert answer.budget_left is not None and answer.epsilon_rs_bound is not None
    scale = float(answer.noise_scale_upper)
    if answer.interval_basis == "global_sensitivity":
        how = f"{answer.mechanism}: {answer.noise} noise of scale {scale:.4g} (global sensitivity 1)"
    elif answer.person_release is not None:  # a public scale: the truncation threshold(s) over epsilon
        how = f"{answer.mechanism}: {answer.noise} noise of scale {scale:.4g} (public: the truncation threshold and epsilon)"
    else:
        how = (
            f"{answer.mechanism}: {answer.noise} noise, scale at most {scale:.4g} "
            f"(DP estimate from epsilon {format_number(answer.epsilon_rs_bound)} of the spend)"
        )
    left = answer.budget_left
    return (
        f"{how}; spent epsilon {format_number(answer.epsilon)} delta {format_number(answer.delta)}; "
        f"left epsilon {format_number(left.epsilon)} delta {format_number(left.delta)}"
    )


def unit_line(answer: Answer) -> str:
    """The privacy unit a noisy count protects and, under a person unit, why its mechanism was chosen."""
    if answer.person_release is None:
        return f"privacy unit: {answer.unit} (one row of a private relation)"
    return f"privacy unit: one {answer.unit} with every row that references them; {answer.person_release.reason}"


def grouped_table(answer: Answer) -> Table:
    """A grouped or summed answer as a table readable at 80 columns: keys fold, numbers never wrap."""
    grouped = answer.grouped
    assert grouped is not None
    label = grouped.aggregate.upper() + (f"({grouped.column})" if grouped.column else "(*)")
    level = f"{float(grouped.confidence) * 100:.0f}%"
    table = Table(title=f"{label} per {', '.join(grouped.group_by)}" if grouped.group_by else label, title_justify="left")
    for name in grouped.group_by:
        table.add_column(escape(name), overflow="fold", ratio=1)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column(f"{level} interval", justify="right", no_wrap=True)
    for group in grouped.groups():
        value = "-" if group["value"] is None else _short(group["value"])
        lo, hi = group["interval"]
        table.add_row(*(escape(str(k)) for k in group["key"]), value, f"{_short(lo)} .. {_short(hi)}")
    return table


def _short(x: float | int) -> str:
    return str(x) if isinstance(x, int) else f"{x:.6g}"


def print_grouped(answer: Answer) -> None:
    """A grouped or summed answer: its table, how each vector was released, what the copy predicts, the spend."""
    grouped = answer.grouped
    assert grouped is not None and answer.budget_left is not None
    cached = "  [dim]cached, no new cost[/]" if answer.cached else ""
    console.print(grouped_table(answer))
    if not grouped.groups():
        console.print("no group reached the partition-selection threshold", highlight=False)
    console.print(f"groups: {escape(grouped.domain)}{cached}", highlight=False)
    for part in grouped.parts:
        basis = "global sensitivity" if part.interval_basis == "global_sensitivity" else "DP estimate"
        console.print(f"{part.name}: {part.mechanism}, {part.noise} noise per group, scale at most {float(part.noise_scale_upper):.4g} "
                      f"({basis}), epsilon {format_number(part.epsilon)} delta {format_number(part.delta)}", highlight=False)
    if grouped.budget_split:
        console.print(f"budget split: {escape(grouped.budget_split)}", highlight=False)
    selection = grouped.partition_selection
    if selection:
        odds = ", ".join(f"{n}: {p:.3g}" for n, p in selection["shown_probability"].items())
        threshold = float(Fraction(selection["threshold"]))
        console.print(f"partition selection: threshold {threshold:.4g}; probability that a group of this size is shown: {odds}",
                      highlight=False)
    copy = grouped.clipped_on_copy
    if copy:
        rows = copy.get("rows")
        bounds = " .. ".join(format_number(b) for b in grouped.bounds or ())
        said = f"{rows} of {copy.get('of_rows')} rows would be clipped to {bounds}" if rows is not None else ""
        console.print(f"on the synthetic copy: {escape(said or str(copy.get('note')))}", highlight=False)
    left = answer.budget_left
    console.print(f"spent epsilon {format_number(grouped.epsilon)} delta {format_number(grouped.delta)}; "
                  f"left epsilon {format_number(left.epsilon)} delta {format_number(left.delta)}", highlight=False)
    console.print(f"[dim]{escape(answer.sql)}[/]", highlight=False)


def _print_guarantee(answer: Answer) -> None:
    """A question's end-to-end guarantee: the synthetic copy's charge plus this release's."""
    e2e = answer.end_to_end
    assert e2e is not None
    public = f", for neighbours that agree on: {'; '.join(e2e.public_inputs)}" if e2e.public_inputs else ""
    console.print(
        f"end-to-end guarantee: ({format_number(e2e.epsilon)}, {format_number(e2e.delta)})-{e2e.kind}, {e2e.neighbours} neighbours"
        f" = synthetic copy ({format_number(e2e.synthetic.epsilon)}, {format_number(e2e.synthetic.delta)}) + this release "
        f"({format_number(e2e.release.epsilon)}, {format_number(e2e.release.delta)}){public}",
        highlight=False,
    )


def _print_grouped_question_part(answer: Answer) -> None:
    """A question answered by a noisy table: the guarantee, the formulation chosen and the parser's top reading it avoided."""
    search = answer.search
    assert search is not None
    _print_guarantee(answer)
    console.print(f"chosen for the lowest predicted error on the synthetic copy: {escape(answer.chosen_sql or search.result.sql)}",
                  highlight=False)
    if answer.avoided_sql:
        console.print(f"avoided (the parser's top reading): {escape(answer.avoided_sql)}", highlight=False)


def _print_question_part(answer: Answer) -> None:
    """A question's noisy answer: the end-to-end guarantee, the SQL chosen and what the synthetic copy showed."""
    search = answer.search
    assert answer.end_to_end is not None and search is not None  # a question's noisy answer has both
    _print_guarantee(answer)
    console.print(f"SQL: {answer.chosen_sql or search.result.sql}", highlight=False)
    drivers = ", ".join(f"{name} {share:.2f}" for name, share in sorted(answer.synthetic_shapley.items(), key=lambda kv: -kv[1]))
    console.print(
        f"on the synthetic copy: residual sensitivity {answer.synthetic_rs:.4g}"
        + (f"; what drives it (Shapley shares): {drivers}" if drivers else ""),
        highlight=False,
    )
    if answer.avoided_sql:
        console.print(f"avoided (zero-shot top-1): {answer.avoided_sql}", highlight=False)
    console.print(alternatives_table(search))


def print_ci(answer: Answer) -> None:
    """An exact (ci) answer: the authorized result, with its context, policy, provenance and guarantee."""
    assert answer.context is not None and answer.policy is not None  # a ci answer has both
    print_authorized_rows(answer.context, answer.policy, answer.columns, answer.rows,
                          title="on the authorized data (unauthorized cells are NULL)")
    provenance = answer.provenance or {}
    traced = [c for c in provenance.get("cells", []) if c["texts"]]
    if traced:  # the custodian's [provenance] lets the text of authorized cells flow (docs/ingest.md)
        console.print(f"read from ({provenance['release']}):", highlight=False)
        for c in traced[:20]:
            console.print(f"  row {c['row'] + 1}, {escape(c['column'])}: " + " | ".join(escape(t["text"]) for t in c["texts"]),
                          highlight=False)
        if len(traced) > 20:
            console.print(f"  ... {len(traced) - 20} more traced cells (use --json)")
    console.print(f"guarantee: {answer.guarantee_kind}", highlight=False)


def alternatives_table(outcome: SearchOutcome) -> Table:
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
