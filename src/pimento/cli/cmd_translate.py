"""``pimento translate``: question(s) -> ranked SQL candidates (offline parser or LLM).

``--kind count`` (default): DP-compatible counting SQL; ``--kind aggregate``: grouped COUNT, SUM or
AVG readings (:func:`pimento.nl.translate_aggregate`, or the LLM's aggregate prompt with ``--llm``);
``--kind select``: any select-project-join (projection and filter over joined relations, or a
count) for CI mode.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from pimento.cli._checks import require_database
from pimento.cli._common import console, emit_json, err_console, handle_errors, open_database

if TYPE_CHECKING:
    from pimento.engines.database import Database

__all__ = ["register", "translate_cmd"]

_PRIVATE_WARNING = (
    "WARNING: values are read from the PRIVATE database (--allow-private-values). Literal values linked "
    "this way shape the query from private data outside any privacy budget: never do this in production; "
    "pass --synthetic SYN (the DP synthetic copy) instead. This use is written to the audit log."
)


@handle_errors
def translate_cmd(
    question: str = typer.Argument(None, help="The counting question (or use --questions FILE)."),
    db: str = typer.Option(..., "--db", help="Database file (DuckDB/SQLite) or postgresql:// DSN: its schema is used."),
    synthetic: str = typer.Option(None, "--synthetic", help="The synthetic database: literal values are read from it."),
    questions: Path = typer.Option(None, "--questions", help="A file with one question per line; prints one JSON object per line."),
    llm: str = typer.Option(None, "--llm", help="OpenAI-compatible endpoint URL (or replay:DIR) for zero-shot generation."),
    k: int = typer.Option(5, "--k", min=1, max=50, help="How many candidates to return."),
    allow_private_values: bool = typer.Option(
        False, "--allow-private-values", help="Custodian tool (shows private data, audited): without --synthetic, read values from --db; testing only."
    ),
    max_values: int = typer.Option(2000, "--max-values", help="Distinct values read per text column."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    kind: str = typer.Option(
        "count",
        "--kind",
        help="count: DP-compatible counting SQL; aggregate: grouped COUNT, SUM or AVG; select: projection/filter over joins (CI mode).",
    ),
) -> None:
    """Translate questions to ranked SQL candidates with scores (counts, grouped counts, sums and averages, or any select-project-join)."""
    from pimento.errors import UserError

    if (question is None) == (questions is None):
        raise UserError("give either a QUESTION or --questions FILE (exactly one)")
    if kind not in _KINDS:
        raise UserError(f"--kind must be one of {', '.join(map(repr, _KINDS))}, not {kind!r}")
    if kind == "select" and llm:
        raise UserError(
            "--llm is not available with --kind select yet: the LLM path generates counting and aggregate SQL only",
            hint="drop --llm (the offline parser answers select questions) or use --kind count or --kind aggregate",
        )
    if question is not None and not question.strip():
        raise UserError("the question is empty", hint="give a question such as 'How many patients are there?'")
    require_database(db)
    database = open_database(db)
    catalog = database.catalog
    dialect = database.engine.dialect
    values, values_from, syn_engine = _value_index(database, synthetic, allow_private_values, max_values)
    backend = _backend(llm) if llm else None

    if questions is not None:
        try:
            lines = [line.strip() for line in questions.read_text().splitlines() if line.strip()]
        except OSError as exc:
            raise UserError(f"cannot read {questions}: {exc.strerror}") from None
        for text in lines:
            try:
                payload = _answer(text, catalog, values, values_from, dialect, k, backend, syn_engine, kind)
            except UserError as exc:
                payload = {"question": text, "error": _error(exc)}
            sys.stdout.write(json.dumps(payload, default=str) + "\n")
            sys.stdout.flush()
        return
    payload = _answer(question, catalog, values, values_from, dialect, k, backend, syn_engine, kind)
    if json_out:
        emit_json(payload)
        return
    _show(payload)


#: the values of --kind
_KINDS = ("count", "aggregate", "select")


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app`` (wiring only: the commands are the module-level functions above)."""
    app.command("translate")(translate_cmd)


