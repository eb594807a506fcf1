"""Offline question -> ranked grouped and summed readings (:class:`~pimento.sql.ir.AggregateQuery`), no LLM.

Beside :func:`~pimento.nl.translate.translate` (one scalar COUNT per question), this module reads
"how many X per Y", "for each Y, how many X", "number of X by Y", "show each Y and the number of X",
"average Z of X (per Y)", "total Z", "sum of Z", "on average". The steps:

1. :func:`~pimento.nl.aggregate_question.read_question`: the aggregate asked (COUNT, SUM, AVG: :mod:`~pimento.nl.aggregate_cues`),
   the group phrases (the words after "for each", "per", "by", ...; or listed before "and the
   number of"), the measure phrase (the words after "average"/"total"), and the counting
   question that remains once they are taken out ("How many X ...");
2. the body (relations, joins, filters): today's count parser on that remaining question, so
   literals, joins and filters are linked exactly as for a scalar count;
3. schema linking of the group phrases to columns (a column named by the phrase, or the name
   column of a table the phrase names) and of the measure phrase to a numeric column;
4. the body extended with a foreign-key path to the group and measure columns' tables where
   they are not in it (through the key the question names, as the count parser joins), scored (sum of evidence weights, as the count parser's) and ranked; a
   reading that joins a relation no word of the question names is dropped beside the same
   reading without that join (:func:`_spurious_joins`).

A question with no group phrase that asks for no average and no total is a plain count: it gets
no aggregate reading (an empty list), and :func:`translate` stays its parser.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from pimento.errors import InternalError, NotACountingQuestion
from pimento.nl import aggregate_ranker
from pimento.nl.aggregate_ranker import Answer
from pimento.nl.aggregate_question import LEADING, AggregateReading, read_question
from pimento.nl.count_assembly import edge_bonus
from pimento.nl.joins import JoinEdge, join_trees
from pimento.nl.schema_linking import _GENERIC, _column_phrases, _Element, _is_key_column, _lexicon, _match
from pimento.nl.text import Token, lemma, name_words, tokenize
from pimento.nl.translate import translate
from pimento.nl.values import ValueIndex
from pimento.schema import Catalog
from pimento.sql.ir import AggregateKind, AggregateQuery, Attribute, Count, CountQuery, JoinCondition, Relation

__all__ = ["AggregateCandidate", "translate_aggregate"]

_NUMERIC = frozenset({"integer", "real"})
_LINK_MIN = 0.3


@dataclass(frozen=True)
class AggregateCandidate:
    """One ranked grouped/summed formulation: the IR, its SQL, a score (higher is better) and why."""

    query: AggregateQuery
    sql: str
    score: float
    explanation: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"sql": self.sql, "score": round(self.score, 4), "kind": self.query.kind.value, "explanation": list(self.explanation)}


# --------------------------------------------------------------------------- linking


def _tokens(words: tuple[str, ...]) -> list[Token]:
    return tokenize(" ".join(words))


@lru_cache(maxsize=1024)
def _column_links(catalog: Catalog, words: tuple[str, ...], *, numeric: bool) -> list[tuple[Attribute, float, str]]:
    """Columns the phrase names, best first: (attribute, score, why). ``numeric``: measure columns only.

    A group phrase that names a table and nothing else ("each party") links to the table's label
    column (``*name``/``*title``); a foreign-key column it names links to the label of the table
    it references too ("each manufacturer": ``Products.Manufacturer`` and ``Manufacturers.Name``).
    """
    tables, columns = _lexicon(catalog)
    toks = [t for t in _tokens(_schema_spelling(catalog, words)) if t.kind == "word"]
    if not toks:
        return []
    by_table = {e.table: _match(e, toks)[0] for e in tables}
    asks_key = any(t.lower in ("id", "ids", "code", "codes", "number", "numbers", "no") for t in toks)
    out: dict[Attribute, tuple[float, str]] = {}

    def put(attr: Attribute, score: float, why: str) -> None:
        if score >= _LINK_MIN and (attr not in out or out[attr][0] < score):
            out[attr] = (score, why)

    for e in columns:
        assert e.column is not None
        if numeric and (catalog.table(e.table).column(e.column).type not in _NUMERIC or _is_key_column(catalog, e.table, e.column)):
            continue  # a measure is a numeric column that is not a key (a SUM of ids is never meant)
        score = _column_score(_unglued(e), toks, by_table.get(e.table, 0.0))
        if _is_key_column(catalog, e.table, e.column):
            # a group is a key only when the phrase says "id"/"code" or the keyed table has no
            # label (else the label: "each party" groups by party_name)
            score -= 0.05 if asks_key or not _labelled(catalog, e.table, e.column) else 0.45
        put(Attribute(e.table, e.column), score, f"'{' '.join(words)}' names {e.table}.{e.column}")
    if numeric:
        return _ranked(out)
    content = {t.lemma for t in toks if not t.is_stop and t.lemma not in _GENERIC and t.lemma not in LEADING}
    for t in tables:
        s = by_table[t.table]
        if s >= 0.55 and content <= set(t.words) | {w.rstrip("s") for w in t.words} | {_t.lemma for _t in toks if _match(t, [_t])[0] > 0}:
            for label in _labels(catalog, t.table):
                put(label, 0.9 * s, f"'{' '.join(words)}' names table {t.table}: grouped by its {label.column}")
    for fk in catalog.foreign_keys:
        for col in fk.columns:
            attr = Attribute(fk.table, col)
            if attr in out:
                base = out[attr][0] + (0.0 if asks_key or not _labels(catalog, fk.ref_table) else 0.45)
                for label in _labels(catalog, fk.ref_table):
                    put(label, base + 0.02, f"'{' '.join(words)}' names {attr}, a reference to {fk.ref_table}: grouped by its {label.column}")
    return _ranked(out)


#: British and American spellings of one word: (pattern, replacement), tried both ways
_SPELLINGS = ((r"is", "iz"), (r"iz", "is"), (r"our", "or"), (r"or", "our"), (r"re$", "er"), (r"er$", "re"), (r"ll", "l"), (r"l", "ll"))


def _schema_spelling(catalog: Catalog, words: tuple[str, ...]) -> tuple[str, ...]:
    """The phrase with each word the schema spells otherwise in the schema's spelling: "each
    organization" names ``organisation_id``, "colour" names ``color`` (a word the schema's names
    lack, one of whose British/American variants they have)."""
    vocabulary = {w for e in itertools.chain(*_lexicon(catalog)) for w in e.words}
    out = []
    for word in words:
        low = lemma(word.lower())
        variants = () if low in vocabulary else (re.sub(pattern, repl, low, count=1) for pattern, repl in _SPELLINGS)
        out.append(next((v for v in variants if v != low and v in vocabulary), word))
    return tuple(out)


def _unglued(e: _Element) -> _Element:
    """The column with a key suffix glued to a word split off: ``yearid`` names "year" (+ "id"),
    as ``year_id`` and ``yearId`` do (a word of six letters or more ending in "id", so "valid",
    "humid" or "paid" stay whole)."""
    words = tuple(itertools.chain.from_iterable((w[:-2], "id") if len(w) >= 6 and w.endswith("id") else (w,) for w in e.words))
    return e if words == e.words else replace(e, words=words)


def _labelled(catalog: Catalog, table: str, column: str) -> bool:
    """Whether the rows a key column identifies have a label: its own table's (a primary key) or
    the referenced table's (a foreign key)."""
    if _labels(catalog, table) and column in catalog.table(table).primary_key:
        return True
    return any(column in fk.columns and _labels(catalog, fk.ref_table) for fk in catalog.foreign_keys if fk.table == table)


