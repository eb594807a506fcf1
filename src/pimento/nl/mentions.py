"""The question's value mentions: every literal, stored value, relative period and yes/no adjective.

:func:`_value_mentions` walks the tokens (quoted strings, numbers, word n-grams against stored
values, open literals, periods such as "this month", boolean columns named by an adjective) and
gives each mention its ranked options; mentions joined by "or" on one column are merged.
"""

from __future__ import annotations

import datetime as _dt
import re

from pimento.nl.comparisons import _LIKE_CUES, _negated, _phrase_before
from pimento.nl.literal_options import (
    _claimed,
    _fallback_text_options,
    _hit_option,
    _near_first,
    _number_options,
    _open_options,
)
from pimento.nl.open_values import CODED_WORDS, column_profile, find_spans, quoted_span
from pimento.nl.predicates import _as_like, _mark_disjunction, _Mention, _Option, _Pred, _top
from pimento.nl.schema_linking import _column_label, _Context, _match, _names_column, _names_schema
from pimento.nl.text import number_value


#: Words whose stored value is usually a code: "female" -> 'F'.
_VALUE_SYNONYMS = CODED_WORDS
_TRUTHY = ("T", "Y", "Yes", "yes", "YES", "True", "true", "TRUE", "y", "t", 1, True)
_FALSY = ("F", "N", "No", "no", "NO", "False", "false", "FALSE", "n", "f", 0, False)