def _value_index(database: Database, synthetic: str | None, allow_private: bool, max_values: int):
    from pimento.engines import open_engine
    from pimento.nl import ValueIndex

    from pimento.mechanisms.ledger import Ledger

    location = str(database.location)
    if synthetic:
        from pimento.release.synthetic import synthetic_guarantee

        # Values are read from the copy only if it is this database's charged synthetic copy:
        # any other file (the private database itself, say) would put private values in the SQL.
        with Ledger.for_database(location, database.settings) as ledger:
            synthetic_guarantee(ledger, location, synthetic)
        engine = open_engine(synthetic)
        index = ValueIndex.from_engine(engine, engine.introspect(), max_values_per_column=max_values)
        return index, f"synthetic:{synthetic}", engine
    if allow_private:
        err_console.print(f"[bold red]{_PRIVATE_WARNING}[/]", highlight=False)
        with Ledger.for_database(location, database.settings) as ledger:
            ledger.record_custodian_action(location, "translate --allow-private-values", {"max_values": max_values})
        index = ValueIndex.from_engine(database.engine, database.catalog, max_values_per_column=max_values)
        return index, f"private:{database.engine.location}", None
    err_console.print(
        "note: no --synthetic database given, so no stored values are read; only quoted literals and numbers "
        "are linked (pass --synthetic SYN for value linking)",
        highlight=False,
    )
    return ValueIndex.empty(), "none", None


def _backend(url: str):
    from pimento.errors import LLMError

    try:
        from pimento.llm import open_backend
    except ImportError:  # pragma: no cover - the llm package ships with pimento
        return None
    try:
        return open_backend(url=url)
    except LLMError as exc:
        err_console.print(f"[bold yellow]LLM unavailable:[/] {exc.one_line()}; using the offline parser", highlight=False)
        return None


def _answer(question, catalog, values, values_from, dialect, k, backend, syn_engine, kind="count") -> dict[str, Any]:
    from pimento.nl import detect_intent, translate, translate_select

    if kind == "aggregate":
        return _aggregate_answer(question, catalog, values, values_from, dialect, k, backend, syn_engine)
    if kind == "select":
        found = translate_select(question, catalog, values, k=k)
        selects = [
            {"rank": i + 1, "sql": c.query.to_sql(dialect), "score": round(c.score, 4), "explanation": list(c.explanation)}
            for i, c in enumerate(found)
        ]
        return _payload(question, "select", "offline", values_from, None, selects, _usage_zero())

    detect_intent(question)  # refuse non-counting questions before spending LLM calls
    fallback = None
    usage = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    if backend is not None:
        llm_result, usage, fallback = _zero_shot(question, catalog, backend, k, dialect, syn_engine)
        if llm_result is not None:
            return {
                "question": question,
                "source": "llm",
                "values_from": values_from,
                "fallback": None,
                "candidates": llm_result,
                "usage": usage,
            }
        err_console.print(f"[bold yellow]{fallback}[/]", highlight=False)
    candidates = translate(question, catalog, values=values, k=k)
    return {
        "question": question,
        "source": "offline",
        "values_from": values_from,
        "fallback": fallback,
        "candidates": [
            {"rank": i + 1, "sql": c.query.to_sql(dialect), "score": round(c.score, 4), "explanation": list(c.explanation)}
            for i, c in enumerate(candidates)
        ],
        "usage": usage,
    }