def _labels(catalog: Catalog, table: str) -> list[Attribute]:
    """The text columns of ``table`` that label its rows (``name``, ``*_name``, ``title``)."""
    return [
        Attribute(table, c.name) for c in catalog.table(table).columns
        if c.type == "text" and re.search(r"(?:^|_)(?:name|title)$|^(?:name|title)", c.name, re.IGNORECASE)
    ][:1]


def _ranked(links: dict[Attribute, tuple[float, str]]) -> list[tuple[Attribute, float, str]]:
    return [(a, s, why) for a, (s, why) in sorted(links.items(), key=lambda kv: (-kv[1][0], str(kv[0])))]


def _column_score(e: _Element, toks: list[Token], table_score: float) -> float:
    """A column's link score: its own name words, helped by its table's; a generic-only name
    ("name", "id") needs its table named too ("the name of the track")."""
    col, _ = _match(e, toks)
    if all(w in _GENERIC for w in e.words):
        return 0.4 * col + 0.6 * table_score if table_score > 0 else 0.0
    return col + 0.15 * table_score


# --------------------------------------------------------------------------- assembly


def translate_aggregate(
    question: str,
    catalog: Catalog,
    *,
    values: ValueIndex | None = None,
    k: int = 5,
    today: _dt.date | None = None,
    learned: bool | None = None,
    answers: Callable[[AggregateQuery], Answer] | None = None,
) -> list[AggregateCandidate]:
    """Ranked grouped/summed readings of ``question``, best first (at most ``k``).

    Same arguments as :func:`~pimento.nl.translate.translate`. Empty when the question asks for
    no group, no average and no total (a plain count: use :func:`translate`), or when no group or
    measure phrase links to a column. ``learned``: reorder the first
    :data:`~pimento.nl.aggregate_ranker.POOL` rule-ordered readings by the learned ranker
    (None: :data:`~pimento.nl.aggregate_ranker.DEFAULT_ON`); ``answers``: each reading's answer
    on the synthetic copy, for a ranker model that reads it (public: the copy is).

    >>> from pimento.schema import Catalog, Table, Column
    >>> cat = Catalog((Table("Pets", (Column("PetID", "integer"), Column("species", "text"), Column("weight", "real")), ("PetID",)),))
    >>> translate_aggregate("How many pets are there per species?", cat)[0].sql
    'SELECT Pets.species, COUNT(*) FROM Pets GROUP BY Pets.species'
    >>> translate_aggregate("What is the average weight of pets?", cat)[0].sql
    'SELECT AVG(Pets.weight) FROM Pets'
    >>> translate_aggregate("How many pets are there?", cat)
    []
    """
    if k < 1:
        raise InternalError("k must be at least 1")
    found: dict[AggregateQuery, tuple[float, tuple[str, ...]]] = {}
    bonus = edge_bonus(catalog, tokenize(question))
    for order, reading in enumerate(read_question(question, _column_phrases(catalog))):
        for query, score, why in _reading_candidates(reading, catalog, values, today, bonus):
            score -= 0.4 * order
            key = query.canonical()
            if key not in found or found[key][0] < score:
                found[key] = (score, why)
    for query in _spurious_joins(list(found), question, catalog):
        del found[query]
    use_model = aggregate_ranker.DEFAULT_ON if learned is None else learned
    ranked = sorted(found.items(), key=lambda kv: (-kv[1][0], len(kv[0].body.relations), str(kv[0])))
    ranked = ranked[: max(k, aggregate_ranker.POOL) if use_model else k]
    out = [AggregateCandidate(q, q.to_sql("duckdb"), s, why) for q, (s, why) in ranked]
    if use_model:
        out = aggregate_ranker.rerank(question, catalog, out[: aggregate_ranker.POOL], answers=answers) + out[aggregate_ranker.POOL :]
    return out[:k]