def _value_mentions(ctx: _Context) -> list[_Mention]:
    tokens = ctx.tokens
    taken: set[int] = set()
    mentions: list[_Mention] = []
    cue_end = ctx.intent.start
    head = ctx.np[-1].index if ctx.np else -1

    # every literal's extent, so that words nearer another literal do not name this one's column
    quoted_lits = [(t.index, t.index) for t in tokens if t.kind in ("quoted", "number")]
    # quoted strings first
    for t in tokens:
        if t.kind != "quoted":
            continue
        hits = ctx.values.lookup(t.text)
        like = _phrase_before(tokens, t.index, 4)
        wants_like = any(w in like.split() for w in _LIKE_CUES)
        neg = _negated(tokens, t.index)
        options = []
        if wants_like:
            options += _fallback_text_options(ctx, t, like=True)
        for h in _near_first(ctx, hits, t.index)[:4]:
            base = 1.0 if h.how == "exact" else 0.85
            options.append(_hit_option(ctx, h, t.index, base, neg, frozenset({t.index})))
        if not hits and not wants_like:
            own = quoted_span(t)
            spans_now = find_spans(tokens, {i for i, _ in quoted_lits}, lambda tok: _names_schema(ctx, tok))
            lits = quoted_lits + [(s.tokens[0], s.tokens[-1]) for s in spans_now]
            claimed = _claimed(tokens, own.tokens, lits)
            options += _open_options(ctx, own, claimed=claimed) or _fallback_text_options(ctx, t, like=False)
        if options:
            mentions.append(_Mention(frozenset({t.index}), _top(options), optional=False, text=t.text))
        taken.add(t.index)

    # numbers
    for t in tokens:
        if t.kind != "number" or t.index in taken:
            continue
        num = number_value(t.text)
        if num is None:
            continue
        options = _number_options(ctx, t, num)
        used = {t.index}
        if options and options[0].preds[0].op == "BETWEEN":
            used.add(t.index + 2)  # the upper bound belongs to this mention
        if options:
            mentions.append(_Mention(frozenset(used), _top(options), optional=t.start < cue_end, text=t.text))
        taken.update(used)

    # word n-grams against stored values, longest first
    words = [t for t in tokens if t.kind == "word"]
    for n in range(6, 0, -1):
        for i in range(len(words) - n + 1):
            group = words[i : i + n]
            if any(g.index in taken for g in group):
                continue
            if any(group[j + 1].index != group[j].index + 1 for j in range(n - 1)):
                continue
            if group[0].start < cue_end or all(g.is_stop for g in group) or group[0].is_stop or group[-1].is_stop:
                continue
            if n == 1 and (group[0].index == head or len(group[0].text) < 2 and not group[0].text.isupper()):
                continue
            text = " ".join(g.text for g in group)
            hits = ctx.values.lookup(text)
            if not hits and n == 1 and group[0].lemma in _VALUE_SYNONYMS:
                hits = [h for alt in _VALUE_SYNONYMS[group[0].lemma] for h in ctx.values.lookup(alt)]
                hits = [h for h in hits if str(h.value) in _VALUE_SYNONYMS[group[0].lemma]]
            if not hits:
                continue
            idx = frozenset(g.index for g in group)
            capital = any(g.capitalized and g.index > 0 for g in group) or group[0].text.isupper()
            if n > 1:
                base = 0.95
            elif capital:
                base = 0.85
            else:
                base = 0.6
            # a lower-case word that names the schema is more likely a schema word than a value
            if n == 1 and not capital and _names_schema(ctx, group[0]):
                base -= 0.25
            neg = _negated(tokens, group[0].index)
            options = [
                _hit_option(ctx, h, group[0].index, base * (1.0 if h.how == "exact" else 0.85), neg, idx, last=group[-1].index)
                for h in _near_first(ctx, hits, group[0].index)[:6]
            ]
            mentions.append(_Mention(idx, _top(options), optional=base < 0.8, text=text))
            taken.update(idx)

    # literals the value index cannot place (open value linking, nl/open_values.py)
    spans = find_spans(
        tokens, taken, lambda tok: _names_schema(ctx, tok), lambda tok: _column_label(ctx, tok), lambda tok: _names_column(ctx, tok)
    )
    np_tokens = {t.index for t in ctx.np[-1:]}  # the counted head; a modifier before it may be a value ("dog pets")
    spans = [s for s in spans if s.kind != "beside" or (tokens[s.tokens[0]].start >= cue_end and s.tokens[0] not in np_tokens)]
    literals = [(s.tokens[0], s.tokens[-1]) for s in spans] + [(t.index, t.index) for t in tokens if t.kind in ("quoted", "number")]
    for span in spans:
        if any(i in taken for i in span.tokens):
            continue
        options = _open_options(ctx, span, claimed=_claimed(tokens, span.tokens, literals))
        if options and any(w in _phrase_before(tokens, span.tokens[0], 3).split() for w in _LIKE_CUES):
            options = [_as_like(o) for o in options]  # "a location that contains NY": a substring
        if options:
            # a multi-word capitalised name mid-sentence ("Rodrick Heaney") is a filter the question states
            strong = span.kind in ("code", "proper") and (options[0].score >= 0.55 or len(span.tokens) >= 2)
            mentions.append(_Mention(frozenset(span.tokens), options, optional=not strong, text=span.text))
            taken.update(span.tokens)

    # relative periods on date columns ("seen this month", "last year", "today")
    mentions += _period_mentions(ctx, taken)

    # yes/no columns named by an adjective ("official languages" -> IsOfficial = 'T')
    for element in ctx.columns:
        if not element.boolean or not element.words or element.column is None:
            continue
        near = [t for t in tokens if t.kind == "word" and t.index not in taken and not t.is_stop]
        score, matched = _match(element, near)
        if score < 0.85:
            continue
        stored = ctx.values.values_of(element.table, element.column)
        first = min(matched)
        neg = _negated(tokens, first)
        pool = _FALSY if neg else _TRUTHY
        value = next((v for v in pool if v in stored), None)
        if value is None and not column_profile(ctx.values, ctx.catalog, element.table, element.column or "").informative:
            # nothing but placeholders (or nothing) stored: a yes/no flag, spelled by its type
            typed = ctx.catalog.table(element.table).column(element.column or "").type == "boolean"
            value = (not neg) if typed or not stored else pool[0]
        if value is None:
            continue
        pred = _Pred(element.table, element.column, "=", (value,))
        mentions.append(
            _Mention(frozenset(matched), [_Option((pred,), 0.7 * score, f"'{tokens[first].text}' -> {pred.describe()}")], True, tokens[first].text)
        )
    return _merge_or(ctx, mentions)


_PERIOD = re.compile(r"\b(?:(this|current|last|past|previous)\s+(month|year|week)|(today|yesterday))\b", re.IGNORECASE)


