"""Ranked readings ``(column, operator, value)`` of one literal in the question.

A stored value found by the :class:`~pimento.nl.values.ValueIndex`, a literal placed by open value
linking (:mod:`pimento.nl.open_values`), a text literal on a column named near it, a number on a
numeric (or year, date, key) column.
"""

from __future__ import annotations

from typing import Any

from pimento.nl.comparisons import _negated, _operator
from pimento.nl.open_values import Span, link_span, numeric_placeholder
from pimento.nl.predicates import _Option, _Pred
from pimento.nl.schema_linking import (
    _GENERIC,
    _Context,
    _is_key_column,
    _key_columns,
    _names_column_itself,
    _strength,
)
from pimento.nl.text import Token, number_value
from pimento.nl.values import ValueHit
from pimento.schema import Catalog


def _near_first(ctx: _Context, hits: list[ValueHit], at: int) -> list[ValueHit]:
    """Value hits with the columns named near the literal first (stable otherwise): a value
    stored in many columns ('Y') is kept for the column the question names ("active")."""
    return sorted(hits, key=lambda h: -ctx.column_hint(h.table, h.column, at, exclude=frozenset({at})))


def _hit_option(
    ctx: _Context, hit: ValueHit, at: int, base: float, neg: bool, used: frozenset[int], last: int | None = None
) -> _Option:
    hint = max(ctx.column_hint(hit.table, hit.column, at, exclude=used), ctx.column_hint(hit.table, hit.column, last or at, exclude=used))
    table_hint = ctx.table_hint(hit.table, exclude=used)
    score = base + 0.35 * hint + 0.1 * table_hint
    pred = _Pred(hit.table, hit.column, "<>" if neg else "=", (hit.value,))
    return _Option((pred,), score, f"value {hit.value!r} -> {hit.table}.{hit.column} ({hit.how} match)")


def _claimed(tokens: list[Token], own: tuple[int, ...], literals: list[tuple[int, int]]) -> frozenset[int]:
    """Words nearer another literal than this one: "Professors in building NEB" - building is NEB's."""

    def dist(i: int, lo: int, hi: int) -> int:
        return 0 if lo <= i <= hi else min(abs(i - lo), abs(i - hi))

    def coordinated(lo: int, hi: int) -> bool:  # "Aberdeen or Abilene" share their label
        between = tokens[min(hi, own[-1]) + 1 : max(lo, own[0])]
        return bool(between) and all(t.lower in ("or", "and", ",") for t in between)

    others = [(lo, hi) for lo, hi in literals if (lo, hi) != (own[0], own[-1]) and not coordinated(lo, hi)]
    return frozenset(t.index for t in tokens if any(dist(t.index, lo, hi) < dist(t.index, own[0], own[-1]) for lo, hi in others))


def _open_options(ctx: _Context, span: Span, n: int = 6, claimed: frozenset[int] = frozenset()) -> list[_Option]:
    """Options for a literal the value index does not hold (see nl/open_values.py)."""
    neg = _negated(ctx.tokens, span.tokens[0])
    out = []
    # the counted noun ("car makers in France") names its table, not the literal's column
    ignore = frozenset(t.index for t in ctx.np if any(_strength(t, w) >= 0.85 for e in ctx.tables for w in e.words))
    for link in link_span(span, ctx.tokens, ctx.catalog, ctx.values, ctx, keys=_key_columns(ctx.catalog), ignore=ignore, claimed=claimed)[:n]:
        preds = tuple(_Pred(t, c, "<>" if neg else "=", (v,)) for t, c, v in link.pairs)
        pairs = ", ".join(f"{t}.{c} = {v!r}" for t, c, v in link.pairs)
        out.append(_Option(preds, link.score, f"literal {span.text!r}: {pairs} ({link.why})"))
    return out


def _fallback_text_options(ctx: _Context, t: Token, *, like: bool) -> list[_Option]:
    """A literal not found among stored values: a text column named near it, or a name/title column."""
    out = []
    for element in ctx.columns:
        column = ctx.catalog.table(element.table).column(element.column or "")
        if column.type not in ("text", "other"):
            continue
        hint = ctx.column_hint(element.table, element.column or "", t.index, width=4, exclude=frozenset({t.index}))
        if hint <= 0 and not ({"name", "title"} & set(element.words)):
            continue
        table_hint = ctx.table_hint(element.table, exclude=frozenset({t.index}))
        score = 0.3 + 0.4 * hint + 0.1 * table_hint + (0.1 if "name" in element.words or "title" in element.words else 0)
        if like:
            pred = _Pred(element.table, element.column or "", "LIKE", (f"%{t.text}%",))
        else:
            pred = _Pred(element.table, element.column or "", "<>" if _negated(ctx.tokens, t.index) else "=", (t.text,))
        out.append(_Option((pred,), score, f"literal {t.text!r} -> {pred.describe()} (not among stored values)"))
    return out