_Link = tuple[Attribute, float, str]


def _spurious_joins(queries: list[AggregateQuery], question: str, catalog: Catalog) -> list[AggregateQuery]:
    """Readings that join a relation the question does not mention, beside a reading of the same
    groups, measure and filters without it: those are not proposed.

    The count parser joins only the tables the question names (besides the counted one), but one
    counted phrase may read as several tables ("patients": ``Patient``, ``StudyPatient``, or the
    ``pat_id`` of another table), and the group's table then pulls the counted table's join in. A
    reading over relations R' is dropped when another over R (a strict subset) has the same
    aggregate, groups, measure and selections (so R' - R is not needed to connect them) and no
    word of the question left once R's tables are named names a table of R' - R or one of its
    columns (as the count parser joins only the tables that words outside the counted phrase name,
    :func:`pimento.nl.count_assembly._mentioned_tables`, with the same lexicon and matching).
    """
    words = [t for t in tokenize(question) if t.kind == "word" and not t.is_stop]
    lexicon = _lexicon(catalog)
    tables = {e.table: e for e in lexicon[0]}
    columns: dict[str, list[_Element]] = {}
    for e in lexicon[1]:
        columns.setdefault(e.table, []).append(e)
    shapes = {q: _shape_key(q) for q in queries}
    out = []
    for wider in queries:
        have = {r.table for r in wider.body.relations}
        for narrower in queries:
            fewer = {r.table for r in narrower.body.relations}
            if not fewer < have or shapes[narrower] != shapes[wider]:
                continue
            free = [t for t in words if not any(_match(tables[n], [t])[0] > 0 for n in fewer if n in tables)]
            if not any(_names(tables[x], columns.get(x, []), free) for x in have - fewer if x in tables):
                out.append(wider)
                break
    return out