def _aggregate_answer(question, catalog, values, values_from, dialect, k, backend, syn_engine) -> dict[str, Any]:
    """Grouped COUNT, SUM and AVG candidates: the LLM's (if any are usable), else the offline readings."""
    from pimento.nl import translate_aggregate

    fallback = None
    usage = _usage_zero()
    if backend is not None:
        llm_result, usage, fallback = _zero_shot(question, catalog, backend, k, dialect, syn_engine, aggregate=True)
        if llm_result is not None:
            return _payload(question, "aggregate", "llm", values_from, None, llm_result, usage)
        err_console.print(f"[bold yellow]{fallback}[/]", highlight=False)
    found = translate_aggregate(question, catalog, values=values, k=k)
    candidates = [{"rank": i + 1, **c.to_dict(), "sql": c.query.to_sql(dialect)} for i, c in enumerate(found)]
    return _payload(question, "aggregate", "offline", values_from, fallback, candidates, usage)


def _payload(question, kind, source, values_from, fallback, candidates, usage) -> dict[str, Any]:
    """The answer object of a ``--kind select`` or ``--kind aggregate`` question (``kind`` first after the question)."""
    return {
        "question": question,
        "kind": kind,
        "source": source,
        "values_from": values_from,
        "fallback": fallback,
        "candidates": candidates,
        "usage": usage,
    }


def _zero_shot(question, catalog, backend, k, dialect, syn_engine, aggregate=False):
    """LLM candidates ranked by how many samples agree, or (None, usage, why we fell back)."""
    from collections import Counter

    from pimento.errors import LLMError, UserError
    from pimento.llm import SyntheticValues, Usage, generate_zero_shot

    usage = Usage()
    try:
        prompt_values = SyntheticValues.from_engine(syn_engine) if syn_engine is not None else SyntheticValues.none()
    except UserError:
        prompt_values = SyntheticValues.none()
    try:
        result = generate_zero_shot(
            backend, catalog, question, k=k, values=prompt_values, dialect=dialect, usage=usage, aggregate=aggregate
        )
    except LLMError as exc:
        return None, _usage(usage), f"LLM unreachable or failed ({exc.one_line()}); fell back to the offline parser"
    if not result.candidates:
        dropped = ", ".join(f"{n} {reason}" for reason, n in sorted(result.dropped.items())) or "no answer"
        what = "aggregate" if aggregate else "counting"
        return None, _usage(usage), f"the LLM returned no usable {what} SQL ({dropped}); fell back to the offline parser"
    votes = Counter(c.query for c in result.candidates)
    ranked = []
    for i, (q, n) in enumerate(votes.most_common()):
        row = {"rank": i + 1, "sql": q.to_sql(dialect), "score": round(n / result.k, 4), "explanation": [f"{n} of {result.k} samples"]}
        if aggregate:
            row["kind"] = q.kind.value  # count, sum or avg, as the offline readings say
        ranked.append(row)
    return ranked, _usage(usage), None


def _usage_zero() -> dict[str, int]:
    return {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def _usage(usage: Any) -> dict[str, int]:
    return {
        "calls": usage.calls,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    }


def _error(exc: Any) -> dict[str, Any]:
    return {"kind": type(exc).__name__, "reason": getattr(exc, "reason", None), "message": exc.one_line()}


def _show(payload: dict[str, Any]) -> None:
    # escaped: "[offline; values: none]" (or brackets in SQL) would otherwise be read as markup and dropped
    table = Table(title=escape(f"{payload['question']}  [{payload['source']}; values: {payload['values_from']}]"))
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("SQL")
    aggregate = payload.get("kind") == "aggregate"
    if aggregate:
        table.add_column("why")
    for c in payload["candidates"]:
        why = [escape("\n".join(c["explanation"]))] if aggregate else []
        table.add_row(str(c["rank"]), f"{c['score']:.3f}", escape(c["sql"]), *why)
    console.print(table)
    if not payload["candidates"] and payload.get("kind") == "aggregate":
        console.print(
            "no candidate: the question asks for no group, average or total, or none of its words links to a column "
            "(a plain count: use --kind count)"
        )
    elif not payload["candidates"]:
        console.print("no candidate: no word of the question could be linked to the schema")
    u = payload["usage"]
    console.print(f"LLM calls: {u['calls']}, tokens: {u['total_tokens']}")
