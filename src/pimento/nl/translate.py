"""Offline question -> ranked CountQuery candidates (no LLM).

Pipeline (each step a small function over plain data):

1. :func:`~pimento.nl.count_intent.detect_intent`: is it a count, where does the counted phrase start,
   was "different/distinct" asked;
2. mentions: quoted strings, numbers, word n-grams linked to stored values
   (:class:`~pimento.nl.values.ValueIndex`), literals no stored value claims
   (:mod:`~pimento.nl.open_values`), yes/no columns named by an adjective ("official");
   each mention gets ranked options ``(column, operator, value)``;
3. the counted entity: a table (``COUNT(*)``, or ``COUNT(DISTINCT key)`` when a join repeats its
   rows) or a column (``COUNT(DISTINCT column)``), from the words right after the cue;
4. join trees over the foreign-key graph connecting the counted table and the tables of the chosen
   predicates (:func:`~pimento.nl.joins.join_trees`), preferring edges whose column names the
   question uses ("departing" -> ``source_airport``);
5. scoring and ranking; structurally different alternatives (other columns for a value, other
   join paths, other counted entities) are kept, duplicates removed.

The score is a sum of evidence weights (documented in ``docs/offline-parser.md``), not a
probability; only its order matters.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from sqlglot import exp

from pimento.errors import InternalError
from pimento.nl.count_intent import CountIntent, detect_intent
from pimento.nl.joins import JoinEdge, JoinTree, join_edges, join_trees
from pimento.nl.open_values import CODED_WORDS, Span, column_profile, find_spans, link_span, numeric_placeholder, quoted_span
from pimento.nl.text import STOPWORDS, Token, lemma, name_words, number_value, stem, synonyms, tokenize
from pimento.nl.values import ValueHit, ValueIndex
from pimento.schema import Catalog
from pimento.sql.ir import Attribute, Count, CountQuery, JoinCondition, Relation, Selection

__all__ = ["Candidate", "translate"]


@dataclass(frozen=True)
class Candidate:
    """One ranked formulation: the IR, its SQL, a score (higher is better) and why it was built."""

    query: CountQuery
    sql: str
    score: float
    explanation: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"sql": self.sql, "score": round(self.score, 4), "explanation": list(self.explanation)}


# --------------------------------------------------------------------------- schema lexicon
_GENERIC = {"id", "name", "code", "number", "type", "detail", "other", "info", "information", "description", "be", "have"}
#: words that mark a table's role rather than its content ("Ref_Locations", "All_Documents")
_TABLE_PREFIXES = {"ref", "reference", "lookup", "all"}
_BOUNDARY = {
    "be", "have", "do", "that", "who", "which", "whose", "with", "in", "on", "at", "from", "by", "for", "to",
    "there", "where", "when", "than", "can", "will", "would", "using", "having", "and", "or", "ever", "whom",
    "into", "between", "under", "over", "after", "before", "since", "during", "about", "whose", "not",
}  # fmt: skip
_DISTINCT_WORDS = {"different", "distinct", "unique", "various", "total", "the", "a", "an", "all", "of", "number"}
#: Words whose stored value is usually a code: "female" -> 'F'.
_VALUE_SYNONYMS = CODED_WORDS
#: A literal placed on a column of the counted table itself (no join needed) gains this much.
_OWN_TABLE_BONUS = 0.1
_TRUTHY = ("T", "Y", "Yes", "yes", "YES", "True", "true", "TRUE", "y", "t", 1, True)
_FALSY = ("F", "N", "No", "no", "NO", "False", "false", "FALSE", "n", "f", 0, False)


@dataclass(frozen=True)
class _Element:
    table: str
    column: str | None
    words: tuple[str, ...]
    compact: str
    boolean: bool = False


@lru_cache(maxsize=64)
def _lexicon(catalog: Catalog) -> tuple[tuple[_Element, ...], tuple[_Element, ...]]:
    tables, columns = [], []
    for t in catalog.tables:
        if t.name.lower().startswith("_pimento"):
            continue
        tables.append(_Element(t.name, None, name_words(t.name), _compact(t.name)))
        for c in t.columns:
            words = name_words(c.name)
            boolean = c.type == "boolean" or (len(words) > 1 and words[0] in ("be", "have"))
            if boolean and words and words[0] in ("be", "have"):
                words = words[1:]
            columns.append(_Element(t.name, c.name, words, _compact(c.name), boolean))
    return tuple(tables), tuple(columns)


def _compact(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def _strength(token: Token, word: str) -> float:
    """How well one question token names one schema word: 1 lemma, .85 stem, .75 synonym."""
    if token.kind != "word":
        return 0.0
    if token.lemma == word or lemma(word) in token.keys:
        return 1.0
    if stem(word) in token.keys and len(stem(word)) >= 3:
        return 0.85
    syn = synonyms(token.lower)
    if syn and (word in syn or stem(word) in syn):
        return 0.75
    return 0.0


def _match(element: _Element, tokens: list[Token]) -> tuple[float, frozenset[int]]:
    """Coverage of the element's name words by ``tokens`` (generic words weigh less)."""
    if not element.words or not tokens:
        return 0.0, frozenset()
    total = got = 0.0
    used: set[int] = set()
    for word in element.words:
        weight = 0.35 if word in _GENERIC or word in _TABLE_PREFIXES else 1.0
        total += weight
        best, best_i = 0.0, None
        for t in tokens:
            s = _strength(t, word)
            if s > best:
                best, best_i = s, t.index
        if best_i is not None and best > 0:
            got += weight * best
            used.add(best_i)
    score = got / total if total else 0.0
    # compound names: "high schoolers" -> Highschooler, "countrylanguage" holds "language"
    words_only = [t for t in tokens if t.kind == "word"]
    for n in (2, 3):
        for i in range(len(words_only) - n + 1):
            group = words_only[i : i + n]
            if any(group[j + 1].index != group[j].index + 1 for j in range(n - 1)):
                continue
            joined = "".join(t.lower for t in group[:-1]) + group[-1].lemma
            if joined == element.compact or joined == lemma(element.compact):
                return 1.0, frozenset(t.index for t in group)
    if score < 0.55 and len(element.words) == 1 and not element.boolean:
        for t in words_only:
            if len(t.lemma) >= 4 and t.lemma in element.compact and t.lemma != element.compact and not t.is_stop:
                return 0.55, frozenset({t.index})
    return score, frozenset(used if score > 0 else ())


