"""Offline question -> ranked SELECT candidates (projection and filter over joined relations).

CI mode answers any question the policy authorizes, not only counts: "list the diagnoses of my
patients seen this month", "which medications did patient 17 get". This module reuses the
counting parser's pieces (value mentions, join trees over the foreign-key graph, scoring) and
changes what is asked for: a projection (one or more columns, or the name-like column of a
table) instead of a count. A counting question is answered by :func:`pimento.nl.translate` and
returned here as a one-column SELECT, so :func:`translate_select` takes any question of the
select-project-join class with COUNT.

It reads only the question, the catalog and the :class:`~pimento.nl.values.ValueIndex` the
caller built (from the SYNTHETIC database in production), never a database.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import re
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from pimento.errors import InternalError, NotACountingQuestion, NotASelectQuestion
from pimento.nl.count_intent import CountIntent, detect_intent, other_aggregate
from pimento.nl.text import STOPWORDS, Token, tokenize
from pimento.nl.count_assembly import _edge_bonus, _pred_sql, _trees
from pimento.nl.mentions import _value_mentions
from pimento.nl.predicates import _Mention
from pimento.nl.schema_linking import _GENERIC, _Context, _Element, _lexicon, _match, _strength
from pimento.nl.translate import translate
from pimento.nl.values import ValueIndex
from pimento.schema import Catalog
from pimento.sql.quote import quote_identifier

__all__ = ["SelectCandidate", "SelectQuery", "translate_select"]


def _table(name: str) -> exp.Table:
    """``name`` as a table reference, quoted by the one quoting function (``pimento.sql.quote``)."""
    return exp.to_table(quote_identifier(name, "duckdb"), dialect="duckdb")


@dataclass(frozen=True)
class SelectQuery:
    """``SELECT [DISTINCT] columns FROM tables JOIN ... WHERE ...`` (tables named by themselves)."""

    columns: tuple[tuple[str, str], ...]  # (table, column); ("", "*") for COUNT(*) / *
    tables: tuple[str, ...]
    joins: tuple[tuple[str, str, str, str], ...]  # child.table, child.col, parent.table, parent.col
    where: tuple[str, ...]  # rendered predicates (generic SQL over table-qualified columns)
    distinct: bool = False
    count: bool = False

    def to_sql(self, dialect: str = "duckdb") -> str:
        if self.count:
            (t, c), = self.columns
            arg: exp.Expression = exp.Star() if c == "*" else exp.column(c, table=t, quoted=True)
            if self.distinct and c != "*":
                arg = exp.Distinct(expressions=[arg])
            projections: list[exp.Expression] = [exp.Count(this=arg)]
        else:
            projections = [exp.Star() if c == "*" else exp.column(c, table=t, quoted=True) for t, c in self.columns]
        select = exp.select(*projections)
        if self.distinct and not self.count:
            select.set("distinct", exp.Distinct())
        select = select.from_(_table(self.tables[0]))
        joined = {self.tables[0]}
        pending = list(self.joins)
        while pending:
            for j in pending:
                child, ccol, parent, pcol = j
                if child in joined or parent in joined:
                    new = parent if child in joined else child
                    conds = [
                        exp.EQ(this=exp.column(a, table=ta, quoted=True), expression=exp.column(b, table=tb, quoted=True))
                        for ta, a, tb, b in pending
                        if {ta, tb} == {child, parent}
                    ]
                    if new in joined:  # both already joined: a further condition
                        select = select.where(conds[0], copy=False)
                    else:
                        select = select.join(_table(new), on=exp.and_(*conds), copy=False)
                        joined.add(new)
                    pending = [p for p in pending if {p[0], p[2]} != {child, parent}]
                    break
            else:
                raise InternalError("join conditions do not connect the tables")
        for t in self.tables:
            if t not in joined:
                raise InternalError(f"table {t} is not joined")
        for w in self.where:
            select = select.where(sqlglot.parse_one(w), copy=False)
        return select.sql(dialect)


@dataclass(frozen=True)
class SelectCandidate:
    """One ranked formulation: the query, its SQL (DuckDB), a score and why."""

    query: SelectQuery
    sql: str
    score: float
    explanation: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"sql": self.sql, "score": round(self.score, 4), "explanation": list(self.explanation)}


# --------------------------------------------------------------------------- intent
_CUE = re.compile(
    r"^\s*(?:(?:please\s+)?(?:can|could)\s+you\s+)?(?:"
    r"(?:what|who|which)\s+(?:is|are|was|were)(?:\s+(?:the|all|all\s+the|a|an|every|each))?"
    r"|(?:list|show|give|return|find|tell|get|display|report|provide|output|identify|retrieve|select|print)"
    r"(?:\s+(?:me|us))?(?:\s+(?:the|all|all\s+the|a|an|every|each|out|both))*"
    r"|(?:what|which|who|whose)"
    r")\b",
    re.IGNORECASE,
)
_PROJ_BOUNDARY = {
    "who", "that", "which", "whose", "with", "in", "on", "at", "from", "by", "where", "when", "than", "having",
    "whom", "into", "between", "under", "over", "after", "before", "since", "during", "about", "not", "is", "are",
    "was", "were", "do", "does", "did", "has", "have", "had", "can", "will", "would", "to", "there", "sorted",
    "ordered", "order", "along", "as", "if", "whether", "belong", "belonging", "located", "made",
}  # fmt: skip
_ORDER = re.compile(r"\b(?:sort(?:ed)?|order(?:ed)?|descending|ascending|alphabetical(?:ly)?|top\s+\d+|first\s+\d+)\b", re.I)
_NAME_WORDS = ("name", "title")
#: Score for leaving out an optional literal (a lower-case word equal to a stored value, ...).
_SKIP_OPTIONAL = 0.1
_LIST_VERBS = ("list", "show", "give", "return", "find", "tell", "get", "display", "report", "provide", "output", "retrieve")


def _projection_start(question: str) -> tuple[int, str]:
    """Where the asked-for phrase starts: after the cue, or after a later sentence's cue
    ("Which dogs are owned by ...? List the owner's first name and the dog's name.")."""
    for later in re.finditer(r"[?.;]\s+(?=\S)", question):
        m = _CUE.match(question, later.end())
        if m is not None and m.group(0).strip().lower().split()[0] in _LIST_VERBS:
            return m.end(), m.group(0).strip().lower()
    m = _CUE.search(question)
    if m is None:
        return 0, ""
    return m.end(), m.group(0).strip().lower()


def _refuse(question: str) -> None:
    text = " ".join(question.split())
    if not text:
        raise NotASelectQuestion(question, "empty", "the question is empty")
    other = other_aggregate(text)
    if other is not None:
        reason, what = other
        raise NotASelectQuestion(question, reason, f"the question asks for {what}, outside select-project-join: {text!r}")


# --------------------------------------------------------------------------- projection
@dataclass(frozen=True)
class _Item:
    """One thing the question asks to see: a phrase naming columns (or a table)."""

    tokens: tuple[Token, ...]


@dataclass(frozen=True)
class _Proj:
    table: str
    column: str
    score: float
    why: str


def _projection_phrase(tokens: list[Token], start: int) -> tuple[list[list[Token]], list[Token]]:
    """The asked-for items ("names and ages") and the owner phrase after "of" ("the singers")."""
    words: list[Token] = []
    began = False
    for t in tokens:
        if t.start < start:
            continue
        if t.kind == "punct" and t.text == ",":
            if began:
                words.append(t)
            continue
        if t.kind != "word":
            if began:
                break
            continue
        low = t.lower
        if not began and low in ("the", "a", "an", "all", "each", "every", "distinct", "different", "unique", "me", "us", "out"):
            continue
        if low in _PROJ_BOUNDARY or t.lemma in ("be", "have", "do"):
            break
        began = True
        words.append(t)
        if len(words) >= 12:
            break
    # split at the last "of": items before, owner after
    items_part, owner = words, []
    split_at = [i for i, w in enumerate(words) if w.lower == "for"][:1] or range(len(words) - 1, -1, -1)
    for i in split_at:
        if words[i].lower in ("of", "for") and i > 0 and words[i - 1].lemma not in ("type", "kind", "sort", "number", "list"):
            items_part, owner = words[:i], [w for w in words[i + 1 :] if w.kind == "word"]
            break
    items: list[list[Token]] = [[]]
    for t in items_part:
        if t.lower in ("and", ",", "or", "&") or t.text == ",":
            if items[-1]:
                items.append([])
            continue
        if t.lower in ("the", "a", "an", "their", "its", "his", "her", "all", "of", "both", "each", "every", "list"):
            continue
        items[-1].append(t)
    # "names of conductors and the orchestras they conducted": after the owner, more items
    for i, t in enumerate(owner):
        if t.lower == "and" and i > 0:
            items.append([w for w in owner[i + 1 :] if w.lower not in STOPWORDS])
            owner = owner[:i]
            break
    items = [i for i in items if i]
    owner = [t for t in owner if t.lower not in STOPWORDS]
    items += _companion_items(tokens, start)
    return items, owner


_COMPANION = re.compile(r"\b(?:together\s+with|along\s+with|as\s+well\s+as|and\s+(?:also\s+)?(?:the\s+)?corresponding)\b", re.I)


def _companion_items(tokens: list[Token], start: int) -> list[list[Token]]:
    """"the date of each treatment, together with the first name of the professional": one more
    asked-for item per connector, its words up to the next boundary (its "of" phrase included)."""
    text = " ".join(t.lower for t in tokens)
    out: list[list[Token]] = []
    if not _COMPANION.search(text):
        return out
    words = [t for t in tokens if t.kind == "word"]
    for i, t in enumerate(words):
        if t.start < start:
            continue
        pair = " ".join(w.lower for w in words[i : i + 2])
        triple = " ".join(w.lower for w in words[i : i + 3])
        hit = next((n for n, p in ((2, pair), (3, triple)) if _COMPANION.fullmatch(p)), None)
        if hit is None:
            continue
        item: list[Token] = []
        for w in words[i + hit :]:
            if w.lower in _PROJ_BOUNDARY - {"of"} or w.lemma in ("be", "have", "do"):
                break
            if w.lower not in STOPWORDS:
                item.append(w)
        if item:
            out.append(item)
    return out


def _column_options(ctx: _Context, item: list[Token], owner_tables: dict[str, float]) -> list[_Proj]:
    """Columns (or a table's name-like column) an asked-for phrase may mean, best first."""
    out: list[_Proj] = []
    phrase = " ".join(t.text for t in item)
    generic_only = all(t.lemma in _GENERIC or t.lemma in ("ids", "identifier") for t in item)
    for element in ctx.columns:
        if element.boolean:
            continue
        score, used = _match(element, item)
        if generic_only:
            # "ids", "names", "descriptions": the column of that word in the owner's table
            cover = sum(1 for t in item if any(_strength(t, w) >= 0.85 for w in element.words)) / len(item)
            score = max(score, 0.75 * cover)
        if score <= 0.3:
            continue
        bonus = 0.35 * owner_tables.get(element.table, 0.0)
        table_words = _Element(element.table, None, tuple(w for w in _table_words(ctx, element.table)), "")
        own, _ = _match(table_words, item)
        # "the dog's name": a possessive naming the table decides whose column it is
        owned = _match(table_words, [t for t in item if _possessive(ctx.question, t)])[0]
        if element.column and element.column == _pk(ctx, element.table) and score < 1:
            score *= 0.8
        total = score + bonus + 0.1 * own + _POSSESSIVE * owned
        out.append(_Proj(element.table, element.column or "", total, f"{phrase!r} -> {element.table}.{element.column}"))
    for element in ctx.tables:
        score, _ = _match(element, item)
        if score < 0.5:
            continue
        for col in _name_columns(ctx, element.table):
            out.append(_Proj(element.table, col, 0.9 * score, f"{phrase!r} -> the {element.table} ({element.table}.{col})"))
    if any(t.lemma in ("information", "info", "detail", "record", "everything", "attribute") for t in item):
        for table, score in owner_tables.items():
            out.append(_Proj(table, "*", 1.0 + 0.35 * score, f"{phrase!r} -> every column of {table}"))
    best: dict[tuple[str, str], _Proj] = {}
    for p in out:
        if (p.table, p.column) not in best or best[(p.table, p.column)].score < p.score:
            best[(p.table, p.column)] = p
    return sorted(best.values(), key=lambda p: -p.score)[:3]


_POSSESSIVE = 0.4


def _possessive(question: str, token: Token) -> bool:
    return question[token.end : token.end + 2] in ("'s", "\u2019s") or (
        question[token.end : token.end + 1] in ("'", "\u2019") and token.text.endswith("s")
    )


def _table_words(ctx: _Context, table: str) -> tuple[str, ...]:
    return next(t.words for t in ctx.tables if t.table == table)


def _pk(ctx: _Context, table: str) -> str | None:
    pk = ctx.catalog.table(table).primary_key
    return pk[0] if len(pk) == 1 else None


def _name_columns(ctx: _Context, table: str) -> list[str]:
    """How a table's rows are shown: its name/title column(s), else its key."""
    cols = [c.name for c in ctx.catalog.table(table).columns]
    named = [c for c in cols if any(w in _NAME_WORDS for w in _col_words(ctx, table, c))]
    first_last = [c for c in cols if re.search(r"first.?name|fname", c, re.I)] + [c for c in cols if re.search(r"last.?name|lname", c, re.I)]
    if len(first_last) == 2:
        return [first_last[0]]
    if named:
        return named[:2]
    pk = _pk(ctx, table)
    return [pk] if pk else cols[:1]


def _col_words(ctx: _Context, table: str, column: str) -> tuple[str, ...]:
    return next((c.words for c in ctx.columns if c.table == table and c.column == column), ())


def _owner_tables(ctx: _Context, owner: list[Token]) -> dict[str, float]:
    out = {}
    for element in ctx.tables:
        score, _ = _match(element, owner)
        if score >= 0.99:
            out[element.table] = score
    return out


# --------------------------------------------------------------------------- assembly
def translate_select(
    question: str, catalog: Catalog, values: ValueIndex | None = None, *, k: int = 5, today: _dt.date | None = None
) -> list[SelectCandidate]:
    """Ranked SELECT candidates (projection + filter over joined relations), best first.

    Args:
        question: the question in English ("Which medications did patient 17 get?").
        catalog: the database's catalog (tables, keys, foreign keys).
        values: stored values to link literals with; build it from the SYNTHETIC database.
        k: how many candidates to return.
        today: the day relative periods ("this month") are counted from; default the machine's.

    Raises:
        NotASelectQuestion: an average, a sum, a ranking, a ratio.

    A counting question ("how many ...") is answered by the counting parser and returned as
    ``SELECT COUNT(...) ...``. Returns an empty list when nothing could be linked to the schema.
    """
    if k < 1:
        raise InternalError("k must be at least 1")
    try:
        counting = _really_counting(question, detect_intent(question))
    except NotACountingQuestion as exc:
        counting = False
        if exc.reason == "group":
            raise NotASelectQuestion(question, "group", f"the question asks for one count per group: {question!r}") from None
    if counting:
        return [_from_count(c) for c in translate(question, catalog, values=values, k=k, today=today)]
    _refuse(question)
    tokens = tokenize(question)
    start, cue = _projection_start(question)
    distinct = bool(re.search(r"\b(?:different|distinct|unique)\b", question, re.I))
    intent = CountIntent(start=start, distinct=distinct, cue=cue)
    tables, columns = _lexicon(catalog)
    ctx = _Context(question, catalog, values if values is not None else ValueIndex.empty(), tokens, intent, tables, columns, today=today)
    items, owner = _projection_phrase(tokens, start)
    item_tokens = {t.index for item in items for t in item}
    ctx.np = [t for item in items for t in item]
    owner_tables = _owner_tables(ctx, owner)
    named: dict[str, float] = {}
    mentions = [_clause_negation(ctx, m) for m in _value_mentions(ctx) if not (m.tokens & item_tokens)]
    used = item_tokens | {t.index for t in owner} | {i for m in mentions for i in m.tokens}
    free = [t for t in tokens if t.kind == "word" and t.index not in used and not t.is_stop and t.start >= start]
    for element in tables:
        score, _ = _match(element, free)
        if score >= 0.99 and element.table not in owner_tables:
            named[element.table] = score
    per_item = [_column_options(ctx, item, owner_tables) for item in items]
    per_item = [p for p in per_item if p]
    if not per_item:
        # "Who ..." / a bare table: show the rows of the table the question names
        fallback = []
        content = [t for t in tokens if t.kind == "word" and not t.is_stop]
        for element in tables:
            score, _ = _match(element, owner or content)
            if score >= 0.5:
                fallback += [_Proj(element.table, c, 0.5 * score, f"the {element.table} ({element.table}.{c})") for c in _name_columns(ctx, element.table)]
        if not fallback:
            return []
        per_item = [sorted(fallback, key=lambda p: -p.score)[:3]]
    bonus = _edge_bonus(ctx)
    found = _select_candidates(ctx, per_item, mentions, owner_tables | named, bonus, distinct, skip_any=False)
    if not found and mentions:
        found = _select_candidates(ctx, per_item, mentions, owner_tables | named, bonus, distinct, skip_any=True)
    ranked = sorted(found.items(), key=lambda kv: (-kv[1][0], len(kv[0].tables), repr(kv[0])))[:k]
    return [SelectCandidate(q, q.to_sql("duckdb"), s, why) for q, (s, why) in ranked]


_CLAUSE_END = {"who", "that", "which", "whose", "where", "and", "or", ",", "but", "?", "."}


def _clause_negation(ctx: _Context, m: _Mention) -> _Mention:
    """"conductors that do not have the nationality 'USA'": a "not" further back in the literal's
    own clause than the counting parser's three-word window negates it too (= becomes <>)."""
    first = min(m.tokens)
    window = []
    for t in reversed(ctx.tokens[max(0, first - 7) : first]):
        if t.lower in _CLAUSE_END or t.kind in ("number", "quoted"):
            break  # another clause, or another literal (which the "not" belongs to)
        window.append(t)
    if not any(t.lower in ("not", "n't", "never") for t in window[3:]):
        return m
    flipped = []
    for o in m.options:
        preds = tuple(
            type(p)(p.table, p.column, "<>", p.values) if getattr(p, "op", None) == "=" else p for p in o.preds
        )
        flipped.append(type(o)(preds, o.score, o.why + " (negated)"))
    return type(m)(m.tokens, flipped, m.optional, m.text)


def _really_counting(question: str, intent: CountIntent) -> bool:
    """"number of" right after a content word is a column ("the phone number of", "staff number of")."""
    if intent.cue not in ("number of", "the number of", "count of", "the count of"):
        return True
    m = re.search(r"(\w+)\s+(?:number|count)\s+of\b", question[: intent.start], re.I)
    return m is None or m.group(1).lower() in ("the", "total", "overall", "a", "what", "is", "of")


def _from_count(c: Any) -> SelectCandidate:
    q = c.query
    col = q.count.column
    joins = tuple((j.left.alias, j.left.column, j.right.alias, j.right.column) for j in q.joins)
    query = SelectQuery(
        columns=((col.alias, col.column),) if col is not None else (("", "*"),),
        tables=tuple(r.table for r in q.relations),
        joins=joins,
        where=tuple(s.predicate for s in q.selections),
        distinct=bool(q.count.distinct),
        count=True,
    )
    return SelectCandidate(query, c.sql, c.score, c.explanation)


def _select_candidates(
    ctx: _Context,
    per_item: list[list[_Proj]],
    mentions: list[_Mention],
    owner_tables: dict[str, float],
    bonus: dict,
    distinct: bool,
    *,
    skip_any: bool,
) -> dict[SelectQuery, tuple[float, tuple[str, ...]]]:
    per_mention: list[list[Any]] = []
    for m in mentions:
        choices: list[Any] = list(m.options[:3])
        if m.optional or not choices or skip_any:
            choices.append(None)
        per_mention.append(choices)
    combos = list(itertools.islice(itertools.product(*per_mention), 64)) if per_mention else [()]
    projections = list(itertools.islice(itertools.product(*per_item), 27))
    found: dict[SelectQuery, tuple[float, tuple[str, ...]]] = {}
    for proj in projections:
        proj_score = 2.0 * sum(p.score for p in proj) / len(proj)
        proj_tables = list(dict.fromkeys(p.table for p in proj))
        for combo in combos:
            preds = [p for o in combo if o is not None for p in o.preds]
            score = proj_score
            why = [p.why for p in proj]
            for m, o in zip(mentions, combo):
                if o is None:
                    score += _SKIP_OPTIONAL if m.optional else -0.5
                    why.append(f"ignored {m.text!r}")
                else:
                    score += o.score
                    why.append(o.why)
            owners = [t for t in owner_tables if t not in proj_tables]
            for with_owner in (False, True) if owners else (False,):
                required = proj_tables + [p.table for p in preds] + (owners if with_owner else [])
                extra = 0.25 * len(owners) if with_owner else 0.0
                root, others = required[0], [t for t in dict.fromkeys(required) if t != required[0]]
                n_required = len(set(required))
                for rank, tree in enumerate(_trees(ctx, root, others, bonus)):
                    repeats = tree.multiplies(root)
                    for dist, adj in ((distinct, 0.0),) if distinct or not repeats else ((True, 0.05), (False, 0.0)):
                        query = _build_select(proj, tree, preds, dist)
                        if query is None:
                            continue
                        total = score + extra + adj - 0.35 * (tree.cost + 0.05 * rank) + 0.25 * (n_required - 1)
                        notes = [f"join {e}" for e in tree.edges] + (["DISTINCT: the join repeats rows"] if adj else [])
                        prev = found.get(query)
                        if prev is None or prev[0] < total:
                            found[query] = (total, tuple(why + notes))
    return found


def _build_select(proj: tuple[_Proj, ...], tree: Any, preds: list[Any], distinct: bool) -> SelectQuery | None:
    tables = list(dict.fromkeys([proj[0].table, *sorted(tree.tables | {p.table for p in preds} | {p.table for p in proj})]))
    joins = tuple((e.child, c, e.parent, r) for e in tree.edges for c, r in zip(e.columns, e.ref_columns))
    if len(tables) > 1 and not all(t in tree.tables for t in tables):
        return None
    columns = tuple(dict.fromkeys((p.table, p.column) for p in proj))
    where = tuple(dict.fromkeys(_pred_sql(p) for p in preds))
    return SelectQuery(columns=columns, tables=tuple(tables), joins=joins, where=where, distinct=distinct)

