"""Offline question -> ranked CountQuery candidates (no LLM).

Pipeline (each step a small function over plain data):

1. :func:`~pimento.nl.count_intent.detect_intent`: is it a count, where does the counted phrase start,
   was "different/distinct" asked;
2. mentions: quoted strings, numbers, word n-grams linked to stored values
   (:class:`~pimento.nl.values.ValueIndex`), literals no stored value claims
   (:mod:`~pimento.nl.open_values`), yes/no columns named by an adjective ("official");
   each mention gets ranked options ``(column, operator, value)`` (:mod:`~pimento.nl.mentions`,
   :mod:`~pimento.nl.literal_options`, over the schema lexicon of :mod:`~pimento.nl.schema_linking`);
3. the counted entity: a table (``COUNT(*)``, or ``COUNT(DISTINCT key)`` when a join repeats its
   rows) or a column (``COUNT(DISTINCT column)``), from the words right after the cue
   (:mod:`~pimento.nl.count_target`);
4. join trees over the foreign-key graph connecting the counted table and the tables of the chosen
   predicates (:func:`~pimento.nl.joins.join_trees`), preferring edges whose column names the
   question uses ("departing" -> ``source_airport``);
5. scoring and ranking; structurally different alternatives (other columns for a value, other
   join paths, other counted entities) are kept, duplicates removed (:mod:`~pimento.nl.count_assembly`).

The score is a sum of evidence weights (documented in ``docs/offline-parser.md``), not a
probability; only its order matters.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any

from pimento.errors import InternalError
from pimento.nl import count_ranker
from pimento.nl.count_assembly import _candidates, _diverse, _edge_bonus
from pimento.nl.count_intent import detect_intent
from pimento.nl.count_target import _noun_phrase, _targets
from pimento.nl.mentions import _value_mentions
from pimento.nl.schema_linking import _column_phrases, _Context, _lexicon, _unquote_names
from pimento.nl.text import tokenize
from pimento.nl.values import ValueIndex
from pimento.schema import Catalog
from pimento.sql.ir import CountQuery

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


def translate(
    question: str, catalog: Catalog, *, values: ValueIndex | None = None, k: int = 5, today: _dt.date | None = None,
    learned: bool | None = None,
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
        learned: order the candidates by the learned ranker (:mod:`pimento.nl.count_ranker`);
            ``None``: its ``DEFAULT_ON``; ``False``: the hand-written rule order.

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
    if count_ranker.DEFAULT_ON if learned is None else learned:  # the learned order (docs/parser-ranker.md)
        chosen = count_ranker.rerank(question, catalog, _diverse(ranked, max(k, count_ranker.POOL)))[:k]
    else:
        chosen = _diverse(ranked, k)
    # rendering SQL is the slow part: rank on the IR, render only what is returned
    return [Candidate(query, query.to_sql("duckdb"), score, why) for query, (score, why) in chosen]
