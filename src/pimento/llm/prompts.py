"""Prompt builders. What may go into a prompt, and nothing else:

* the schema (:class:`~pimento.schema.Catalog`: table and column names, types, keys);
* the analyst's question;
* the policy text;
* values read from the SYNTHETIC database, through a :class:`SyntheticValues` object.

No builder takes an engine, so a prompt cannot read the private database. The only way to
put data values in a prompt is :class:`SyntheticValues`, which can only be built by
:meth:`SyntheticValues.from_engine`, and which refuses a database that has no
``_pimento_synth_meta`` table (the marker the synthesizer writes into every synthetic
database it produces). The canary test in ``tests/unit/llm/test_canary.py`` checks all of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlglot import exp

from pimento.engines import Engine
from pimento.errors import DataSourceError, InternalError
from pimento.llm.base import Message
from pimento.schema import Catalog
from pimento.schema.synthetic import SYNTH_META_TABLE
from pimento.sql.quote import quote_identifier

__all__ = [
    "AggregateSqlAnswer",
    "ExpansionAction",
    "ExpansionAnswer",
    "PROMPT_BUILDERS",
    "SYNTH_META_TABLE",
    "SqlAnswer",
    "SyntheticValues",
    "expansion_messages",
    "render_schema",
    "repair_messages",
    "zero_shot_messages",
]

_GUARD = object()


class SqlAnswer(BaseModel):
    """The structured answer of the zero-shot prompt: ``{"sql": "SELECT COUNT(*) ..."}``."""

    model_config = ConfigDict(extra="ignore")
    sql: str = Field(description="one SQL SELECT COUNT(...) statement")


class AggregateSqlAnswer(SqlAnswer):
    """The structured answer of the aggregate prompt: ``{"sql": "SELECT g, COUNT(*) ... GROUP BY g"}``.

    A separate model (not a changed :class:`SqlAnswer`): the JSON schema is part of every
    request, so the counting prompt's requests, and the replay fixtures recorded for them,
    stay byte-identical.
    """

    sql: str = Field(description="one SQL SELECT statement: optional GROUP BY columns and one COUNT, SUM or AVG")


class ExpansionAction(BaseModel):
    """One action proposed to extend a partial counting query (Section 4.1 of the paper)."""

    model_config = ConfigDict(extra="ignore")
    kind: Literal["add_relation", "set_count", "stop"]
    table: str | None = Field(None, description="add_relation: the table to add")
    join: str | None = Field(None, description="add_relation: equality joining it, e.g. a.x = b.y")
    filter: str | None = Field(None, description="add_relation: predicate on the new table only, or null")
    column: str | None = Field(None, description="set_count: alias.column to count, or null for *")
    distinct: bool = False


class ExpansionAnswer(BaseModel):
    """The structured answer of the expansion prompt."""

    model_config = ConfigDict(extra="ignore")
    actions: list[ExpansionAction]


class SyntheticValues:
    """Example values of text columns, read from a synthetic database only.

    Build it with :meth:`from_engine`; the constructor refuses direct calls, and
    ``from_engine`` refuses any database without the ``_pimento_synth_meta`` table.
    ``SyntheticValues.none()`` holds no value at all.
    """

    def __init__(self, values: Mapping[str, Mapping[str, tuple[str, ...]]], source: str, *, _guard: object = None):
        if _guard is not _GUARD:
            raise InternalError(
                "SyntheticValues cannot be built directly",
                hint="use SyntheticValues.from_engine(<synthetic engine>) or SyntheticValues.none()",
            )
        self._values = {t: {c: tuple(v) for c, v in cols.items()} for t, cols in values.items()}
        self.source = source

    @classmethod
    def none(cls) -> SyntheticValues:
        """No values: prompts will show the schema only."""
        return cls({}, "none", _guard=_GUARD)

    @classmethod
    def from_engine(
        cls,
        engine: Engine,
        catalog: Catalog | None = None,
        *,
        per_column: int = 5,
        max_chars: int = 40,
    ) -> SyntheticValues:
        """The ``per_column`` most frequent values of each text column of a synthetic database.

        Raises DataSourceError if ``engine`` is not a synthetic database (no ``_pimento_synth_meta``).
        """
        if not _is_synthetic(engine):
            raise DataSourceError(
                f"refusing to read prompt values from {engine.location}: it is not a synthetic database "
                f"(no {SYNTH_META_TABLE} table)",
                hint="values in LLM prompts must come from the synthetic copy: run `pimento synth` and pass "
                "its output (--synthetic)",
            )
        catalog = catalog if catalog is not None else engine.introspect()
        values: dict[str, dict[str, tuple[str, ...]]] = {}
        for table in catalog.tables:
            if table.name.lower().startswith("_pimento"):
                continue
            for column in table.columns:
                if column.type != "text":
                    continue
                col = quote_identifier(column.name, engine.dialect)
                tab = quote_identifier(table.name, engine.dialect)
                rows = engine.execute(
                    f"SELECT {col}, COUNT(*) AS n FROM {tab} WHERE {col} IS NOT NULL "
                    f"GROUP BY {col} ORDER BY n DESC, {col} LIMIT {int(per_column)}"
                ).rows
                shown = tuple(str(r[0])[:max_chars] for r in rows)
                if shown:
                    values.setdefault(table.name, {})[column.name] = shown
        return cls(values, engine.location, _guard=_GUARD)

    def of(self, table: str, column: str) -> tuple[str, ...]:
        """Values of ``table.column`` (case-insensitive), empty if none."""
        for t, cols in self._values.items():
            if t.lower() == table.lower():
                for c, vals in cols.items():
                    if c.lower() == column.lower():
                        return vals
        return ()

    def items(self) -> list[tuple[str, str, tuple[str, ...]]]:
        return [(t, c, v) for t, cols in self._values.items() for c, v in cols.items()]

    def __bool__(self) -> bool:
        return bool(self._values)


def _is_synthetic(engine: Engine) -> bool:
    try:
        engine.execute(f"SELECT COUNT(*) FROM {SYNTH_META_TABLE}")
    except DataSourceError:  # EngineError included: no such table
        return False
    return True


# ------------------------------------------------------------------------------ rendering
def render_schema(catalog: Catalog, values: SyntheticValues | None = None) -> str:
    """The schema as compact CREATE TABLE-like lines, with synthetic example values.

    Only names, types and keys come from the catalog; values come from ``values``.
    """
    lines = []
    for table in catalog.tables:
        if table.name.lower().startswith("_pimento"):
            continue
        cols = []
        for column in table.columns:
            text = f"{column.name} {column.type.upper()}"
            if column.name in table.primary_key and len(table.primary_key) == 1:
                text += " PRIMARY KEY"
            cols.append(text)
        extras = []
        if len(table.primary_key) > 1:
            extras.append(f"PRIMARY KEY ({', '.join(table.primary_key)})")
        extras += [f"UNIQUE ({', '.join(u)})" for u in table.unique]
        for fk in catalog.foreign_keys_of(table.name):
            extras.append(f"FOREIGN KEY ({', '.join(fk.columns)}) REFERENCES {fk.ref_table}({', '.join(fk.ref_columns)})")
        lines.append(f"CREATE TABLE {table.name} ({', '.join(cols + extras)});")
        if values:
            for column in table.columns:
                shown = values.of(table.name, column.name)
                if shown:
                    lines.append(f"-- examples of {table.name}.{column.name}: " + ", ".join(_quote(v) for v in shown))
    return "\n".join(lines)


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


_CLASS_RULES = """The query must have exactly this shape:
SELECT COUNT(*) | COUNT(column) | COUNT(DISTINCT column)
FROM table1 [alias] [JOIN table2 [alias] ON a.x = b.y ...]
[WHERE conditions]
Rules: every join is an equality between columns of two different tables; each table appears at most once;
each WHERE condition mentions one table only; no GROUP BY, HAVING, ORDER BY, LIMIT, UNION, WITH,
subqueries in FROM, outer joins, or aggregates other than COUNT."""

#: The rules of the aggregate prompt (``zero_shot_messages(..., aggregate=True)``): what
#: :func:`pimento.sql.parse.parse_aggregate_query` accepts.
_AGGREGATE_RULES = """The query must have exactly this shape:
SELECT [g1, g2,] COUNT(*) | COUNT(column) | COUNT(DISTINCT column) | SUM(column) | AVG(column)
FROM table1 [alias] [JOIN table2 [alias] ON a.x = b.y ...]
[WHERE conditions]
[GROUP BY g1, g2]
Rules: the outputs other than the aggregate are exactly the GROUP BY columns, each a plain column (no expression),
and there is no GROUP BY when there are none; exactly one aggregate; SUM and AVG take one numeric column (no
DISTINCT, no expression); every join is an equality between columns of two different tables; each table appears
at most once; each WHERE condition mentions one table only; no HAVING, ORDER BY, LIMIT, UNION, WITH, subqueries,
outer joins, or aggregates other than COUNT, SUM and AVG."""

_COUNT_EXAMPLE = '{"sql": "SELECT COUNT(*) FROM orders o WHERE o.status = \'shipped\'"}'
_AGGREGATE_EXAMPLE = '{"sql": "SELECT o.status, COUNT(*) FROM orders o GROUP BY o.status"}'


def zero_shot_messages(
    catalog: Catalog,
    question: str,
    *,
    values: SyntheticValues | None = None,
    policy: str | None = None,
    dialect: str = "duckdb",
    low_sensitivity: bool = False,
    aggregate: bool = False,
) -> tuple[Message, ...]:
    """Ask for one SQL counting query answering ``question``, as ``{"sql": "..."}``.

    ``low_sensitivity`` adds the paper's "sensitivity prompt" instruction (prefer
    formulations with fewer joins and more selective conditions). ``aggregate`` asks for a
    grouped COUNT, or a SUM or AVG of a column, grouped or not (the shape
    :func:`pimento.sql.parse.parse_aggregate_query` accepts); without it the prompt is the
    counting one, unchanged.
    """
    what, rules, example = (
        ("aggregate query", _AGGREGATE_RULES, _AGGREGATE_EXAMPLE) if aggregate else ("counting query", _CLASS_RULES, _COUNT_EXAMPLE)
    )
    system = (
        f"You translate questions about a relational database into one SQL {what} "
        f"in the {dialect} dialect.\n{rules}\n"
        'Answer with JSON only: one object with one key "sql" whose value is the query, for example\n'
        f"{example}"
    )
    if low_sensitivity:
        system += (
            "\nAmong correct queries, prefer the one whose answer changes least when one row of a table is "
            "added or removed: join as few tables as needed and count the most specific table."
        )
    user = _context(catalog, values, policy) + f"\n\nQuestion: {question.strip()}"
    return (Message("system", system), Message("user", user))


def expansion_messages(
    catalog: Catalog,
    question: str,
    partial_sql: str | None,
    *,
    values: SyntheticValues | None = None,
    policy: str | None = None,
    size: int = 5,
) -> tuple[Message, ...]:
    """Ask for up to ``size`` next actions extending a partial counting query (search expansion).

    ``partial_sql`` is the SQL of the query built so far (None at the root). The answer is
    :class:`ExpansionAnswer` JSON.
    """
    system = (
        "You help build one SQL counting query step by step. Actions: "
        '{"kind": "add_relation", "table": T, "join": "a.x = b.y" or null for the first table, '
        '"filter": predicate on T only or null}; {"kind": "set_count", "column": "alias.col" or null, '
        '"distinct": bool}; {"kind": "stop"}.\n'
        f"{_CLASS_RULES}\n"
        f'Answer with JSON only: {{"actions": [up to {int(size)} different actions]}}'
    )
    current = partial_sql.strip() if partial_sql else "(nothing yet)"
    user = (
        _context(catalog, values, policy)
        + f"\n\nQuestion: {question.strip()}\nQuery so far: {current}\nPropose the next actions."
    )
    return (Message("system", system), Message("user", user))


def repair_messages(messages: tuple[Message, ...], bad_answer: str, error: str) -> tuple[Message, ...]:
    """The conversation, the invalid answer, and a request to fix it (one repair round)."""
    return (
        *messages,
        Message("assistant", bad_answer),
        Message(
            "user",
            f"That answer is invalid: {error}. Reply again with JSON only, matching the requested format exactly.",
        ),
    )


def _context(catalog: Catalog, values: SyntheticValues | None, policy: str | None) -> str:
    if values is not None and not isinstance(values, SyntheticValues):
        raise InternalError("prompt values must be a SyntheticValues object (built from the synthetic database)")
    text = "Database schema:\n" + render_schema(catalog, values)
    if values:
        text += "\n(example values come from a synthetic copy of the data)"
    if policy and policy.strip():
        text += "\n\nPrivacy policy:\n" + policy.strip()
    return text


@dataclass(frozen=True)
class _Builder:
    name: str
    build: Any


#: Every prompt type, built from the same kind of inputs (the canary test builds each one).
PROMPT_BUILDERS: tuple[_Builder, ...] = (
    _Builder("zero_shot", lambda c, q, v, p: zero_shot_messages(c, q, values=v, policy=p)),
    _Builder("sensitivity", lambda c, q, v, p: zero_shot_messages(c, q, values=v, policy=p, low_sensitivity=True)),
    _Builder("expansion_root", lambda c, q, v, p: expansion_messages(c, q, None, values=v, policy=p)),
    _Builder(
        "expansion",
        lambda c, q, v, p: expansion_messages(c, q, f"SELECT COUNT(*) FROM {c.tables[0].name}", values=v, policy=p),
    ),
    _Builder(
        "repair",
        lambda c, q, v, p: repair_messages(zero_shot_messages(c, q, values=v, policy=p), "not json", "no JSON object"),
    ),
    _Builder("zero_shot_aggregate", lambda c, q, v, p: zero_shot_messages(c, q, values=v, policy=p, aggregate=True)),
)