def _names(table: _Element, columns: list[_Element], words: list[Token]) -> bool:
    """Whether ``words`` name the table (half its name words at least) or one of its columns outright."""
    return _match(table, words)[0] >= 0.5 or any(_match(c, words)[0] >= 0.99 for c in columns)


def _shape_key(query: AggregateQuery) -> tuple[Any, ...]:
    """What a reading asks, whatever its joins: the aggregate, the group and measure columns and the filters, by table."""
    table = {r.alias: r.table for r in query.body.relations}

    def col(a: Attribute | None) -> tuple[str, str] | None:
        return None if a is None else (table.get(a.alias, a.alias), a.column)

    filters = frozenset((table.get(s.alias, s.alias), s.predicate) for s in query.body.selections)
    return (query.kind, tuple(col(g) for g in query.group_by), col(query.column), filters)


def _reading_candidates(
    reading: AggregateReading,
    catalog: Catalog,
    values: ValueIndex | None,
    today: _dt.date | None,
    bonus: dict[JoinEdge, float] | None = None,
) -> list[tuple[AggregateQuery, float, tuple[str, ...]]]:
    measures: list[tuple[Attribute | None, float, str]] = [(None, 0.0, "")]
    if reading.kind is not AggregateKind.COUNT:
        measures = list(_column_links(catalog, reading.measure, numeric=True)[:3]) if reading.measure else []
        if not measures:
            return []
    group_links = [_column_links(catalog, g, numeric=False) for g in reading.groups]
    group_links = [links for links in group_links if links]
    if reading.kind is AggregateKind.COUNT and not group_links:
        return []
    if reading.kind is AggregateKind.SUM and reading.cues[-1] in ("total number of", "in total") and reading.measure:
        # "total number of students", "how many notes in total": a count when the words name a
        # table at least as well as a column (with no group: the plain count, translate's)
        tables, _ = _lexicon(catalog)
        toks = [t for t in _tokens(reading.measure) if t.kind == "word"]
        if max((_match(e, toks)[0] for e in tables), default=0.0) >= measures[0][1] - 0.1:
            if not reading.groups:
                return []
            measures = [(m, s - 0.6, w) for m, s, w in measures]
    measure_tables = [m.alias for m, _, _ in measures if m is not None]
    out: list[tuple[AggregateQuery, float, tuple[str, ...]]] = []
    for body, body_score, body_why in _body_queries(reading, catalog, values, today, measure_tables):
        have = {r.table for r in body.relations}
        for measure, m_score, m_why in measures:
            links = [
                _tried_links([(a, s + (0.15 if a.alias in have else 0.0), w) for a, s, w in ls if a != measure and not _own_label(a, w, measure)], have)
                for ls in group_links
            ]
            for groups, g_score, g_why in _group_choices([ls for ls in links if ls]):
                built = _combine(catalog, body, reading.kind, groups, measure, bonus)
                if built is None:
                    continue
                query, added = built
                missing = 0.5 * (len(reading.groups) > 0 and not groups)
                score = body_score + g_score + m_score - 0.2 * added - missing
                why = (f"{reading.kind.value.upper()} reading (cues: {', '.join(reading.cues) or '-'})",) + body_why
                why += tuple(g_why) + ((m_why,) if m_why else ())
                out.append((query, score, why))
    return out


