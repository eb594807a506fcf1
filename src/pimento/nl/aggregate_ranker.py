"""A learned order of the offline parser's grouped and summed readings (issue 25, learned as issue 27 asks).

:func:`candidate_features` describes each rule-ordered reading of
:func:`~pimento.nl.aggregate_readings.translate_aggregate` by features that transfer across
schemas: the aggregate asked against the question's cue words; how well the question's words name
each group column, its table and the measure column; whether a group column is a key or a label
(Spider's id-or-name choice); the body's joins and whether each joined table is named; the rule
score and rank; and, where the caller hands in the reading's answer on the synthetic copy, that
answer's shape (groups, empty, NULL group, all counts 1). :func:`rerank` orders the readings by a
small model trained offline (``scripts/train_aggregate_ranker.py``) and shipped as JSON beside
this module (``aggregate_ranker.json``, with its provenance), scored in pure Python by
:func:`pimento.nl.count_ranker.score`.

Privacy: every feature comes from the question, the public catalog, the reading itself (whose
literals came from the question or the synthetic copy's value index) and, optionally, the reading's
answer on the synthetic copy. Nothing reads the private database.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any, Protocol, TypeVar

from pimento.nl.aggregate_question import read_question
from pimento.nl.count_ranker import _candidate_words, _el_match, _predicates, question_links, score
from pimento.nl.schema_linking import _column_phrases, _is_key_column
from pimento.schema import Catalog
from pimento.sql.ir import AggregateKind, AggregateQuery, Attribute

__all__ = [
    "COPY_FEATURES",
    "DEFAULT_ON",
    "FEATURES",
    "POOL",
    "Answer",
    "candidate_features",
    "copy_features",
    "load_model",
    "rerank",
    "score",
]

#: whether :func:`~pimento.nl.aggregate_readings.translate_aggregate` applies the learned order
#: when not told (``learned=``); docs/parse.md says why it is what it is
DEFAULT_ON = True

#: how many rule-ordered readings the learned ranker reorders
POOL = 20

#: the artefact beside this module
MODEL_FILE = "aggregate_ranker.json"

#: features from the question, the catalog and the reading (always computed)
QUESTION_FEATURES = (
    "rule_score",
    "rule_gap",
    "rule_rank",
    "rule_top",
    "kind_count",
    "kind_sum",
    "kind_avg",
    "q_avg_cue",
    "q_sum_cue",
    "q_total_number",
    "q_how_many",
    "kind_agrees",
    "n_groups",
    "group_col_match_min",
    "group_col_match_mean",
    "group_table_match_min",
    "group_is_key",
    "group_is_label",
    "group_is_text",
    "group_via_table",
    "group_via_reference",
    "group_key_cue",
    "group_key_x_key",
    "measure_match",
    "measure_table_match",
    "n_relations",
    "n_joins",
    "n_preds",
    "count_distinct",
    "body_fallback",
    "unnamed_tables",
    "table_match_min",
    "best_absent_table",
    "coverage",
    "pred_literal_in_question",
    "pred_literal_schema_word",
    "groups_minus_phrases",
    "group_key_of_own_rows",
)
#: features from the reading's answer on the synthetic copy (neutral when none is handed in)
COPY_FEATURES = (
    "copy_known",
    "copy_log_rows",
    "copy_empty",
    "copy_single_row",
    "copy_null_group",
    "copy_agg_all_one",
    "copy_agg_null",
    "copy_error",
)
#: every feature name, in the order of :func:`candidate_features`' vectors; a model names the ones it uses
FEATURES = QUESTION_FEATURES + COPY_FEATURES

_AVG = re.compile(r"\b(?:average|mean|avg)\b", re.IGNORECASE)
_SUM = re.compile(r"\b(?:total|sum|in\s+total|how\s+much|altogether)\b", re.IGNORECASE)
_TOTAL_NUMBER = re.compile(r"\btotal\s+(?:number|count)\s+of\b", re.IGNORECASE)
_HOW_MANY = re.compile(r"\bhow\s+many\b|\bnumber\s+of\b|\bcount\b", re.IGNORECASE)
_KEY_CUE = re.compile(r"\b(?:ids?|codes?|numbers?)\b", re.IGNORECASE)
_LABEL = re.compile(r"(?:^|_)(?:name|title)$|^(?:name|title)", re.IGNORECASE)

#: a reading's answer on the synthetic copy: its rows, or the exception running it raised
Answer = Sequence[tuple[Any, ...]] | Exception


class Ranked(Protocol):
    """What the ranker reads of a reading (an :class:`~pimento.nl.aggregate_readings.AggregateCandidate`)."""

    @property
    def query(self) -> AggregateQuery: ...

    @property
    def score(self) -> float: ...

    @property
    def explanation(self) -> tuple[str, ...]: ...


R = TypeVar("R", bound=Ranked)


def rerank(
    question: str,
    catalog: Catalog,
    candidates: Sequence[R],
    *,
    model: dict[str, Any] | None = None,
    answers: Callable[[AggregateQuery], Answer] | None = None,
) -> list[R]:
    """``candidates`` (rule order, best first; :class:`Ranked`) ordered by the learned model, best first.

    Ties keep the rule order. ``model``: a loaded artefact (default: the shipped one).
    ``answers``: each reading's answer on the synthetic copy, for a model that uses
    :data:`COPY_FEATURES` (without it they read as unknown).
    """
    if len(candidates) < 2:
        return list(candidates)
    model = model if model is not None else load_model()
    copies = [answers(c.query) for c in candidates] if answers is not None and _uses_copy(model) else None
    rows = candidate_features(question, catalog, candidates, copies)
    picks = [FEATURES.index(f) for f in model["features"]]
    scores = [score(model, [row[i] for i in picks]) for row in rows]
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
    return [candidates[i] for i in order]


def _uses_copy(model: dict[str, Any]) -> bool:
    return any(f in COPY_FEATURES for f in model["features"])


@lru_cache(maxsize=1)
def load_model() -> dict[str, Any]:
    """The shipped artefact (``aggregate_ranker.json``), checked against :data:`FEATURES`."""
    text = resources.files("pimento.nl").joinpath(MODEL_FILE).read_text(encoding="utf-8")
    model: dict[str, Any] = json.loads(text)
    unknown = [f for f in model["features"] if f not in FEATURES]
    if unknown:
        raise ValueError(f"{MODEL_FILE} uses unknown features {unknown}; retrain with scripts/train_aggregate_ranker.py")
    return model


def copy_features(rows: Answer | None, query: AggregateQuery) -> list[float]:
    """:data:`COPY_FEATURES` of one reading's answer on the copy (all 0 when unknown)."""
    if rows is None:
        return [0.0] * len(COPY_FEATURES)
    if isinstance(rows, Exception):
        return [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    n_groups = len(query.group_by)
    aggs = [r[n_groups] if len(r) > n_groups else None for r in rows]
    return [
        1.0,
        math.log1p(len(rows)),
        1.0 if not rows else 0.0,
        1.0 if len(rows) == 1 else 0.0,
        1.0 if n_groups and any(v is None for r in rows for v in r[:n_groups]) else 0.0,
        1.0 if rows and query.kind is AggregateKind.COUNT and all(a == 1 for a in aggs) else 0.0,
        1.0 if rows and all(a is None for a in aggs) else 0.0,
        0.0,
    ]


def candidate_features(
    question: str, catalog: Catalog, candidates: Sequence[Ranked], copies: Sequence[Answer] | None = None
) -> list[list[float]]:
    """One feature vector (:data:`FEATURES`) per rule-ordered reading; ``copies``: their answers on the copy."""
    links = question_links(question, catalog)
    content, table_el, column_el, table_match = links.content, links.table_el, links.column_el, links.table_match
    cues = _question_cues(question)
    readings = read_question(question, _column_phrases(catalog))
    phrases = len(readings[0].groups) if readings else 0
    schema_words = {w for e in links.elements for w in e.words} | {e.compact for e in links.elements}
    top = candidates[0].score if candidates else 0.0
    lowered = question.lower()
    rows = []
    for rank, cand in enumerate(candidates):
        q: AggregateQuery = cand.query
        alias_table = {r.alias.lower(): r.table.lower() for r in q.body.relations}
        rel_tables = list(alias_table.values())
        groups = [(alias_table.get(g.alias.lower(), g.alias.lower()), g.column.lower(), g) for g in q.group_by]
        g_col = [_el_match(column_el.get((t, c)), content) for t, c, _ in groups]
        g_tab = [table_match.get(t, 0.0) for t, _, _ in groups]
        g_key = [_is_key_column(catalog, _table_name(catalog, t), g.column) for t, _, g in groups]
        g_label = [bool(_LABEL.search(g.column)) and _column_type(catalog, t, g.column) == "text" for t, _, g in groups]
        g_text = [_column_type(catalog, t, g.column) == "text" for t, _, g in groups]
        measure = _attr_table(q.column, alias_table)
        preds = [p for s in q.body.selections for p in _predicates(s.predicate)]
        pred_cols = [(alias_table.get(a, a), c) for a, c, _, _ in preds]
        literals = [lit for _, _, _, lit in preds if isinstance(lit, str)]
        used_cols = {(t, c) for t, c, _ in groups} | set(pred_cols) | ({measure} if measure else set())
        body_col = _attr_table(q.body.count.column, alias_table)
        if body_col:
            used_cols.add(body_col)
        named_via_col = {t for t, c in used_cols if _el_match(column_el.get((t, c)), content) >= 0.5}
        unnamed = [t for t in rel_tables if table_match.get(t, 0.0) < 0.5 and t not in named_via_col]
        words = _candidate_words(set(rel_tables), used_cols, table_el, column_el)
        covered = sum(1 for t in content if t.lemma in words or any(t.lower in lit.lower() for lit in literals))
        note = " | ".join(cand.explanation)
        kind = q.kind
        agrees = (
            (kind is AggregateKind.AVG and cues["avg"])
            or (kind is AggregateKind.SUM and cues["sum"] and not cues["total_number"] and not cues["avg"])
            or (kind is AggregateKind.COUNT and not cues["avg"] and (not cues["sum"] or cues["total_number"]))
        )
        key_cue = 1.0 if _KEY_CUE.search(question) else 0.0
        row = [
            float(cand.score),
            float(cand.score - top),
            float(min(rank, POOL)),
            1.0 if rank == 0 else 0.0,
            1.0 if kind is AggregateKind.COUNT else 0.0,
            1.0 if kind is AggregateKind.SUM else 0.0,
            1.0 if kind is AggregateKind.AVG else 0.0,
            float(cues["avg"]),
            float(cues["sum"]),
            float(cues["total_number"]),
            float(cues["how_many"]),
            1.0 if agrees else 0.0,
            float(len(groups)),
            min(g_col, default=1.0),
            sum(g_col) / len(g_col) if g_col else 1.0,
            min(g_tab, default=1.0),
            sum(g_key) / len(g_key) if g_key else 0.0,
            sum(g_label) / len(g_label) if g_label else 0.0,
            sum(g_text) / len(g_text) if g_text else 0.0,
            1.0 if "names table" in note else 0.0,
            1.0 if "a reference to" in note else 0.0,
            key_cue,
            key_cue * (sum(g_key) / len(g_key) if g_key else 0.0),
            _el_match(column_el.get(measure), content) if measure else 0.0,
            table_match.get(measure[0], 0.0) if measure else 0.0,
            float(len(rel_tables)),
            float(len(q.body.joins)),
            float(len(preds)),
            1.0 if q.body.count.distinct else 0.0,
            1.0 if "body: table" in note else 0.0,
            float(len(unnamed)),
            min((table_match.get(t, 0.0) for t in rel_tables), default=0.0),
            max((m for t, m in table_match.items() if t not in rel_tables), default=0.0),
            covered / len(content) if content else 1.0,
            sum(lit.lower() in lowered for lit in literals) / len(literals) if literals else 1.0,
            sum(lit.lower() in schema_words for lit in literals) / len(literals) if literals else 0.0,
            float(len(groups) - phrases),
            1.0 if any(_own_rows(catalog, q, t, g.column, measure) for t, _, g in groups) else 0.0,
        ]
        row += copy_features(copies[rank] if copies is not None else None, q)
        rows.append(row)
    return rows


def _own_rows(catalog: Catalog, q: AggregateQuery, table: str, column: str, measure: tuple[str, str] | None) -> bool:
    """The group column is the one-column key of the rows aggregated (each group one row): the
    measured table's key, or, for a count over one relation, that relation's key."""
    keyed = next((t for t in catalog.tables if t.name.lower() == table), None)
    if keyed is None or [c.lower() for c in keyed.primary_key] != [column.lower()]:
        return False
    if measure is not None:
        return measure[0] == table
    return len(q.body.relations) == 1 and q.body.count.column is None


def _question_cues(question: str) -> dict[str, bool]:
    return {
        "avg": bool(_AVG.search(question)),
        "sum": bool(_SUM.search(question)),
        "total_number": bool(_TOTAL_NUMBER.search(question)),
        "how_many": bool(_HOW_MANY.search(question)),
    }


def _attr_table(attr: Attribute | None, alias_table: dict[str, str]) -> tuple[str, str] | None:
    if attr is None:
        return None
    return alias_table.get(attr.alias.lower(), attr.alias.lower()), attr.column.lower()


def _table_name(catalog: Catalog, lower: str) -> str:
    return next((t.name for t in catalog.tables if t.name.lower() == lower), lower)


def _column_type(catalog: Catalog, table: str, column: str) -> str | None:
    for t in catalog.tables:
        if t.name.lower() == table:
            for c in t.columns:
                if c.name.lower() == column.lower():
                    return c.type
    return None