# --------------------------------------------------------------------------- mentions
@dataclass(frozen=True)
class _Pred:
    table: str
    column: str
    op: str
    values: tuple[Any, ...]

    def render(self, alias: str) -> exp.Expr:
        col = exp.column(self.column, table=alias, quoted=True)
        lits = [_literal(v) for v in self.values]
        if self.op == "BETWEEN":
            return exp.Between(this=col, low=lits[0], high=lits[1])
        if self.op == "LIKE":
            return exp.Like(this=col, expression=lits[0])
        if self.op == "OR=":
            return exp.paren(exp.or_(*[exp.EQ(this=col.copy(), expression=lit) for lit in lits]), copy=False)
        ops = {"=": exp.EQ, "<>": exp.NEQ, ">": exp.GT, "<": exp.LT, ">=": exp.GTE, "<=": exp.LTE}
        if len(lits) > 1:
            return exp.paren(exp.or_(*[ops[self.op](this=col.copy(), expression=lit) for lit in lits]), copy=False)
        return ops[self.op](this=col, expression=lits[0])

    def describe(self) -> str:
        vals = " or ".join(repr(v) for v in self.values)
        return f"{self.table}.{self.column} {self.op} {vals}"


def _literal(value: Any) -> exp.Expr:
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float)):
        return exp.Literal.number(value)
    return exp.Literal.string(str(value))


@dataclass(frozen=True)
class _Option:
    preds: tuple[_Pred, ...]
    score: float
    why: str


@dataclass
class _Mention:
    tokens: frozenset[int]
    options: list[_Option]
    optional: bool
    text: str


_GT = ("more than", "greater than", "larger than", "bigger than", "higher than", "over", "above", "after",
       "exceeding", "exceeds", "older than", "heavier than", "taller than", "longer than", "later than", "beyond",
       "newer than", "more", "greater", "higher", "larger", "bigger", "older", "heavier", "taller", "longer")  # fmt: skip
_LT = ("less than", "fewer than", "smaller than", "lower than", "below", "under", "before", "younger than",
       "lighter than", "shorter than", "earlier than", "cheaper than", "prior to", "less", "fewer", "younger",
       "smaller", "lower", "lighter", "shorter", "earlier", "cheaper")  # fmt: skip
