"""Schema linking for the offline parser: the schema's name words and how question tokens match them.

The lexicon of a catalog (one :class:`_Element` per table and column, with its name words), the
strength of one token against one schema word, the coverage of an element by a group of tokens,
and :class:`_Context`, the question being parsed with its tokens, intent and lexicon (the hints
that tell how well the words near a position name a column or a table).
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from functools import lru_cache

from pimento.nl.count_intent import CountIntent
from pimento.nl.joins import JoinTree
from pimento.nl.text import Token, lemma, name_words, stem, synonyms
from pimento.nl.values import ValueIndex
from pimento.schema import Catalog


_GENERIC = {"id", "name", "code", "number", "type", "detail", "other", "info", "information", "description", "be", "have"}
#: words that mark a table's role rather than its content ("Ref_Locations", "All_Documents")
_TABLE_PREFIXES = {"ref", "reference", "lookup", "all"}


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