def _tried_links(links: list[_Link], have: set[str]) -> list[_Link]:
    """A group phrase's links worth trying, best first: the best four, where the best link to a
    table of the body is always among the first three (:func:`_group_choices` tries three): "each
    year" over ``hall_of_fame`` tries ``hall_of_fame.yearid`` even when ten other tables have a
    column named exactly ``year`` (each of those needs joins the question does not ask for)."""
    ranked = sorted(links, key=lambda link: -link[1])
    own = next((link for link in ranked if link[0].alias in have), None)
    if own is None or own in ranked[:3]:
        return ranked[:4]
    return sorted(ranked[:2] + [own], key=lambda link: -link[1])


def _own_label(group: Attribute, why: str, measure: Attribute | None) -> bool:
    """A table's label as the group of a SUM/AVG over that same table's column ("the average
    population of each city" averages over cities: the phrase names the rows, not a group)."""
    return measure is not None and group.alias == measure.alias and "names table" in why


def _group_choices(links: list[list[_Link]]) -> list[tuple[list[Attribute], float, list[str]]]:
    """Sets of group columns, each with its score and reasons: every phrase picks one of its top
    links; the score sums, per phrase, its best link inside the set (a phrase with none: -0.3);
    a column that no phrase prefers inside the set is redundant and the set is dropped (so
    "party names ... each party" is one key, not the name and the id)."""
    if not links:
        return [([], 0.0, [])]
    out: dict[tuple[Attribute, ...], tuple[list[Attribute], float, list[str]]] = {}
    for picks in itertools.product(*[ls[:3] for ls in links[:3]]):
        columns = list(dict.fromkeys(a for a, _, _ in picks))
        for subset in _nonempty_subsets(columns):
            key = tuple(sorted(subset))
            if key in out:
                continue
            score, why, preferred = 0.0, [], set()
            for ls in links[:3]:
                inside = [(a, s_, w) for a, s_, w in ls if a in subset]
                if inside:
                    a, s_, w = inside[0]
                    score += s_
                    why.append(w)
                    preferred.add(a)
                else:
                    score -= 0.3
            if preferred == set(subset):
                out[key] = (list(subset), score, why)
    return sorted(out.values(), key=lambda c: -c[1])[:8]


def _nonempty_subsets(columns: list[Attribute]) -> list[list[Attribute]]:
    return [list(c) for n in range(1, len(columns) + 1) for c in itertools.combinations(columns, n)]


