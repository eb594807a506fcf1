"""Assembling and ranking CountQuery candidates: join trees, count forms, scores, diversity.

For each counted entity and each choice of value options, the join trees over the foreign-key
graph (edges whose column names the question uses are preferred), the count form (``COUNT(*)``,
``COUNT(DISTINCT key)``, a count through a foreign key, a semijoin), and the score that ranks them.
"""

from __future__ import annotations

import itertools
from functools import lru_cache
from typing import Any

from pimento.errors import InternalError
from pimento.nl.count_target import _Target
from pimento.nl.joins import JoinEdge, JoinTree, join_edges, join_trees
from pimento.nl.predicates import _Mention, _Option
from pimento.nl.schema_linking import _GENERIC, _Context, _match, _strength
from pimento.nl.text import Token, name_words
from pimento.schema import Catalog
from pimento.sql.ir import Attribute, Count, CountQuery, JoinCondition, Relation, Selection


#: A literal placed on a column of the counted table itself (no join needed) gains this much.
_OWN_TABLE_BONUS = 0.1


def _edge_bonus(ctx: _Context) -> dict[JoinEdge, float]:
    return edge_bonus(ctx.catalog, ctx.tokens)


def edge_bonus(catalog: Catalog, tokens: list[Token]) -> dict[JoinEdge, float]:
    """Per foreign-key edge, how well the question's words name its columns beyond the referenced
    table's name ("departing" for ``source_airport``, "target" for ``target_u_id``): a cost cut
    for :func:`~pimento.nl.joins.join_trees` (also used by the grouped readings' join paths)."""
    bonus: dict[JoinEdge, float] = {}
    words = [t for t in tokens if t.kind == "word"]
    for edge in join_edges(catalog):
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