def _number_options(ctx: _Context, t: Token, num: float) -> list[_Option]:
    tokens = ctx.tokens
    op = _operator(tokens, t.index)
    between = None
    if t.index + 2 < len(tokens) and tokens[t.index + 1].lower == "and" and tokens[t.index + 2].kind == "number":
        if t.index >= 1 and tokens[t.index - 1].lower == "between":
            between = number_value(tokens[t.index + 2].text)
    if _negated(tokens, t.index) and op == "=":
        op = "<>"
    year_like = isinstance(num, int) and 1800 <= num <= 2100
    out = []
    ranges = {(r.table, r.column): r for r in ctx.values.numeric}
    entity = _entity_before(ctx, t.index) if isinstance(num, int) else frozenset()
    for element in ctx.columns:
        column = ctx.catalog.table(element.table).column(element.column or "")
        key = (element.table, element.column or "")
        numeric = column.type in ("integer", "real")
        stored = ctx.values.values_of(*key) if not numeric else ()
        text_numbers = numeric or (stored and sum(number_value(str(v)) is not None for v in stored[:50]) >= 0.8 * min(len(stored), 50))
        hint = ctx.column_hint(element.table, element.column or "", t.index, width=4, exclude=frozenset({t.index}))
        # a text column the index shows nothing of (placeholders on a synthetic copy) may hold
        # numbers: open to a number only when the question names it right there
        unseen = (
            not text_numbers
            and column.type in ("text", "other")
            and t.text[:1].isdigit()
            and (hint >= 0.5 and _names_column_itself(element) or year_like and {"year", "date"} & set(element.words))
            and numeric_placeholder(ctx.values, ctx.catalog, *key)
        )
        if year_like and column.type in ("date", "timestamp") and between is None:
            # "seen in 2023" on a date column: the year's range
            date_preds = _year_range(element.table, element.column or "", int(num), op)
            if date_preds:
                score = 0.6 + 0.6 * hint
                out.append(_Option(date_preds, score, f"year {t.text} -> {' AND '.join(p.describe() for p in date_preds)}"))
            continue
        if not text_numbers and not unseen:
            continue
        score = 0.25 + 0.6 * hint - (0.1 if unseen else 0.0)
        if unseen and year_like and not {"year", "date"} & set(element.words):
            score -= 0.2  # "the Spring 2010 semester": a year is stored as a year, not in the text column named beside it
        r = ranges.get(key)
        if r is not None:
            if r.low <= num <= r.high:
                score += 0.15
            elif op == "=":
                score -= 0.3
        if year_like and ({"year", "date"} & set(element.words)):
            score += 0.35
        if op == "=" and _identifies(ctx.catalog, element.table, element.column or "", entity):
            # "patient 17": the key of the table named right before the number (or a foreign key
            # to it, preferably in a table the question names: "visits did patient 17 have")
            score += 0.6 + 0.1 * ctx.table_hint(element.table, exclude=frozenset({t.index}))
        elif _is_key_column(ctx.catalog, element.table, element.column or "") and not _asks_for_identifier(tokens, t.index):
            score -= 0.45  # keys and foreign keys are identifiers, rarely compared with a number
        if score < 0.3:
            continue
        value: Any = num
        if not numeric:
            value = t.text
        if between is not None:
            pred = _Pred(element.table, element.column or "", "BETWEEN", (num, between))
        else:
            pred = _Pred(element.table, element.column or "", op, (value,))
        out.append(_Option((pred,), score, f"number {t.text} -> {pred.describe()}"))
    # a number stored as a text value (codes): exact match
    for h in ctx.values.lookup(t.text)[:3]:
        if not any(o.preds[0].table == h.table and o.preds[0].column == h.column for o in out):
            if op in (">", "<", ">=", "<=") and _is_key_column(ctx.catalog, h.table, h.column):
                continue  # "heavier than 10" compares a measurement; an identifier equal to 10 is not meant
            out.append(_hit_option(ctx, h, t.index, 0.5, op == "<>", frozenset({t.index})))
    return out


def _year_range(table: str, column: str, year: int, op: str) -> tuple[_Pred, ...]:
    """Predicates placing a date column in (or before/after) a calendar year."""
    start, end = f"{year:04d}-01-01", f"{year + 1:04d}-01-01"
    if op == "=":
        return (_Pred(table, column, ">=", (start,)), _Pred(table, column, "<", (end,)))
    if op == "<>":
        return ()
    return ({">": (_Pred(table, column, ">=", (end,)),), ">=": (_Pred(table, column, ">=", (start,)),),
             "<": (_Pred(table, column, "<", (start,)),), "<=": (_Pred(table, column, "<", (end,)),)}[op])  # fmt: skip


def _entity_before(ctx: _Context, i: int) -> frozenset[str]:
    """Tables named by the word right before position ``i`` ("patient 17", "order #12")."""
    j = i - 1
    if j >= 0 and ctx.tokens[j].text in ("#", "no", "No", "number", "id", "ID"):
        j -= 1
    if j < 0 or ctx.tokens[j].kind != "word" or ctx.tokens[j].is_stop:
        return frozenset()
    tok = ctx.tokens[j]
    return frozenset(
        e.table for e in ctx.tables if any(_strength(tok, w) >= 0.85 for w in e.words if w not in _GENERIC)
    )


def _identifies(catalog: Catalog, table: str, column: str, entities: frozenset[str]) -> bool:
    """``table.column`` is the single-column key of one of ``entities`` or a foreign key to it."""
    if not entities:
        return False
    for name in entities:
        if catalog.table(name).primary_key == (column,) and name == table:
            return True
    return any(
        fk.table == table and fk.columns == (column,) and fk.ref_table in entities
        and catalog.table(fk.ref_table).primary_key == fk.ref_columns
        for fk in catalog.foreign_keys
    )  # fmt: skip


def _asks_for_identifier(tokens: list[Token], i: int) -> bool:
    near = tokens[max(0, i - 2) : i]
    return any(t.lower in ("id", "identifier", "number", "code", "no", "#") for t in near)