def _body_queries(
    reading: AggregateReading,
    catalog: Catalog,
    values: ValueIndex | None,
    today: _dt.date | None,
    measure_tables: list[str],
) -> list[tuple[CountQuery, float, tuple[str, ...]]]:
    """Bodies from the count parser on each remaining question (rank-discounted), the measured
    table named as the counted entity ("How many <table> <rest>"), and single-table bodies of the
    linked tables (no filter) as a fallback."""
    texts = list(reading.bodies)
    if reading.kind is not AggregateKind.COUNT and texts:
        rest = re.sub(r"^How many\s+", "", texts[0])
        texts += [f"How many {' '.join(name_words(t))} {rest}" for t in dict.fromkeys(measure_tables[:2])]
    out: list[tuple[CountQuery, float, tuple[str, ...]]] = []
    for b, text in enumerate(dict.fromkeys(texts)):
        try:
            found = translate(text, catalog, values=values, k=3, today=today)
        except NotACountingQuestion:
            continue
        for rank, cand in enumerate(found):
            out.append((cand.query, -0.25 * rank - 0.05 * b, (f"body from the count parser on {text!r}",) + cand.explanation))
    fallback = list(measure_tables[:2])
    for g in reading.groups:
        fallback += [a.alias for a, _, _ in _column_links(catalog, g, numeric=False)[:1]]
    rescue = -1.0 if out else -0.6
    for table in dict.fromkeys(fallback):
        out.append((CountQuery((Relation(table, table),)), rescue, (f"body: table {table} alone",)))
    return out


def _combine(
    catalog: Catalog,
    body: CountQuery,
    kind: AggregateKind,
    groups: list[Attribute],
    measure: Attribute | None,
    bonus: dict[JoinEdge, float] | None = None,
) -> tuple[AggregateQuery, int] | None:
    """The AggregateQuery over ``body`` extended to the group and measure tables; and how many
    relations were added (None when no join path reaches them). ``bonus``: the question's
    :func:`~pimento.nl.count_assembly.edge_bonus` (a path through a key the question names wins)."""
    needed = [a.alias for a in groups] + ([measure.alias] if measure is not None else [])
    extended = body
    added = 0
    for table in dict.fromkeys(needed):
        if any(r.table == table for r in extended.relations):
            continue
        grown = _extend(catalog, extended, table, bonus)
        if grown is None:
            return None
        added += len(grown.relations) - len(extended.relations)
        extended = grown
    alias = {r.table: r.alias for r in extended.relations}
    group_by = tuple(Attribute(alias[g.alias], g.column) for g in groups)
    if extended.count.column is not None and extended.count.column in group_by and kind is AggregateKind.COUNT:
        return None  # COUNT(DISTINCT g) per g is 1 in every group: not what was asked
    try:
        if kind is AggregateKind.COUNT:
            return AggregateQuery(extended, group_by), added
        assert measure is not None
        return AggregateQuery(extended.with_count(Count()), group_by, kind, Attribute(alias[measure.alias], measure.column)), added
    except InternalError:
        return None


def _extend(catalog: Catalog, body: CountQuery, table: str, bonus: dict[JoinEdge, float] | None = None) -> CountQuery | None:
    """``body`` with ``table`` joined along the cheapest foreign-key path to one of its relations
    (cheapest as the count parser's: an edge whose key the question names costs less, so "each
    target user" joins through ``target_u_id``, not ``source_u_id``)."""
    best = None
    for r in body.relations:
        for tree in join_trees(catalog, table, (r.table,), edge_bonus=bonus, limit=1):
            if best is None or tree.cost < best.cost:
                best = tree
    if best is None:
        return None
    have = {r.table for r in body.relations}
    alias = {r.table: r.alias for r in body.relations}
    relations = list(body.relations)
    for t in sorted(best.tables - have):
        relations.append(Relation(t, t))
        alias[t] = t
    joins = list(body.joins)
    for e in best.edges:
        if e.child in have and e.parent in have:
            continue
        for c, p in zip(e.columns, e.ref_columns):
            joins.append(JoinCondition(Attribute(alias[e.child], c), Attribute(alias[e.parent], p)))
    try:
        return CountQuery(tuple(relations), tuple(joins), body.selections, body.count)
    except InternalError:
        return None