def _period_bounds(today: _dt.date, which: str, unit: str) -> tuple[_dt.date, _dt.date]:
    """[start, end) of the calendar period: "this month" on 2026-11-24 is [11-01, 12-01)."""
    back = which in ("last", "past", "previous")
    if unit == "today":
        return today, today + _dt.timedelta(days=1)
    if unit == "yesterday":
        return today - _dt.timedelta(days=1), today
    if unit == "year":
        year = today.year - (1 if back else 0)
        return _dt.date(year, 1, 1), _dt.date(year + 1, 1, 1)
    if unit == "week":
        monday = today - _dt.timedelta(days=today.weekday()) - _dt.timedelta(days=7 if back else 0)
        return monday, monday + _dt.timedelta(days=7)
    first = today.replace(day=1)
    if back:
        first = (first - _dt.timedelta(days=1)).replace(day=1)
    nxt = (first + _dt.timedelta(days=32)).replace(day=1)
    return first, nxt


def _period_mentions(ctx: _Context, taken: set[int]) -> list[_Mention]:
    """"this month", "last year", "today": a range on a DATE/TIMESTAMP column (by the words near it)."""
    out: list[_Mention] = []
    dated = [e for e in ctx.columns if ctx.catalog.table(e.table).column(e.column or "").type in ("date", "timestamp")]
    if not dated:
        return out
    for m in _PERIOD.finditer(ctx.question):
        idx = frozenset(t.index for t in ctx.tokens if t.start >= m.start() and t.end <= m.end())
        if not idx or idx & taken or min(t.start for t in ctx.tokens if t.index in idx) < ctx.intent.start:
            continue
        which, unit = (m.group(1) or "").lower(), (m.group(2) or m.group(3)).lower()
        if any(e.words == (which, unit) for e in ctx.columns):
            continue  # "first year and last year": the phrase names a column (Last_year)
        start, end = _period_bounds(ctx.today or _dt.date.today(), which, unit)
        at = min(idx)
        options = []
        for e in dated:
            hint = max(ctx.column_hint(e.table, e.column or "", at, width=5, exclude=idx), 0.0)
            score = 0.6 + 0.5 * hint + 0.15 * ctx.table_hint(e.table, exclude=idx)
            preds = (_Pred(e.table, e.column or "", ">=", (start.isoformat(),)), _Pred(e.table, e.column or "", "<", (end.isoformat(),)))
            options.append(_Option(preds, score, f"{m.group(0)!r} -> {start} <= {e.table}.{e.column} < {end}"))
        out.append(_Mention(idx, _top(options), optional=False, text=m.group(0)))
        taken.update(idx)
    return out


def _merge_or(ctx: _Context, mentions: list[_Mention]) -> list[_Mention]:
    """Mentions joined by "or" on the same column become one disjunctive predicate."""
    mentions = sorted(mentions, key=lambda m: min(m.tokens))
    out: list[_Mention] = []
    for m in mentions:
        if out:
            prev = out[-1]
            between = [t for t in ctx.tokens if max(prev.tokens) < t.index < min(m.tokens)]
            words = [t.lower for t in between if t.kind in ("word", "punct")]
            if words and words[-1] == "or" or words in (["or"], [",", "or"]) or (len(words) <= 4 and "or" in words):
                merged = []
                for a in prev.options:
                    for b in m.options:
                        pa, pb = a.preds[-1], b.preds[0]
                        if (pa.table, pa.column) == (pb.table, pb.column) and pa.op == pb.op and pa.op in ("=", "<>"):
                            pred = _Pred(pa.table, pa.column, pa.op, pa.values + pb.values)
                            merged.append(_Option((*a.preds[:-1], pred), (a.score + b.score) / 2 + 0.1, f"{a.why}; or {b.why}"))
                        elif (pa.table, pa.column) == (pb.table, pb.column):
                            merged.append(_Option(a.preds + b.preds, (a.score + b.score) / 2 + 0.1, f"{a.why}; or {b.why}"))
                if merged:
                    out[-1] = _Mention(prev.tokens | m.tokens, _top(merged), prev.optional and m.optional, f"{prev.text} or {m.text}")
                    out[-1].options = [_Option(o.preds, o.score, o.why) for o in out[-1].options]
                    _mark_disjunction(out[-1])
                    continue
        out.append(m)
    return out
