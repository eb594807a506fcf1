"""The counted entity: the noun phrase after the count cue and the tables or columns it names."""

from __future__ import annotations

from dataclasses import dataclass

from pimento.nl.predicates import _Mention
from pimento.nl.schema_linking import _Context, _match, _strength
from pimento.nl.text import STOPWORDS, Token, name_words


_BOUNDARY = {
    "be", "have", "do", "that", "who", "which", "whose", "with", "in", "on", "at", "from", "by", "for", "to",
    "there", "where", "when", "than", "can", "will", "would", "using", "having", "and", "or", "ever", "whom",
    "into", "between", "under", "over", "after", "before", "since", "during", "about", "whose", "not",
}  # fmt: skip
_DISTINCT_WORDS = {"different", "distinct", "unique", "various", "total", "the", "a", "an", "all", "of", "number"}


@dataclass(frozen=True)
class _Target:
    table: str
    column: str | None
    score: float
    why: str


def _noun_phrase(ctx: _Context) -> list[Token]:
    out: list[Token] = []
    for t in ctx.tokens:
        if t.start < ctx.intent.start:
            continue
        if t.kind != "word":
            if out:
                break
            continue
        low = t.lower
        if not out and (low in _DISTINCT_WORDS or low in STOPWORDS and low not in _BOUNDARY):
            continue
        if low == "of" and out and out[-1].lemma in ("type", "kind", "sort", "form", "name", "number", "category"):
            continue
        if out and low in ("the", "a", "an", "this", "these", "those"):
            break  # an article after the counted noun starts a clause ("characteristics the product 'x' has")
        if t.lemma in _BOUNDARY or low in _BOUNDARY or (low in STOPWORDS and low not in _DISTINCT_WORDS):
            break
        if out and (low.endswith("ed") or low.endswith("ing")) and len(low) > 5:
            break
        if out and t.capitalized and not out[-1].capitalized:
            break  # a proper name after the counted noun ("friends Kyle has")
        out.append(t)
        if len(out) >= 4:
            break
    return out


def _targets(ctx: _Context, mentions: list[_Mention]) -> list[_Target]:
    strong_value_tokens = {i for m in mentions if not m.optional for i in m.tokens}
    np = [t for t in ctx.np if t.index not in strong_value_tokens or t is ctx.np[-1]]
    out: list[_Target] = []
    distinct = ctx.intent.distinct
    for element in ctx.tables:
        score, used = _match(element, np)
        if score <= 0:
            continue
        if np and np[-1].index in used:
            score += 0.1
        out.append(_Target(element.table, None, score - (0.15 if distinct else 0.0), f"counting rows of {element.table} (from {' '.join(t.text for t in np)!r})"))
    for element in ctx.columns:
        if element.boolean:
            continue
        score, used = _match(element, np)
        if score <= 0:
            continue
        if np and np[-1].index in used:
            score += 0.1
        # "cities that employees live in": the table named elsewhere in the question owns the column
        score += 0.1 * ctx.table_hint(element.table, exclude=frozenset(t.index for t in np) | strong_value_tokens)
        factor = 1.0 if distinct else 0.7
        table = ctx.catalog.table(element.table)
        t_words = set(name_words(element.table))
        unasked = [w for w in element.words if not any(_strength(t, w) > 0 for t in np)]
        if not distinct and used and unasked and all(any(_strength(ctx.tokens[i], w) >= 0.85 for w in t_words) for i in used):
            factor *= 0.85  # "documents" names the table All_Documents, not its Document_Description
        if (element.column,) == table.primary_key:
            factor *= 0.8
        out.append(
            _Target(element.table, element.column, score * factor, f"counting distinct {element.table}.{element.column} (from {' '.join(t.text for t in np)!r})")
        )
    if not out or max(t.score for t in out) < 0.3:
        content = [t for t in ctx.tokens if t.kind == "word" and not t.is_stop and t.index not in strong_value_tokens]
        for element in ctx.tables:
            score, _ = _match(element, content)
            if score > 0:
                out.append(_Target(element.table, None, 0.5 * score, f"counting rows of {element.table} (named in the question)"))
    if not out:
        # last resort: the table of the strongest value mention
        for m in mentions:
            for o in m.options[:1]:
                out.append(_Target(o.preds[0].table, None, 0.1, f"counting rows of {o.preds[0].table} (table of {m.text!r})"))
    out.sort(key=lambda t: -t.score)
    return _dedupe_targets(out)[:4]


def _dedupe_targets(targets: list[_Target]) -> list[_Target]:
    seen, out = set(), []
    for t in targets:
        if (t.table, t.column) in seen:
            continue
        seen.add((t.table, t.column))
        out.append(t)
    return out
