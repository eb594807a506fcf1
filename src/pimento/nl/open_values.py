"""Open value linking: literals the question states that the value index cannot place.

In DP mode the :class:`~pimento.nl.values.ValueIndex` is read from the synthetic copy, where on
small databases most text columns hold only the synthesizer's placeholder: the question's
literals ('France', 'CV', 'Kyle') are then not in the index, and without this module the parser
would drop their filters. Here value-like spans the index does not hold are found and linked to
columns with public evidence only:

* the span itself: quoted, a code (``ATO``, ``CV``), a capitalised phrase that names no schema
  element, a lower-case word in a value slot ("in france"), or a word with a coded value
  ("female" -> 'F'); world knowledge from :mod:`pimento.nl.gazetteer` (continent, country,
  language);
* the words around it: "from/in X" -> location-like columns, "named/called/by X" -> name-like
  columns, column names near the span ("language English", "type CV"), words of the span that
  name a column or table ("United Airlines" -> ``Airline``);
* the catalog: text columns only, keys only for codes, first/last-name pairs for two-word names;
* what the (synthetic) index shows about a column (:func:`column_profile`): whether it holds only
  placeholders or minted labels, and otherwise the casing and shape of the values that survived,
  used to spell the literal (lower case, upper case, title case).

Nothing is read from any database. The caller (``translate``) supplies the column/table hints
(its own name matching) through :class:`Hints`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pimento.nl.gazetteer import ALIASES, country_of, kind_of
from pimento.nl.text import STOPWORDS, Token, lemma, name_words, stem, synonyms
from pimento.nl.values import ValueIndex, normalize_value
from pimento.schema import Catalog

__all__ = [
    "CODED_WORDS", "ColumnProfile", "Hints", "OpenLink", "Span", "column_profile", "find_spans", "link_span",
    "numeric_placeholder", "quoted_span",
]

#: Words whose stored value is usually a code: "female" -> 'F' (first spelling tried first).
CODED_WORDS: dict[str, tuple[str, ...]] = {
    "female": ("F", "f", "Female", "W"),
    "woman": ("F", "f", "Female", "W"),
    "girl": ("F", "f", "Female"),
    "male": ("M", "m", "Male"),
    "man": ("M", "m", "Male"),
    "boy": ("M", "m", "Male"),
}
_CODED_COLUMNS = {"sex", "gender"}

_PLACEHOLDER = re.compile(r"^\[[^\]]*\]$")
_LOCATION_CUES = {"in", "from", "at", "to", "into", "near", "inside", "within", "locate", "base", "live", "born",
                  "headquarter", "headquartered", "situate"}  # fmt: skip
_NAME_CUES = {"named", "called", "name", "by", "titled", "title", "author", "whose"}
_PLACE_WORDS = {"city", "town", "location", "place", "state", "hometown", "home", "county", "district", "area",
                "province", "residence", "venue", "headquarters", "headquarter", "birth", "region", "capital",
                "village", "born"} | {"building", "build", "campus", "hall", "street", "address", "site"}  # fmt: skip
#: places inside a town: "rooms in Lamberton" is a building, but a country is never one
_SITE_WORDS = {"building", "build", "campus", "hall", "street", "address", "site"}
#: columns a season names ("Spring" -> semester, "fall" -> election_cycle)
_TERM_WORDS = {"semester", "term", "season", "cycle", "quarter", "session", "period"}
_NATION_WORDS = {"country", "nation", "nationality", "citizenship"}
_CODE_WORDS = {"code", "abbreviation", "abbrev", "type", "format", "status", "building", "room", "symbol", "id"}
_KEY_WORDS = {"id", "code", "key", "no", "number", "num", "abbreviation", "abbrev", "ref", "uid", "guid"}
_GENERIC = {"id", "name", "code", "number", "type", "detail", "other", "info", "information", "description"}
_CONNECTORS = {"of", "de", "del", "la", "le", "van", "von", "da", "du", "y", "&"}
_OPERATOR_WORDS = {"more", "less", "greater", "fewer", "larger", "smaller", "higher", "lower", "older", "younger",
                   "than", "least", "most", "over", "under", "above", "below", "after", "before"}  # fmt: skip


# --------------------------------------------------------------------------- column profiles
@dataclass(frozen=True)
class ColumnProfile:
    """What the value index shows about one column: nothing useful, or the shape of its values.

    ``informative`` is False when the index holds no value, only placeholders ('[synthetic]') or
    labels minted from a table name ('country_12'). ``style`` is how the informative values are
    spelled: "lower", "upper", "title", "numeric" or "mixed" ("unknown" when not informative).
    """

    informative: bool
    style: str
    values: frozenset[str] = frozenset()


def column_profile(values: ValueIndex, catalog: Catalog, table: str, column: str) -> ColumnProfile:
    stored = [v for v in values.values_of(table, column) if isinstance(v, str)]
    tables = tuple(t.lower() for t in catalog.table_names)
    useful = [v for v in stored if not _PLACEHOLDER.match(v.strip()) and not _minted(v, tables)]
    if not useful:
        return ColumnProfile(False, "unknown")
    letters = [v for v in useful if any(ch.isalpha() for ch in v)]
    if len(letters) < 0.5 * len(useful):
        style = "numeric"
    elif all(v == v.lower() for v in letters):
        style = "lower"
    elif all(v == v.upper() for v in letters):
        style = "upper"
    elif all(v == v.title() or v[:1].isupper() for v in letters):
        style = "title"
    else:
        style = "mixed"
    return ColumnProfile(True, style, frozenset(normalize_value(v) for v in useful))


def _minted(value: str, tables: tuple[str, ...]) -> bool:
    head, _, tail = value.rpartition("_")
    return tail.isdigit() and head.lower() in tables


# --------------------------------------------------------------------------- spans
@dataclass(frozen=True)
class Span:
    """A value-like run of question tokens: ``kind`` is quoted, code, proper, plain or coded."""

    tokens: tuple[int, ...]
    text: str
    kind: str
    label: tuple[int, ...] = ()  # schema words trimmed off the span ("City Aberdeen" -> City)


def find_spans(
    tokens: list[Token],
    taken: set[int],
    names_schema: Callable[[Token], bool],
    column_label: Callable[[Token], bool] | None = None,
    names_column: Callable[[Token], bool] | None = None,
) -> list[Span]:
    """Value-like spans among tokens not yet linked (``taken``); quoted strings come from the caller.

    Capitalised runs (not the question's first word) and upper-case codes; schema words at the
    edges of a run are trimmed off as labels ("Airport 'ASY'", "City Aberdeen"), except a trailing
    one after a non-code ("United Airlines") unless ``column_label`` says it names a column and no
    table ("Napa County" -> 'Napa'). Lower-case words count only after "in/from/at"
    ("in france"), with a coded value ("female"), or (kind "beside") when an uninflected word sits
    right beside a word ``names_column`` says names a column ("a king bed", "type animal"); the
    linker places those only on columns whose stored values show nothing (placeholders).
    """
    out: list[Span] = []
    i, n = 0, len(tokens)
    while i < n:
        t = tokens[i]
        if t.index in taken or t.kind != "word" or not _starts_value(tokens, i):
            i += 1
            continue
        j = i
        while j + 1 < n and tokens[j + 1].index not in taken and tokens[j + 1].kind == "word":
            nxt = tokens[j + 1]
            if _capital(nxt) or (nxt.lower in _CONNECTORS and j + 2 < n and _capital(tokens[j + 2])):
                j += 1
                continue
            break
        run = tokens[i : j + 1]
        while run and (names_schema(run[0]) or run[0].is_stop and not _is_code(run[0])):
            run = run[1:]
        label = tuple(t.index for t in tokens[i : j + 1] if run and t.index < run[0].index)
        if len(run) > 1 and names_schema(run[-1]) and _is_code(run[-2]):
            run = run[:-1]
        elif len(run) > 1 and column_label is not None and column_label(run[-1]):
            # "Napa County", "Lamberton Building": a trailing word naming a column (not a table) labels it
            label = label + (run[-1].index,)
            run = run[:-1]
        if run and names_column is not None:
            run = _extend_with_category(tokens, run, taken, names_column, label)
            j = max(j, run[-1].index)
        if run and any(0 <= k < n and k in taken and _capital(tokens[k]) for k in (run[0].index - 1, run[-1].index + 1)):
            pass  # beside a capitalised value the index placed ("Napa Country", "Ryan Goodwin"): part of it
        elif run and not (len(run) == 1 and (names_schema(run[0]) or run[0].is_stop and not _is_code(run[0]))):
            text = " ".join(t.text for t in run)
            kind = "code" if len(run) == 1 and _is_code(run[0]) and kind_of(text) is None else "proper"
            out.append(Span(tuple(t.index for t in run), text, kind, label))
        i = j + 1
    for t in tokens:
        if t.kind != "word" or t.index in taken or any(t.index in s.tokens or t.index in s.label for s in out):
            continue
        if t.lemma in CODED_WORDS:
            out.append(Span((t.index,), t.text, "coded"))
        elif _plain_value(tokens, t, names_schema):
            out.append(Span((t.index,), t.text, "plain"))
        elif names_column is not None and _beside_column(tokens, t, names_schema, names_column):
            out.append(Span((t.index,), t.text, "beside"))
        elif _state_participle(tokens, t, names_schema):
            out.append(Span((t.index,), t.text, "state"))
    return sorted(out, key=lambda s: s.tokens[0])


def _extend_with_category(
    tokens: list[Token], run: list[Token], taken: set[int], names_column: Callable[[Token], bool], label: tuple[int, ...]
) -> list[Token]:
    """A capitalised value that goes on in lower case, labelled by a category word: "type Massively
    multiplayer online game?", "with Massively multiplayer online game type" (up to four words more,
    up to the category word after them or to the end of the clause after a category word before)."""
    n = len(tokens)
    if _is_code(run[-1]):
        return run  # "the PPT template type": a code ends where the capitals end
    k = run[-1].index + 1
    ext: list[Token] = []
    while k < n and len(ext) < 4 and tokens[k].kind == "word" and k not in taken and tokens[k].text == tokens[k].lower and not tokens[k].is_stop:
        if tokens[k].lemma in _CATEGORY_WORDS and names_column(tokens[k]):
            break
        ext.append(tokens[k])
        k += 1
    if not ext:
        return run

    def category(t: Token) -> bool:
        return t.kind == "word" and t.lemma in _CATEGORY_WORDS and names_column(t)

    if k < n and category(tokens[k]):
        return run + ext  # "... online game type"
    first = min([run[0].index, *label]) - 1
    if first >= 0 and category(tokens[first]) and (k >= n or tokens[k].kind == "punct" or tokens[k].lower in _CLAUSE_END):
        return run + ext  # "type Massively multiplayer online game?"
    return run


def quoted_span(token: Token) -> Span:
    """A quoted literal; a short upper-case one ('APG', 'PPT') is a code."""
    code = _is_code(Token(token.index, token.text, token.start, token.end, "word")) and kind_of(token.text) is None
    return Span((token.index,), token.text, "code" if code else "quoted")


def _capital(t: Token) -> bool:
    return t.kind == "word" and (t.capitalized or _is_code(t))


def _is_code(t: Token) -> bool:
    text = t.text
    return t.kind == "word" and 2 <= len(text) <= 6 and text.isupper() and text.isalnum() and text.lower() not in ("i",)


def _starts_value(tokens: list[Token], i: int) -> bool:
    t = tokens[i]
    if not _capital(t):
        return False
    if i == 0 or tokens[i - 1].text in (".", "?", "!", ":", ";") and not _is_code(t):
        return False  # sentence-initial capital
    return t.lower not in STOPWORDS or _is_code(t)


def _plain_value(tokens: list[Token], t: Token, names_schema: Callable[[Token], bool]) -> bool:
    """A lower-case place the gazetteer knows, after "in/from": "makers in france", "in the usa"."""
    if t.is_stop or names_schema(t) or len(t.text) < 2 or t.lower in _OPERATOR_WORDS or t.text[:1].isupper():
        return False
    k = t.index - 1
    while k >= 0 and tokens[k].lower in ("the", "a", "an"):
        k -= 1
    if k < 0 or tokens[k].lower not in ("in", "from"):
        return False
    return kind_of(t.text) is not None


_NOT_VALUES = {"many", "much", "total", "different", "distinct", "unique", "various", "same", "other", "each",
               "every", "all", "any", "some", "number", "count", "new", "old", "current", "average", "maximum",
               "minimum", "given", "certain", "specific", "such", "own", "least", "most", "first", "last", "only",
               "also", "ever", "never", "still", "yet", "just", "please", "there", "their", "them"}  # fmt: skip


_CATEGORY_WORDS = {"type", "category", "kind", "status", "class", "genre", "level", "grade", "sort", "form", "state"}
_BEFORE_MODIFIER = {"a", "an", "the", "to", "with", "of", "in", "have", "has", "had", "any", "for", "on", "from", "by", "many"}


def _beside_column(tokens: list[Token], t: Token, names_schema: Callable[[Token], bool], names_column: Callable[[Token], bool]) -> bool:
    """A lower-case base-form word that modifies a column's name ("a king bed" -> bedType, "have cat
    allergies") or follows a category word ("type animal" -> allergytype). Inflected words, words
    naming the schema (generic ones too), quantifiers and words after who/that (verbs) are not."""
    text = t.text
    if not text.isalpha() or text != text.lower() or len(text) < 3 or t.is_stop or t.lower in _OPERATOR_WORDS:
        return False
    if t.lower in _NOT_VALUES or t.lemma != t.lower or names_schema(t) or names_column(t) or text.endswith("ly"):
        return False
    i, n = t.index, len(tokens)
    before = tokens[i - 1] if i > 0 else None
    after = tokens[i + 1] if i + 1 < n else None
    if after is not None and after.kind == "word" and names_column(after) and before is not None and before.lower in _BEFORE_MODIFIER:
        return True  # "a king bed", "to rock genre"
    if (
        i + 3 < n and before is not None and before.lower in _BEFORE_MODIFIER and tokens[i + 1].lower == "as"
        and tokens[i + 2].lower in ("their", "its", "the", "a", "his", "her") and names_column(tokens[i + 3])
    ):
        return True  # "a republic as their form of government"
    return before is not None and before.kind == "word" and before.lemma in _CATEGORY_WORDS and names_column(before)


#: participles that say a row exists or is linked, not its status ("are listed", "were involved")
_NOT_STATES = {"listed", "recorded", "included", "stored", "contained", "involved", "located", "based", "associated",
               "related", "connected", "named", "called", "used", "held", "owned", "given", "found", "needed",
               "required", "affected", "concerned", "mentioned", "described", "reported", "produced", "created"}  # fmt: skip
_BE = {"be", "is", "are", "was", "were", "been", "being", "got", "get", "gets"}
_CLAUSE_END = {".", "?", "!", ",", ";", "and", "or", "but"}


def _state_participle(tokens: list[Token], t: Token, names_schema: Callable[[Token], bool]) -> bool:
    """A lower-case past participle that states the counted rows' status: after a form of "be" at
    the end of its clause ("lessons have been cancelled?", "were completed?"), or right before a
    status word ("in cancelled state"). Linked only to status columns the copy shows nothing of."""
    text = t.text
    if not text.isalpha() or text != text.lower() or len(text) < 5 or not text.endswith("ed") or t.lemma == t.lower:
        return False
    if names_schema(t) or t.lower in _OPERATOR_WORDS or t.is_stop or t.lower in _NOT_STATES:
        return False
    i, n = t.index, len(tokens)
    after = tokens[i + 1] if i + 1 < n else None
    if after is not None and after.kind == "word" and after.lemma in _STATE_WORDS:
        return True
    before = tokens[i - 1] if i > 0 else None
    return before is not None and before.lower in _BE and (after is None or after.text in _CLAUSE_END or after.lower in _CLAUSE_END)


# --------------------------------------------------------------------------- linking
class Hints(Protocol):
    """Name matching supplied by the parser (0..1 each)."""

    def column_hint(self, table: str, column: str, around: int, width: int = 4, exclude: frozenset[int] = frozenset()) -> float: ...

    def table_hint(self, table: str, exclude: frozenset[int] = frozenset()) -> float: ...


@dataclass(frozen=True)
class OpenLink:
    """``table.column = value`` (or several ANDed pairs for a split name), a score and why."""

    pairs: tuple[tuple[str, str, Any], ...]
    score: float
    why: str


def link_span(
    span: Span,
    tokens: list[Token],
    catalog: Catalog,
    values: ValueIndex,
    hints: Hints,
    *,
    keys: frozenset[tuple[str, str]],
    ignore: frozenset[int] = frozenset(),
    claimed: frozenset[int] = frozenset(),
) -> list[OpenLink]:
    """Ranked columns (and spellings) for a span the value index does not hold; [] if none fits.

    ``keys`` are the (lower-case) key and foreign-key columns; ``ignore`` are tokens that must not
    hint a table-named column (the counted noun: "car makers in France" does not point at
    ``Maker``); ``claimed`` are words nearer another literal ("Professors in building NEB").
    """
    span_set = frozenset(span.tokens) | claimed
    cue = _cue(tokens, span)
    kind = kind_of(span.text)
    refs = {(fk.table.lower(), c.lower()): r for fk in catalog.foreign_keys for c, r in zip(fk.columns, fk.ref_columns)}
    heads = _head_tables(span, catalog)
    labels = _label_tables(span, tokens, catalog, hints, span_set | claimed)
    modified = _modified_tables(span, tokens, catalog, hints) if span.kind == "beside" else frozenset()
    by_verb = _by_verb(tokens, span) if span.kind in ("proper", "quoted") else None
    state = _names_a_state(span, tokens)
    # "How many activities does Mark Giuliano participate in?": the literal is the verb's subject,
    # another entity than the counted one, so it is not the counted table's own name
    counted = _tables_named_by(ignore, tokens, catalog, hints) if _is_subject(span, tokens, ignore) else frozenset()
    label_lemmas = _label_lemmas(span, tokens, span_set | claimed)
    fk_targets = {
        (fk.table.lower(), c.lower()): (fk.ref_table, r) for fk in catalog.foreign_keys for c, r in zip(fk.columns, fk.ref_columns)
    }
    labelled = _labelled_columns(span, catalog, label_lemmas)
    out: list[OpenLink] = []
    for table in catalog.tables:
        if table.name.lower().startswith("_pimento"):
            continue
        t_words = set(name_words(table.name))
        table_hint = hints.table_hint(table.name, exclude=span_set | ignore)
        for column in table.columns:
            if column.type not in ("text", "other"):
                continue
            key = (table.name.lower(), column.name.lower())
            is_key = key in keys
            c_words = set(name_words(column.name))
            if span.kind == "coded":
                if not c_words & _CODED_COLUMNS:
                    continue
            elif is_key and span.kind not in ("code", "quoted") and c_words & _KEY_WORDS:
                continue  # a natural text key ("dept_name", "building") holds values a question names
            if kind == "demonym" and not (c_words | (t_words if "name" in c_words else set())) & (_NATION_WORDS | {"nation"}):
                continue  # "Bangladeshi artists": an adjective of nationality only fills a country/nationality column
            profile = column_profile(values, catalog, table.name, column.name)
            if profile.informative and profile.style == "numeric":
                continue
            if span.kind == "state" and (profile.informative or not c_words & _STATUS_LABELS):
                continue
            if span.kind == "beside":
                # only where the copy cannot tell (placeholders), and only the column named right there,
                # or the label/category column of the table named right after it ("rock genre", "dog pets")
                if profile.informative:
                    continue
                at = span.tokens[0]
                if at + 3 < len(tokens) and tokens[at + 1].lower == "as":
                    at += 3  # "a republic as their form of government": the column is named after "as their"
                named_here = hints.column_hint(table.name, column.name, at, width=1, exclude=span_set) > 0
                if not named_here and not (table.name in modified and _is_category_column(c_words, t_words)):
                    continue
            own = c_words - t_words
            if own - _GENERIC:
                hint = _hint(hints, table.name, column.name, span, span_set)
            else:
                # a column named only by its table's words ("Maker" of car_makers, "product_details"):
                # the counted noun ("car makers in France") does not point at it
                hint = _hint(hints, table.name, column.name, span, span_set | ignore)
            score, reasons = 0.3 + 0.45 * hint + 0.1 * table_hint + (0.05 if own in ({"name"}, {"title"}) else 0.0), []
            if hint > 0:
                reasons.append("column named nearby")
            ref = refs.get(key)
            code_words = c_words | (set(name_words(ref)) if ref else set())
            bonus, why = _class_bonus(span, kind, cue, c_words, t_words, code_words, is_key)
            score += bonus
            reasons += why
            if span.kind == "coded":
                score += 0.3
            if by_verb is not None and _is_agent_column(c_words - t_words, by_verb):
                score += 0.4  # "companies created by Andy" -> Founder: the agent of the verb, not the counted thing's name
                reasons.append("'by ...' names the agent")
            if table.name in counted and _is_label_column(catalog, table.name, column.name):
                score -= 0.2
                reasons.append("the literal is the subject, not the counted thing")
            if span.kind == "state":
                score += 0.2  # a participle stating the rows' status: the status column
                reasons.append("a participle states a status")
            if state and c_words & {"name", "title", "first", "last", "fullname"}:
                score -= 0.2  # 'Captured', 'Completed': a state, not a name
            elif state and c_words & _STATE_WORDS:
                score += 0.15
                reasons.append("a participle names a state")
            label = _label_bonus(labels, catalog, table.name, column.name, fk_targets.get(key))
            if table.name in modified and _is_category_column(c_words, t_words):
                label = max(label, 0.3)  # "dog pets" -> Pets.PetType: the modifier is a category of the noun
            if table.name in counted:
                label = 0.0  # the counted noun before a subject does not label it
            if label:
                score += label
                reasons.append("a noun beside the literal names its table")
            if (table.name, column.name) in labelled:
                score += 0.25  # "the category 'Seeds'", "the state of NY": the noun beside names the column
                reasons.append("the noun beside the literal names the column")
            elif labelled:
                score -= 0.15  # "the city called Lake X", "state Georgia": another column is named right there
                reasons.append("another column is named beside the literal")
            if heads and table.name not in heads:
                score -= 0.15  # "United Airlines" is an airline: a column of another table is less likely
                reasons.append("the literal's last word names another table")
            if is_key and span.kind != "code":
                score -= 0.1
            if profile.informative:
                score -= 0.15  # values survived there, and this one is not among them
                reasons.append(f"index holds other {profile.style} values")
            if score < 0.35:
                continue
            country = country_of(span.text) if kind in ("demonym", "language") and span.kind in ("proper", "plain") else None
            if country is not None and (c_words | (t_words if "name" in c_words else set())) & {"country", "nation"}:
                # "Bangladeshi artists" on a country column: the country's name ('Bangladesh')
                span_here = Span(span.tokens, country, "proper", span.label)
                out += _spellings(span_here, table.name, column.name, profile, score, reasons, catalog)
                continue
            out += _spellings(span, table.name, column.name, profile, score, reasons, catalog)
    out.sort(key=lambda o: -o.score)
    return out


def _own_words(c_words: set[str], t_words: set[str]) -> set[str]:
    """A column's words that are not its table's (generic ones kept only when nothing else is left):
    ``order_details`` of ``Customer_Orders`` -> {detail}."""
    c_words = {w for w in c_words if len(w) > 1}  # "g" of GType abbreviates the table (Video_Games)
    return (c_words - t_words - _GENERIC) or (c_words - t_words - {"id"})


def _labelled_columns(span: Span, catalog: Catalog, label_lemmas: set[str]) -> frozenset[tuple[str, str]]:
    """Text columns whose own words are all among the nouns right beside the literal ("the category
    'Seeds'", "orders have detail 'Second time'", "the city called X"); an ``*id`` column only for a code."""
    out = set()
    for table in catalog.tables:
        t_words = set(name_words(table.name))
        for column in table.columns:
            if column.type not in ("text", "other"):
                continue
            c_words = set(name_words(column.name))
            own = _own_words(c_words, t_words)
            if "id" in c_words and span.kind != "code":
                continue
            # all its own words beside the literal, or one of several ("state Georgia" -> state_province_county)
            if own and (own <= label_lemmas or len(own) > 1 and own - _GENERIC & label_lemmas):
                out.add((table.name, column.name))
    return frozenset(out)


def _head_tables(span: Span, catalog: Catalog) -> frozenset[str]:
    """Tables named by the last word of a multi-word literal ("United Airlines" -> airlines):
    the literal is most likely one of that table's rows."""
    words = span.text.split()
    if len(words) < 2 or span.kind == "coded":
        return frozenset()
    head = lemma(words[-1].lower())
    return frozenset(
        t.name for t in catalog.tables
        if not t.name.lower().startswith("_pimento") and head in set(name_words(t.name)) - _GENERIC
    )  # fmt: skip


_LABEL_SKIP = {"the", "a", "an", "of", "called", "named", "with", "as"}


def _label_windows(span: Span, tokens: list[Token], exclude: frozenset[int]) -> tuple[list[int], list[int]]:
    """The content words right before the literal (up to three; articles, "of", "named/called", "as"
    skipped) and right after it (up to two)."""
    n = len(tokens)
    before: list[int] = []
    k = min(span.tokens + span.label) - 1
    while k >= 0 and tokens[k].lower in _LABEL_SKIP:
        k -= 1
    while k >= 0 and len(before) < 3 and tokens[k].kind == "word" and not tokens[k].is_stop and tokens[k].index not in exclude:
        before.append(k)
        k -= 1
    after: list[int] = []
    k = max(span.tokens + span.label) + 1
    while k < n and len(after) < 2 and tokens[k].kind == "word" and not tokens[k].is_stop and tokens[k].index not in exclude:
        after.append(k)
        k += 1
    return before, after


def _label_lemmas(span: Span, tokens: list[Token], exclude: frozenset[int]) -> set[str]:
    """Lemmas of the words right beside the literal (see :func:`_label_windows`)."""
    before, after = _label_windows(span, tokens, exclude)
    return {tokens[k].lemma for k in before + after}


def _label_tables(span: Span, tokens: list[Token], catalog: Catalog, hints: Hints, exclude: frozenset[int]) -> dict[str, float]:
    """Tables named by the noun right beside the literal: "the artist 'Metallica'", "the store chain
    South", "the Physics department" (0..1 each; words of other literals excluded).

    Before the literal: up to three content words ending right before it (articles and "named/
    called" skipped); after it: up to two content words starting right after it.
    """
    before, after = _label_windows(span, tokens, exclude)
    out: dict[str, float] = {}
    for window in (before, after):
        if not window:
            continue
        others = frozenset(t.index for t in tokens if t.index not in window)
        for table in catalog.tables:
            if table.name.lower().startswith("_pimento"):
                continue
            strength = hints.table_hint(table.name, exclude=others)
            if strength >= 0.6:
                out[table.name] = max(out.get(table.name, 0.0), strength)
    return out


#: nouns for the agent of a passive verb ("created by X" -> founder, "written by X" -> author)
_AGENT_NOUNS = {"author", "writer", "director", "founder", "creator", "owner", "manager", "composer", "producer",
                "publisher", "designer", "builder", "maker", "manufacturer", "artist", "singer", "performer",
                "architect", "developer", "editor", "organizer", "organiser", "sponsor", "inventor"}  # fmt: skip


_STATE_WORDS = {"status", "state", "result", "outcome", "decision", "disposition", "condition", "stage", "fate"}
#: status words that do not also name a place ("state" does: a US state)
_STATUS_LABELS = _STATE_WORDS - {"state"}


def _names_a_state(span: Span, tokens: list[Token]) -> bool:
    """A quoted one-word literal shaped like a past participle ('Captured', 'Completed', 'Cancelled'),
    or a literal right after "being": it describes a state (a status column), not a name. Not after
    a name cue ("named 'Alfred'")."""
    if span.kind not in ("proper", "quoted", "code") or len(span.tokens) != 1 or " " in span.text.strip():
        return False
    if _cue(tokens, span) == "name":
        return False
    k = span.tokens[0] - 1
    if k >= 0 and tokens[k].lower == "being":
        return True
    word = span.text.strip().lower()
    return span.kind == "quoted" and word.isalpha() and len(word) >= 6 and word.endswith("ed") and lemma(word) != word


_AUXILIARIES = {"does", "do", "did", "has", "have", "had"}


def _is_subject(span: Span, tokens: list[Token], counted: frozenset[int]) -> bool:
    """The literal is the subject of an auxiliary that follows the counted noun: "How many albums
    does (the artist) Metallica have", "How many students did LORIA ONDERSMA teach"."""
    if not counted or span.kind not in ("proper", "quoted", "code"):
        return False
    k = min(span.tokens + span.label) - 1
    skipped = 0
    while k >= 0 and (tokens[k].lower in ("the", "a", "an") or (tokens[k].kind == "word" and not tokens[k].is_stop and skipped < 2)):
        skipped += tokens[k].lower not in ("the", "a", "an")
        k -= 1
    if k >= 0 and tokens[k].lower in _AUXILIARIES and max(counted) < k:
        return True
    # a reduced relative clause: "the number of activities Mark Giuliano is involved in"
    after = span.tokens[-1] + 1
    return (
        min(span.tokens) == max(counted) + 1
        and after < len(tokens)
        and tokens[after].lower in _AUXILIARIES | {"is", "are", "was", "were"}
    )


def _tables_named_by(words: frozenset[int], tokens: list[Token], catalog: Catalog, hints: Hints) -> frozenset[str]:
    """Tables the given tokens (the counted noun) name outright."""
    others = frozenset(t.index for t in tokens if t.index not in words)
    return frozenset(
        t.name for t in catalog.tables
        if not t.name.lower().startswith("_pimento") and hints.table_hint(t.name, exclude=others) >= 0.85
    )  # fmt: skip


def _by_verb(tokens: list[Token], span: Span) -> str | None:
    """The verb of a passive agent phrase before the literal ("created by Andy" -> "create"), "" when
    "by" has no word before it; None when no "by" introduces the literal."""
    k = min(span.tokens + span.label) - 1
    while k >= 0 and tokens[k].lower in ("the", "a", "an"):
        k -= 1
    if k < 0 or tokens[k].lower != "by":
        return None
    return tokens[k - 1].lemma if k > 0 and tokens[k - 1].kind == "word" else ""


def _is_agent_column(own_words: set[str], verb: str) -> bool:
    """A column named by an agent noun: a listed one (author, founder, director, ...) or one made from
    the verb ("composed by" -> composer, "owned by" -> owner)."""
    for w in own_words:
        if w in _AGENT_NOUNS:
            return True
        if verb and len(verb) >= 3 and w.endswith(("er", "or", "ist")) and (stem(w) == stem(verb) or w.startswith(verb[:-1] if verb.endswith("e") else verb)):
            return True
    return False


def _modified_tables(span: Span, tokens: list[Token], catalog: Catalog, hints: Hints) -> frozenset[str]:
    """Tables the word right after a lower-case modifier names ("rock genre" -> Genre, "dog pets" ->
    Pets): the modifier is then likely one of that table's labels or categories."""
    k = span.tokens[-1] + 1
    if k >= len(tokens) or tokens[k].kind != "word":
        return frozenset()
    others = frozenset(t.index for t in tokens if t.index != k)
    return frozenset(
        t.name for t in catalog.tables
        if not t.name.lower().startswith("_pimento") and hints.table_hint(t.name, exclude=others) >= 0.85
    )  # fmt: skip


def _is_category_column(c_words: set[str], t_words: set[str]) -> bool:
    """A column that labels or classifies its table's rows: named by the table's words only, or
    by them plus name/title or a category word (``Genre.Name``, ``Pets.PetType``, ``Has_Allergy.Allergy``)."""
    own = c_words - t_words
    return bool(c_words) and own <= {"name", "title"} | _CATEGORY_WORDS and len(own) <= 1


def _label_bonus(
    labels: dict[str, float], catalog: Catalog, table: str, column: str, target: tuple[str, str] | None
) -> float:
    """A label column (name/title, or named by its table's words only) of a table the noun beside
    the literal names, or a foreign key to such a column ("courses in the Physics department" ->
    ``course.dept_name``): +0.3 x how well the noun names the table."""
    if not labels:
        return 0.0
    best = 0.0
    for t, c in ((table, column), target or ("", "")):
        if t in labels and _is_label_column(catalog, t, c):
            best = max(best, labels[t])
    return 0.3 * best


def _is_label_column(catalog: Catalog, table: str, column: str) -> bool:
    c_words = set(name_words(column))
    return bool(c_words) and c_words <= set(name_words(table)) | {"name", "title"}


def _hint(hints: Hints, table: str, column: str, span: Span, exclude: frozenset[int]) -> float:
    """Column named near the span, more when named right beside it ("City Aberdeen", "type CV")."""
    first, last = span.tokens[0], span.tokens[-1]
    near = max(hints.column_hint(table, column, first, exclude=exclude), hints.column_hint(table, column, last, exclude=exclude))
    beside = max(
        hints.column_hint(table, column, first, width=2, exclude=exclude),
        hints.column_hint(table, column, last, width=2, exclude=exclude),
    )
    return 0.7 * near + 0.3 * beside


def _cue(tokens: list[Token], span: Span) -> str:
    """The word that introduces the span, skipping articles and trimmed labels: "from", "named", ..."""
    k = min(span.tokens + span.label) - 1
    if k > 0 and tokens[k].lower in ("or", "and", ","):  # "in Aberdeen or Abilene": the first one's cue
        k -= 1
        while k >= 0 and (_capital(tokens[k]) or tokens[k].kind == "quoted"):
            k -= 1
    while k >= 0 and (tokens[k].lower in ("the", "a", "an", "city", "country", "either", "both", "neither") or tokens[k].kind == "punct" and tokens[k].text in ",'\""):
        k -= 1
    if k < 0:
        return ""
    word = tokens[k].lower
    if word in ("called", "named") and k > 0 and tokens[k - 1].kind == "word" and not tokens[k - 1].is_stop:
        return ""  # "the city called X": the noun before names the column, not a person's name
    if word in _NAME_CUES or lemma(word) in ("name", "call", "write", "direct", "title"):
        return "name"
    if word in _LOCATION_CUES or lemma(word) in _LOCATION_CUES:
        return "place:" + word
    return ""


def _class_bonus(
    span: Span, kind: str | None, cue: str, c_words: set[str], t_words: set[str], code_words: set[str], is_key: bool
) -> tuple[float, list[str]]:
    """Evidence from what the literal is (gazetteer, code, name) and the word that introduces it."""
    bonus, why = 0.0, []
    nation = c_words | (t_words if "name" in c_words else set())  # country.Name is a country column
    if kind == "continent":
        if "continent" in c_words:
            bonus, why = 0.5, ["a continent"]
        elif "region" in c_words:
            bonus, why = 0.2, ["a continent"]
        else:
            bonus = -0.2
    elif kind == "country":
        if nation & _NATION_WORDS:
            bonus, why = 0.5, ["a country"]
        elif c_words & (_PLACE_WORDS - _SITE_WORDS):
            bonus, why = 0.1, ["a country"]
        else:
            bonus = -0.2
    elif kind == "language":
        if "language" in c_words:
            bonus, why = 0.5, ["a language"]
        elif c_words & _NATION_WORDS:
            bonus, why = 0.15, ["a language"]
        else:
            bonus = -0.2
    elif kind == "demonym":
        if c_words & _NATION_WORDS or "country" in nation:
            bonus, why = 0.5, ["an adjective of nationality"]
        else:
            bonus = -0.2
    elif kind == "season":
        if c_words & _TERM_WORDS:
            bonus, why = 0.5, ["a season names a term"]
        else:
            bonus = -0.2
    elif cue.startswith("place"):
        if c_words & _PLACE_WORDS:
            bonus, why = 0.35, [f"'{cue[6:]} ...' names a place"]
        elif c_words & _NATION_WORDS:
            bonus, why = 0.15, [f"'{cue[6:]} ...' names a place"]
        direction = synonyms(cue[6:])
        if direction and any(w in direction for w in c_words):
            bonus += 0.15
    elif cue == "name" or span.kind in ("proper", "quoted"):
        if c_words & {"name", "title", "first", "last", "by", "author", "fullname", "full"}:
            bonus, why = (0.3 if cue == "name" else 0.15), ["a name" if cue == "name" else "a proper name"]
    if span.kind == "code" and code_words & _CODE_WORDS:
        bonus += 0.25
        why.append("a code")
    if span.kind == "code" and is_key:
        bonus += 0.1
    # a word of the literal names the column or its table: "United Airlines" -> Airline
    # ("Airlines" names the table airlines whose own-named column is Airline)
    words = [lemma(w.lower()) for w in span.text.split()]
    label_column = c_words <= t_words | {"name", "title"}
    named = (c_words | (t_words if label_column else set())) - _GENERIC
    if len(words) > 1 and set(words) & named:
        bonus += 0.4 if words[-1] in named else 0.2
        why.append("the literal names the column")
    return bonus, why


def _spellings(
    span: Span, table: str, column: str, profile: ColumnProfile, score: float, reasons: list[str], catalog: Catalog
) -> list[OpenLink]:
    """The literal as the column most likely spells it, then other casings (slightly lower)."""
    base = f"open value -> {table}.{column} (not in the value index"
    why = base + ("; " + ", ".join(reasons) if reasons else "") + ")"
    if span.kind == "coded":
        word = lemma(span.text.lower())
        return [OpenLink(((table, column, v),), score - 0.04 * i, why) for i, v in enumerate(CODED_WORDS[word][:3])]
    forms = _casings(span, profile, category=_is_category_like(catalog, table, column))
    out = [OpenLink(((table, column, v),), score - 0.05 * i, why) for i, v in enumerate(forms[:4])]
    split = _first_last(catalog, table, column, span)
    if split is not None:
        out.insert(0, OpenLink(split, score + 0.25, base + "; a first and a last name)"))
    return out


def _casings(span: Span, profile: ColumnProfile, *, category: bool = False) -> list[str]:
    """Spellings to try: as typed (singular first for a lower-case plural), known aliases
    ('US' -> 'USA'), then the casing the column's surviving values use, or the other casing.

    A lower-case word put on a category or status column the copy shows nothing of ("a king bed",
    "have been cancelled") is tried capitalised first: such columns mostly hold capitalised labels
    ('King', 'Cancelled'; about three in four alphabetic values of the type/status/category columns
    of the studied Spider databases)."""
    text = span.text
    if span.kind in ("quoted", "code") or text.isupper():
        forms = [text]
    else:
        words = text.split()
        singular = " ".join(words[:-1] + [_singular(words[-1])]) if span.kind == "plain" or len(words) == 1 else text
        forms = [text, singular] if span.kind == "proper" else [singular, text]
    forms += list(ALIASES.get(text.lower(), ()))
    styled = {"lower": str.lower, "upper": str.upper, "title": _title}.get(profile.style)
    if styled is not None:
        forms = [styled(f) for f in forms] + forms
    elif (span.kind in ("beside", "state") or kind_of(text) == "season") and category and text == text.lower():
        forms = [_title(f) for f in forms] + forms
    elif span.kind in ("plain", "proper", "beside") and not text.isupper():
        forms = forms + [_title(f) if f == f.lower() else f.lower() for f in forms]
    return list(dict.fromkeys(f for f in forms if f))


def _is_category_like(catalog: Catalog, table: str, column: str) -> bool:
    """A column that classifies rows: a category or status word in its name (``bedType``,
    ``lesson_status_code``), or the label of a table (``Genre.Name``, ``Has_Allergy.Allergy``)."""
    c_words = set(name_words(column))
    if c_words & (_CATEGORY_WORDS | _STATE_WORDS | _TERM_WORDS):
        return True
    return _is_category_column(c_words, set(name_words(table)))


def _title(text: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in text.split())


def _singular(word: str) -> str:
    low = word.lower()
    base = lemma(low)
    if base == low or low.endswith("ss") or not low.endswith("s"):
        return word  # only a plural ending is taken off ("Beijing" stays)
    return word[: len(base)] if word[: len(base)].lower() == base else (base.title() if word[:1].isupper() else base)


def _first_last(catalog: Catalog, table: str, column: str, span: Span) -> tuple[tuple[str, str, Any], ...] | None:
    """'Mark Giuliano' on a table with first- and last-name columns: both, ANDed."""
    parts = span.text.split()
    if span.kind not in ("proper", "quoted") or len(parts) != 2:
        return None
    words = set(name_words(column))
    if "first" not in words:
        return None
    for other in catalog.table(table).columns:
        if other.name != column and "last" in name_words(other.name) and other.type in ("text", "other"):
            return ((table, column, parts[0]), (table, other.name, parts[1]))
    return None


def numeric_placeholder(values: ValueIndex, catalog: Catalog, table: str, column: str) -> bool:
    """A text column the index shows nothing useful of: it may hold numbers (compare with care)."""
    profile = column_profile(values, catalog, table, column)
    return not profile.informative or profile.style == "numeric"