_GE = ("at least", "no less than", "not less than", "or more", "or above", "or greater", "or older", "or later",
       "or after", "or higher", "or over", "or larger", "or bigger", "or longer", "or heavier", "or taller", "or newer",
       "or more recent")  # fmt: skip
_LE = ("at most", "no more than", "not more than", "or less", "or fewer", "or below", "or younger", "or earlier", "up to",
       "or before", "or lower", "or under", "or smaller", "or shorter", "or cheaper", "or lighter")  # fmt: skip
#: words before a literal that ask for a substring match ("a location that contains NY")
_LIKE_CUES = ("contain", "contains", "containing", "include", "includes", "including", "like", "substring", "word",
              "letter", "phrase")  # fmt: skip
_NEG = ("not", "n't", "other than", "except", "excluding", "besides", "never", "without", "neither", "nor")


def _phrase_before(tokens: list[Token], i: int, width: int = 3) -> str:
    words = [t.lower for t in tokens[max(0, i - width) : i] if t.kind in ("word", "punct")]
    return " ".join(w for w in words if w not in (",",))


def _phrase_after(tokens: list[Token], i: int, width: int = 2) -> str:
    return " ".join(t.lower for t in tokens[i + 1 : i + 1 + width] if t.kind == "word")


def _operator(tokens: list[Token], i: int) -> str:
    after = _phrase_after(tokens, i)
    if i + 3 < len(tokens) and tokens[i + 3].kind in ("number", "quoted"):
        after = ""  # "after 2013 or before 2008": "or before" starts the next comparison
    for phrase in _GE:
        if after.startswith(phrase):
            return ">="
    for phrase in _LE:
        if after.startswith(phrase):
            return "<="
    wide = " ".join(w for w in _phrase_before(tokens, i, 7).split() if any(ch.isalnum() for ch in w))
    if wide.endswith("or equal to") or wide.endswith("or equal"):
        # "larger than or equal to 180": the comparative sits beyond the usual window
        head = wide.rsplit(" or equal", 1)[0].split()[-3:]
        if any(w in ("greater", "larger", "more", "higher", "bigger", "above", "over", "later", "older") for w in head):
            return ">="
        if any(w in ("less", "smaller", "fewer", "lower", "below", "under", "earlier", "younger") for w in head):
            return "<="
    # a comparative before another literal belongs to that one ("above 3000 in year 2001")
    lo, cut = max(0, i - 4), False
    for k in range(i - 1, lo - 1, -1):
        if tokens[k].kind in ("number", "quoted"):
            lo, cut = k + 1, True
            break
    before = _phrase_before(tokens, i, i - lo)
    # the phrase ending nearest the number wins, the longer one on a tie ("in or after" is >=,
    # not the "after" inside it)
    best, best_pos = "=", (-1, 0)
    for ops, op in ((_GE, ">="), (_LE, "<="), (_GT, ">"), (_LT, "<")):
        for phrase in ops:
            pos = (" " + before + " ").rfind(" " + phrase + " ")
            if pos == 0 and cut and phrase.startswith("or "):
                continue  # "2013 or before 2008": the other number's postfix, not this one's
            if pos >= 0 and (pos + len(phrase), len(phrase)) > best_pos:
                best, best_pos = op, (pos + len(phrase), len(phrase))
    if best_pos[0] >= 0:
        return best
    # a generic comparative "...er than N"
    if i >= 2 and tokens[i - 1].lower == "than" and tokens[i - 2].lower.endswith("er"):
        return ">"
    return "="


def _negated(tokens: list[Token], i: int) -> bool:
    before = " " + _phrase_before(tokens, i, 3) + " "
    return any(f" {n} " in before for n in _NEG) or "n't" in before


@dataclass
class _Context:
    question: str
    catalog: Catalog
    values: ValueIndex
    tokens: list[Token]
    intent: CountIntent
    tables: tuple[_Element, ...]
    columns: tuple[_Element, ...]
    np: list[Token] = field(default_factory=list)
    tree_cache: dict[tuple[str, tuple[str, ...]], list[JoinTree]] = field(default_factory=dict)
    #: the day relative periods ("this month") are counted from; None: the machine's date
    today: _dt.date | None = None

    def column_hint(self, table: str, column: str, around: int, width: int = 4, exclude: frozenset[int] = frozenset()) -> float:
        """How well tokens near position ``around`` name ``table.column`` (0..1)."""
        element = next((c for c in self.columns if c.table == table and c.column == column), None)
        if element is None:
            return 0.0
        window = [
            t for t in self.tokens[max(0, around - width) : around + width + 1]
            if t.kind == "word" and t.index not in exclude and not t.is_stop
        ]
        score, _ = _match(element, window)
        return score

    def table_hint(self, table: str, exclude: frozenset[int] = frozenset()) -> float:
        element = next(t for t in self.tables if t.table == table)
        words = [t for t in self.tokens if t.kind == "word" and t.index not in exclude and not t.is_stop]
        return _match(element, words)[0]


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


def _column_label(ctx: _Context, token: Token) -> bool:
    """The word names a column (lemma match, not generic) and no table: "County", "Building"."""
    if any(_strength(token, w) >= 0.85 for e in ctx.tables for w in e.words if w not in _GENERIC):
        return False
    return any(token.lemma == w for e in ctx.columns for w in e.words if w not in _GENERIC)


@lru_cache(maxsize=64)
def _column_phrases(catalog: Catalog) -> frozenset[str]:
    """Pairs of adjacent words of column names ("mean humidity" of mean_humidity, "mean
    visibility" of mean_visibility_miles), for the intent's aggregate words."""
    out: set[str] = set()
    for t in catalog.tables:
        for c in t.columns:
            words = re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", c.name).lower())
            out.update(f"{a} {b}" for a, b in zip(words, words[1:]))
    return frozenset(out)


def _near_first(ctx: _Context, hits: list[ValueHit], at: int) -> list[ValueHit]:
    """Value hits with the columns named near the literal first (stable otherwise): a value
    stored in many columns ('Y') is kept for the column the question names ("active")."""
    return sorted(hits, key=lambda h: -ctx.column_hint(h.table, h.column, at, exclude=frozenset({at})))


def _unquote_names(tokens: list[Token], catalog: Catalog, values: ValueIndex) -> list[Token]:
    """A quoted column name is the column's label, not a literal: 'the value of "ties" is 1',
    'have 'Y' as "active" information' (unless the index holds it as a value)."""
    names = {c.name.lower() for t in catalog.tables for c in t.columns}
    names |= {" ".join(name_words(c.name)) for t in catalog.tables for c in t.columns}
    out = []
    for t in tokens:
        if t.kind == "quoted" and re.fullmatch(r"[A-Za-z][A-Za-z _]*", t.text) and t.text.lower() in names and not values.lookup(t.text):
            t = Token(t.index, t.text, t.start, t.end, "word")
        out.append(t)
    return out


def _names_column(ctx: _Context, token: Token) -> bool:
    """The word names a word of a column ("bed" of bedType, "type" of allergytype), not an id/name."""
    return any(_strength(token, w) >= 0.85 for e in ctx.columns for w in e.words if w not in ("be", "have"))


def _names_schema(ctx: _Context, token: Token) -> bool:
    for element in ctx.tables + ctx.columns:
        if any(_strength(token, w) >= 0.85 for w in element.words if w not in _GENERIC):
            return True
    return False


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


def _as_like(option: _Option) -> _Option:
    """An open literal's option as a substring match: ``c = 'NY'`` -> ``c LIKE '%NY%'``."""
    preds = tuple(
        _Pred(p.table, p.column, "LIKE", (f"%{p.values[0]}%",)) if isinstance(p, _Pred) and p.op == "=" and len(p.values) == 1 else p
        for p in option.preds
    )
    return _Option(preds, option.score, option.why + " (a substring: LIKE)")


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


def _names_column_itself(element: _Element) -> bool:
    """The column has a name word of its own (not its table's, not generic): ``Horsepower``, ``open_year``."""
    table_words = set(name_words(element.table))
    return any(w not in table_words and w not in _GENERIC for w in element.words)


@lru_cache(maxsize=64)
def _key_columns(catalog: Catalog) -> frozenset[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for t in catalog.tables:
        out.update((t.name.lower(), c.lower()) for c in t.primary_key if len(t.primary_key) == 1)
    for fk in catalog.foreign_keys:
        out.update((fk.table.lower(), c.lower()) for c in fk.columns)
    return frozenset(out)


def _is_key_column(catalog: Catalog, table: str, column: str) -> bool:
    return (table.lower(), column.lower()) in _key_columns(catalog)


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


def _top(options: list[_Option], n: int = 4) -> list[_Option]:
    best: dict[tuple, _Option] = {}
    for o in options:
        key = tuple((p.table, p.column, p.op, p.values) for p in o.preds)
        if key not in best or best[key].score < o.score:
            best[key] = o
    return sorted(best.values(), key=lambda o: -o.score)[:n]


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


def _mark_disjunction(m: _Mention) -> None:
    """Options that hold two predicates of one column from an "or" are rendered as one OR."""
    fixed = []
    for o in m.options:
        if len(o.preds) == 2 and (o.preds[0].table, o.preds[0].column) == (o.preds[1].table, o.preds[1].column):
            fixed.append(_Option((_OrPred(o.preds[0], o.preds[1]),), o.score, o.why))  # type: ignore[arg-type]
        else:
            fixed.append(o)
    m.options = fixed


@dataclass(frozen=True)
class _OrPred:
    left: _Pred
    right: _Pred

    @property
    def table(self) -> str:
        return self.left.table

    @property
    def column(self) -> str:
        return self.left.column

    def render(self, alias: str) -> exp.Expr:
        return exp.paren(exp.or_(self.left.render(alias), self.right.render(alias)), copy=False)

    def describe(self) -> str:
        return f"({self.left.describe()} or {self.right.describe()})"


# --------------------------------------------------------------------------- counted entity
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


# --------------------------------------------------------------------------- assembly
def _edge_bonus(ctx: _Context) -> dict[JoinEdge, float]:
    bonus: dict[JoinEdge, float] = {}
    words = [t for t in ctx.tokens if t.kind == "word"]
    for edge in join_edges(ctx.catalog):
        parent_words = set(name_words(edge.parent))
        col_words = [w for c in edge.columns for w in name_words(c) if w not in parent_words and w not in _GENERIC]
        if not col_words:
            continue
        best = 0.0
        per_word = []
        for w in col_words:
            word_best = 0.0
            for t in words:
                s = _strength(t, w)
                if t.is_stop:
                    s *= 0.5
                word_best = max(word_best, s)
            per_word.append(word_best)
            best = max(best, word_best)
        if best > 0:
            # the share of the column's own words the question names breaks ties between two keys
            # that share a word ("class senator votes": Class_Senator_Vote over President_Vote)
            bonus[edge] = 0.6 * best * (0.75 + 0.25 * sum(per_word) / len(per_word))
    return bonus


def _mentioned_tables(ctx: _Context, mentions: list[_Mention], target: _Target) -> list[tuple[str, float]]:
    """Tables named outright by words outside the counted phrase and outside value mentions."""
    words = _free_words(ctx, mentions)
    out = []
    for element in ctx.tables:
        if element.table == target.table:
            continue
        score, _ = _match(element, words)
        if score >= 0.99:
            out.append((element.table, score))
    return out


def _free_words(ctx: _Context, mentions: list[_Mention]) -> list[Token]:
    used = {i for m in mentions for i in m.tokens} | {t.index for t in ctx.np}
    return [t for t in ctx.tokens if t.kind == "word" and t.index not in used and not t.is_stop and t.start >= ctx.intent.start]


def _related_tables(ctx: _Context, mentions: list[_Mention], target: _Target) -> list[tuple[str, float]]:
    """Tables that relate to the counted one, named (at least in part) after the counted phrase.

    "departments that offer degrees" -> Degree_Programs (references Departments); "faculty that
    participate in an activity" -> Activity (Faculty_Participates_in references both). Words that
    repeat the counted table's own name do not count ("documents with document type code ...").
    """
    if target.column is not None:
        return []
    own = [w for w in name_words(target.table) if w not in _GENERIC]
    after = [
        t for t in _free_words(ctx, mentions)
        if (not ctx.np or t.index > ctx.np[-1].index) and not any(_strength(t, w) >= 0.85 for w in own)
    ]  # fmt: skip
    out = []
    for element in ctx.tables:
        if element.table == target.table:
            continue
        score, _ = _match(element, after)
        if score >= 0.5 and _semijoin_links(ctx.catalog, target.table, element.table):
            out.append((element.table, score))
    return out


@lru_cache(maxsize=4096)
def _semijoin_links(catalog: Catalog, target: str, other: str) -> tuple[JoinEdge, ...]:
    """Edges ``L.fk -> target.pk`` whose table L is ``other`` or references ``other`` (a link table)."""
    pk = catalog.table(target).primary_key
    edges = join_edges(catalog)
    out = []
    for e in edges:
        if e.parent != target or e.ref_columns != pk or len(pk) != 1 or e.child == target:
            continue
        if e.child == other or any(f.child == e.child and f.parent == other for f in edges):
            out.append(e)
    return tuple(out)


def translate(
    question: str, catalog: Catalog, *, values: ValueIndex | None = None, k: int = 5, today: _dt.date | None = None
) -> list[Candidate]:
    """Ranked CountQuery candidates for a counting question, best first (at most ``k``).

    Args:
        question: the analyst's question in English.
        catalog: the database's catalog (tables, keys, foreign keys).
        values: stored values to link literals with; build it from the SYNTHETIC database
            (:meth:`ValueIndex.from_engine`). ``None``: literals are placed by open value
            linking alone (question and schema, :mod:`pimento.nl.open_values`).
        k: how many candidates to return.
        today: the day "this month", "last year", "today" are counted from (default: the
            machine's date; public, not read from any database).

    Raises:
        NotACountingQuestion: the question asks for a list, an average, a per-group count, ...

    Returns an empty list when nothing in the question could be linked to the schema.
    """
    if k < 1:
        raise InternalError("k must be at least 1")
    intent = detect_intent(question, _column_phrases(catalog))
    tables, columns = _lexicon(catalog)
    values = values if values is not None else ValueIndex.empty()
    ctx = _Context(question, catalog, values, _unquote_names(tokenize(question), catalog, values), intent, tables, columns, today=today)
    ctx.np = _noun_phrase(ctx)
    mentions = _value_mentions(ctx)
    targets = _targets(ctx, mentions)
    bonus = _edge_bonus(ctx)

    found = _candidates(ctx, mentions, targets, bonus, skip_any=False)
    if not found and mentions:
        # no formulation holds every required literal (no join path to its column): drop some
        found = _candidates(ctx, mentions, targets, bonus, skip_any=True)
    ranked = sorted(found.items(), key=lambda item: (-item[1][0], len(item[0].relations), str(item[0].count), repr(item[0])))
    chosen = _diverse(ranked, k)
    # rendering SQL is the slow part: rank on the IR, render only what is returned
    return [Candidate(query, query.to_sql("duckdb"), score, why) for query, (score, why) in chosen]


def _candidates(
    ctx: _Context, mentions: list[_Mention], targets: list[_Target], bonus: dict[JoinEdge, float], *, skip_any: bool
) -> dict[CountQuery, tuple[float, tuple[str, ...]]]:
    """Every assembled query with its best score and explanation, over targets x value choices."""
    # value choices: product of the top options per mention (optional ones may be skipped)
    per_mention: list[list[_Option | None]] = []
    for m in mentions:
        choices: list[_Option | None] = list(m.options[:3])
        if m.optional or not choices or skip_any:
            choices.append(None)
        per_mention.append(choices)
    combos = list(itertools.islice(itertools.product(*per_mention), 64)) if per_mention else [()]

    found: dict[CountQuery, tuple[float, tuple[str, ...]]] = {}
    for target in targets:
        extras = _mentioned_tables(ctx, mentions, target)
        related = dict(_related_tables(ctx, mentions, target))
        for combo in combos:
            preds = [p for o in combo if o is not None for p in o.preds]
            # two predicates on one column from two mentions that are not an "or": keep both (AND)
            score = 2.0 * target.score
            why = [target.why]
            if _contradictory(preds):
                score -= 1.0
                why.append("two values required of one column")
            for m, o in zip(mentions, combo):
                if o is None:
                    score += 0.35 if m.optional else -0.5
                    why.append(f"ignored {m.text!r}")
                else:
                    score += o.score
                    why.append(o.why)
                    if _OWN_TABLE_BONUS and all(p.table == target.table for p in o.preds):
                        score += _OWN_TABLE_BONUS
            for with_extras in (False, True) if extras else (False,):
                required = [target.table] + [p.table for p in preds]
                extra_score = 0.0
                if with_extras:
                    required += [t for t, _ in extras]
                    extra_score = 0.25 * len(extras)
                n_required = len(set(required))
                for cand in _assemble(ctx, target, preds, required, bonus):
                    query, cost, notes = cand
                    # edges that only connect required tables are not charged in full:
                    # the evidence for those tables already paid for them
                    total = score + extra_score - 0.35 * cost + 0.25 * (n_required - 1)
                    if with_extras:
                        notes = notes + [f"joined named table(s) {', '.join(t for t, _ in extras)}"]
                    previous = found.get(query)
                    if previous is None or previous[0] < total:
                        found[query] = (total, tuple(why + notes))
            if related and not mentions:
                # the counted rows that occur in a related table named after the counted phrase
                n_required = len({target.table, *(p.table for p in preds), *related})
                for query, cost, notes in _semijoin_forms(ctx, target, preds, list(related), bonus):
                    total = score + 0.25 * len(related) - 0.35 * cost + 0.25 * (n_required - 1)
                    previous = found.get(query)
                    if previous is None or previous[0] < total:
                        found[query] = (total, tuple(why + notes))
    return found


def _semijoin_forms(
    ctx: _Context, target: _Target, preds: list[Any], extras: list[str], bonus: dict[JoinEdge, float]
) -> list[tuple[CountQuery, float, list[str]]]:
    """"How many X <verb> Y" with nothing asked of Y: the Xs that occur in the table relating X and Y.

    ``COUNT(DISTINCT L.x_fk) FROM L`` where L is Y itself (Y references X) or a link table
    referencing both; Y is left out when no predicate needs it (every L row references one Y row).
    """
    if target.column is not None:
        return []
    pred_tables = {p.table for p in preds}
    bare = [y for y in extras if y not in pred_tables]
    if not bare:
        return []
    candidates = None
    for y in bare:
        links = set(_semijoin_links(ctx.catalog, target.table, y))
        candidates = links if candidates is None else candidates & links
    out: list[tuple[CountQuery, float, list[str]]] = []
    for edge in sorted(candidates or (), key=str):
        rest = [t for t in dict.fromkeys([*pred_tables, *(e for e in extras if e not in bare)]) if t != edge.child]
        for tree in _trees(ctx, edge.child, rest, bonus):
            query = _build(ctx, tree, preds, Count(Attribute(edge.child, edge.columns[0]), distinct=True))
            if query is not None:
                note = f"{target.table} that occur in {edge.child} (COUNT(DISTINCT {edge.child}.{edge.columns[0]}))"
                out.append((query, tree.cost, [note] + [f"join {e}" for e in tree.edges]))
    return out


def _fixed(preds: list[Any], table: str, column: str) -> bool:
    """A predicate pins ``table.column`` to one value (``=`` with a single value)."""
    return any(
        getattr(p, "op", None) == "=" and p.table == table and p.column == column and len(p.values) == 1 for p in preds
    )


def _contradictory(preds: list[Any]) -> bool:
    """Two different values required of one column (``c = 'a' AND c = 'b'``): an empty answer."""
    seen: dict[tuple[str, str], tuple[Any, ...]] = {}
    for p in preds:
        if getattr(p, "op", None) != "=":
            continue
        key = (p.table, p.column)
        if key in seen and seen[key] != p.values:
            return True
        seen[key] = p.values
    return False


def _diverse(ranked: list, k: int, *, penalty: float = 0.3) -> list:
    """Top ``k`` after lowering repeats of one structure (same tables, joins and count form).

    Candidates that differ only in which column a value was linked to come after structurally
    different alternatives of similar score, so the top k show the search several join paths.
    """
    pool = list(ranked[: max(4 * k, 20)])
    seen: dict[tuple, int] = {}
    chosen: list = []
    while pool and len(chosen) < k:
        def adjusted(item: tuple) -> float:
            return item[1][0] - penalty * seen.get(_shape(item[0]), 0)

        best = max(pool, key=adjusted)
        pool.remove(best)
        seen[_shape(best[0])] = seen.get(_shape(best[0]), 0) + 1
        chosen.append(best)
    return chosen


def _shape(query: CountQuery) -> tuple:
    return (tuple(r.table for r in query.relations), query.joins, query.count)


def _assemble(
    ctx: _Context, target: _Target, preds: list[Any], required: list[str], bonus: dict[JoinEdge, float]
) -> list[tuple[CountQuery, float, list[str]]]:
    """CountQueries for one choice of target and predicates: one per join tree and count form."""
    out: list[tuple[CountQuery, float, list[str]]] = []
    others = [t for t in dict.fromkeys(required) if t != target.table]
    trees = _trees(ctx, target.table, others, bonus)
    for rank, tree in enumerate(trees):
        for query, extra, notes in _count_forms(ctx, target, preds, tree):
            out.append((query, tree.cost + 0.05 * rank + extra, notes + [f"join {e}" for e in tree.edges]))
    # the counted table reached through a foreign key of another required table: drop it
    # (COUNT(DISTINCT child.fk) equals COUNT(DISTINCT target.pk) under referential integrity)
    pk = ctx.catalog.table(target.table).primary_key
    if target.column is None and len(pk) == 1 and others and not any(p.table == target.table for p in preds):
        rest = list(dict.fromkeys(others))
        for tree in _trees(ctx, rest[0], rest[1:], bonus):
            for edge in join_edges(ctx.catalog):
                if edge.inferred or edge.parent != target.table or edge.child not in tree.tables or edge.ref_columns != pk:
                    continue
                if _fixed(preds, edge.child, edge.columns[0]):
                    continue  # "Patent outcomes": the counted key is the literal itself, the count at most 1
                attr = Attribute(edge.child, edge.columns[0])
                through = _build(ctx, tree, preds, Count(attr, distinct=True))
                if through is not None:
                    note = f"counted {target.table} through {edge.child}.{edge.columns[0]} (foreign key to its key)"
                    # over the child table alone, no join is paid while the counted table still
                    # earns its required-table credit: price half the join it eliminates
                    cost = tree.cost - 0.1 + (0.6 if len(tree.tables) == 1 else 0.0)
                    out.append((through, cost, [note] + [f"join {e}" for e in tree.edges]))
    return out


def _trees(ctx: _Context, root: str, others: list[str], bonus: dict[JoinEdge, float]) -> list[JoinTree]:
    key = (root, tuple(sorted(set(others))))
    if key not in ctx.tree_cache:
        ctx.tree_cache[key] = join_trees(ctx.catalog, root, key[1], edge_bonus=bonus, limit=3)
    return ctx.tree_cache[key]


def _count_forms(ctx: _Context, target: _Target, preds: list[Any], tree: JoinTree) -> list[tuple[CountQuery, float, list[str]]]:
    forms: list[tuple[Count, float, str]] = []
    if target.column is not None:
        if _fixed(preds, target.table, target.column):
            return []  # COUNT(DISTINCT c) WHERE c = 'x' is at most 1: not what a question asks
        forms.append((Count(Attribute(target.table, target.column), distinct=True), 0.0, f"COUNT(DISTINCT {target.table}.{target.column})"))
    else:
        pk = ctx.catalog.table(target.table).primary_key
        multiplies = tree.multiplies(target.table)
        if multiplies and len(pk) == 1:
            forms.append((Count(Attribute(target.table, pk[0]), distinct=True), 0.0, "COUNT(DISTINCT key): the join repeats rows of the counted table"))
            forms.append((Count(), 0.3, "COUNT(*) over the join (counts joined rows)"))
        elif ctx.intent.distinct and len(pk) == 1 and len(tree.tables) > 1:
            forms.append((Count(Attribute(target.table, pk[0]), distinct=True), 0.0, "COUNT(DISTINCT key) ('different')"))
            forms.append((Count(), 0.1, "COUNT(*)"))
        else:
            forms.append((Count(), 0.0, "COUNT(*)"))
    out = []
    for count, extra, note in forms:
        query = _build(ctx, tree, preds, count)
        if query is not None:
            out.append((query, extra, [note]))
    return out


@lru_cache(maxsize=8192)
def _pred_sql(pred: Any) -> str:
    return pred.render(pred.table).sql()


def _build(ctx: _Context, tree: JoinTree, preds: list[Any], count: Count) -> CountQuery | None:
    tables = set(tree.tables) | {p.table for p in preds}
    if count.column is not None:
        tables.add(count.column.alias)
    relations = tuple(Relation(t, t) for t in sorted(tables))
    joins = []
    for e in tree.edges:
        for c, r in zip(e.columns, e.ref_columns):
            joins.append(JoinCondition(Attribute(e.child, c), Attribute(e.parent, r)))
    by_table: dict[str, list[str]] = {}
    for p in preds:
        by_table.setdefault(p.table, []).append(_pred_sql(p))
    selections = []
    for table, texts in by_table.items():
        selections.append(Selection(table, " AND ".join(dict.fromkeys(texts))))
    try:
        query = CountQuery(relations=relations, joins=tuple(joins), selections=tuple(selections), count=count)
    except InternalError:
        return None
    if len(relations) > 1 and not query.is_connected:
        return None
    return query
