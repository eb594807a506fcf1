"""A learned re-ranking of the offline counting parser's candidates (issue 27).

:func:`candidate_features` describes each candidate by features that transfer across schemas
(how well the question's words name the counted table, the joined tables and each predicate's
column; whether a predicate's literal is written in the question; the count form and the
candidate's shape; question cue words; the hand-written rule score and rank). :func:`rerank`
orders candidates by a small model trained offline (``scripts/train_count_ranker.py``) and
shipped as JSON beside this module (``count_ranker.json``, with its provenance).

Privacy: every feature comes from the question, the public catalog and the candidate itself
(whose literals came from the question or the synthetic copy's value index); nothing reads a
database. The scorer is pure Python, so the package needs no learning library at run time.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, TypeVar

import sqlglot
from sqlglot import exp

from pimento.nl.schema_linking import _Element, _lexicon, _match
from pimento.nl.text import Token, tokenize
from pimento.schema import Catalog
from pimento.sql.ir import CountQuery

__all__ = ["DEFAULT_ON", "FEATURES", "POOL", "candidate_features", "load_model", "rerank", "score"]

#: whether :func:`pimento.nl.translate` applies the learned order when not told (``learned=``);
#: off while the model does not beat the rules on held-out databases (docs/parser-ranker.md)
DEFAULT_ON = False

#: how many rule-ranked candidates the learned ranker reorders (the parser produces them, the
#: ranker picks the order; docs/parser-ranker.md has the oracle recall at this depth)
POOL = 20

#: the artefact beside this module
MODEL_FILE = "count_ranker.json"

#: feature names, in the order of :func:`candidate_features`' vectors (the artefact names them too)
FEATURES = (
    "rule_score",
    "rule_gap",
    "rule_rank",
    "rule_top",
    "n_relations",
    "n_joins",
    "n_preds",
    "n_ignored",
    "count_star",
    "count_distinct_key",
    "count_distinct_column",
    "count_through_fk",
    "count_semijoin",
    "count_over_join",
    "named_tables_joined",
    "target_match",
    "target_column_match",
    "table_match_min",
    "unnamed_tables",
    "pred_column_match_mean",
    "pred_column_match_min",
    "pred_literal_in_question",
    "pred_literal_exact_case",
    "n_eq",
    "n_like",
    "n_compare",
    "n_in_or",
    "pred_on_target",
    "q_distinct_cue",
    "distinct_cue_x_distinct",
    "q_numbers",
    "numeric_preds",
    "q_content_words",
    "coverage",
    "best_absent_table",
)

_DISTINCT_CUE = re.compile(r"\b(different|distinct|unique)\b", re.IGNORECASE)
_TARGET_NOTE = re.compile(r"counting (?:rows of (?P<table>[^ ]+)|distinct (?P<alias>[^ .]+)\.(?P<column>[^ ]+))")

#: one rule-ranked candidate as :func:`pimento.nl.translate` holds it: ``(query, (score, explanation))``
Ranked = tuple[CountQuery, tuple[float, tuple[str, ...]]]
R = TypeVar("R", bound=Ranked)


def rerank(question: str, catalog: Catalog, candidates: Sequence[R], *, model: dict[str, Any] | None = None) -> list[R]:
    """``candidates`` (the rule order, best first) ordered by the learned model, best first.

    Ties keep the rule order. ``model``: a loaded artefact (default: the shipped one).
    """
    if len(candidates) < 2:
        return list(candidates)
    model = model if model is not None else load_model()
    rows = candidate_features(question, catalog, candidates)
    scores = [score(model, row) for row in rows]
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
    return [candidates[i] for i in order]


@lru_cache(maxsize=1)
def load_model() -> dict[str, Any]:
    """The shipped artefact (``count_ranker.json``), checked against :data:`FEATURES`."""
    text = resources.files("pimento.nl").joinpath(MODEL_FILE).read_text(encoding="utf-8")
    model: dict[str, Any] = json.loads(text)
    if tuple(model["features"]) != FEATURES:
        raise ValueError(f"{MODEL_FILE} was trained on other features; retrain with scripts/train_count_ranker.py")
    return model


def score(model: dict[str, Any], row: Sequence[float]) -> float:
    """The model's score of one feature vector (higher is better): logistic or boosted trees."""
    if model["kind"] == "logistic":
        z = float(model["intercept"])
        for x, mu, sd, w in zip(row, model["mean"], model["scale"], model["coef"]):
            z += w * (x - mu) / sd
        return z
    if model["kind"] == "trees":
        total = float(model["init"])
        for tree in model["trees"]:
            node = 0
            while tree["left"][node] >= 0:
                node = tree["left"][node] if row[tree["feature"][node]] <= tree["threshold"][node] else tree["right"][node]
            total += model["learning_rate"] * tree["value"][node]
        return total
    raise ValueError(f"unknown ranker kind {model['kind']!r}")


@dataclass(frozen=True)
class QuestionLinks:
    """A question's words and the schema's elements by name, with each table's match to the words (both rankers')."""

    tokens: list[Token]
    content: list[Token]
    table_el: dict[str, _Element]
    column_el: dict[tuple[str, str], _Element]
    table_match: dict[str, float]
    elements: list[_Element]  # the schema's tables, then its columns


def question_links(question: str, catalog: Catalog) -> QuestionLinks:
    """:class:`QuestionLinks` of ``question`` on ``catalog``."""
    tokens = [t for t in tokenize(question) if t.kind == "word"]
    content = [t for t in tokens if not t.is_stop]
    tables, columns = _lexicon(catalog)
    table_el = {e.table.lower(): e for e in tables}
    column_el = {(e.table.lower(), (e.column or "").lower()): e for e in columns}
    return QuestionLinks(tokens, content, table_el, column_el, {name: _match(e, content)[0] for name, e in table_el.items()},
                         [*tables, *columns])


def candidate_features(question: str, catalog: Catalog, candidates: Sequence[Ranked]) -> list[list[float]]:
    """One feature vector (:data:`FEATURES`) per rule-ranked candidate ``(query, (score, explanation))``."""
    links = question_links(question, catalog)
    tokens, content, table_el, column_el, table_match = links.tokens, links.content, links.table_el, links.column_el, links.table_match
    top = candidates[0][1][0] if candidates else 0.0
    distinct_cue = 1.0 if _DISTINCT_CUE.search(question) else 0.0
    numbers = float(sum(1 for t in tokenize(question) if t.kind == "number"))
    lowered = question.lower()
    rows = []
    for rank, (q, (rule_score, why)) in enumerate(candidates):
        rel_tables = [r.table.lower() for r in q.relations]
        alias_table = {r.alias.lower(): r.table.lower() for r in q.relations}
        target, target_col = _target(why, q, alias_table)
        preds = [p for s in q.selections for p in _predicates(s.predicate)]
        pred_cols = [(alias_table.get(a, a), c) for a, c, _, _ in preds]
        col_matches = [_el_match(column_el.get(pc), content) for pc in pred_cols]
        literals = [lit for _, _, _, lit in preds if isinstance(lit, str)]
        in_q = [lit.lower() in lowered for lit in literals]
        exact = [lit in question for lit in literals]
        ops = [op for _, _, op, _ in preds]
        others = [t for t in rel_tables if t != target]
        named = set(rel_tables) | {pc[0] for pc in pred_cols}
        words = _candidate_words(named, pred_cols, table_el, column_el)
        covered = sum(1 for t in content if t.lemma in words or any(t.lower in lit.lower() for lit in literals))
        pk = _single_key(catalog, q.count.column.alias if q.count.column else "", alias_table)
        is_distinct = q.count.distinct
        distinct_key = is_distinct and pk is not None and q.count.column is not None and q.count.column.column.lower() == pk
        note = " | ".join(why)
        rows.append([
            float(rule_score),
            float(rule_score - top),
            float(min(rank, POOL)),
            1.0 if rank == 0 else 0.0,
            float(len(q.relations)),
            float(len(q.joins)),
            float(len(preds)),
            float(sum(1 for w in why if w.startswith("ignored "))),
            1.0 if q.count.column is None else 0.0,
            1.0 if distinct_key else 0.0,
            1.0 if is_distinct and not distinct_key else 0.0,
            1.0 if "through" in note and "foreign key to its key" in note else 0.0,
            1.0 if "that occur in" in note else 0.0,
            1.0 if "COUNT(*) over the join" in note else 0.0,
            1.0 if "joined named table" in note else 0.0,
            table_match.get(target, 0.0),
            _el_match(column_el.get((target, target_col)), content) if target_col else 0.0,
            min((table_match.get(t, 0.0) for t in others), default=1.0),
            float(sum(1 for t in others if table_match.get(t, 0.0) < 0.5 and t not in {pc[0] for pc in pred_cols})),
            sum(col_matches) / len(col_matches) if col_matches else 1.0,
            min(col_matches, default=1.0),
            sum(in_q) / len(in_q) if in_q else 1.0,
            sum(exact) / len(exact) if exact else 1.0,
            float(sum(1 for o in ops if o == "eq")),
            float(sum(1 for o in ops if o == "like")),
            float(sum(1 for o in ops if o == "compare")),
            float(sum(1 for o in ops if o == "in_or")),
            sum(1 for pc in pred_cols if pc[0] == target) / len(pred_cols) if pred_cols else 1.0,
            distinct_cue,
            distinct_cue * (1.0 if is_distinct else 0.0),
            numbers,
            float(sum(1 for _, _, _, lit in preds if isinstance(lit, (int, float)))),
            float(len(content)),
            covered / len(content) if content else 1.0,
            max((m for t, m in table_match.items() if t not in named), default=0.0),
        ])
    return rows


def _target(why: tuple[str, ...], q: CountQuery, alias_table: dict[str, str]) -> tuple[str, str | None]:
    """The counted table (lower case) and, for ``COUNT(DISTINCT column)`` of a column, that column."""
    for w in why:
        m = _TARGET_NOTE.search(w)
        if m:
            if m.group("table"):
                return m.group("table").lower(), None
            return alias_table.get(m.group("alias").lower(), m.group("alias").lower()), m.group("column").lower()
    if q.count.column is not None:
        return alias_table.get(q.count.column.alias.lower(), ""), q.count.column.column.lower()
    return q.relations[0].table.lower(), None


def _single_key(catalog: Catalog, alias: str, alias_table: dict[str, str]) -> str | None:
    table = alias_table.get(alias.lower())
    for t in catalog.tables:
        if t.name.lower() == table and len(t.primary_key) == 1:
            return t.primary_key[0].lower()
    return None


def _el_match(element: _Element | None, tokens: list[Token]) -> float:
    return _match(element, tokens)[0] if element is not None else 0.0


def _candidate_words(
    tables: set[str], columns: Iterable[tuple[str, str]], table_el: dict[str, _Element], column_el: dict[tuple[str, str], _Element],
) -> set[str]:
    """The name words of the candidate's tables and of the columns it uses (the grouped ranker's too)."""
    words: set[str] = set()
    for t in tables:
        if t in table_el:
            words.update(table_el[t].words)
    for col in columns:
        if col in column_el:
            words.update(column_el[col].words)
    return words


@lru_cache(maxsize=4096)
def _predicates(sql: str) -> tuple[tuple[str, str, str, Any], ...]:
    """The leaf predicates of one selection: (alias, column, kind, literal) with kind eq/like/compare/in_or."""
    try:
        tree = sqlglot.parse_one(sql)
    except sqlglot.errors.ParseError:
        return ()
    out = []
    for node in tree.walk():
        kind = _kind(node)
        if kind is None:
            continue
        col = node.find(exp.Column)
        lit = node.find(exp.Literal)
        value: Any = None
        if lit is not None:
            value = lit.this if lit.is_string else _number(lit.this)
        out.append(((col.table if col else "").lower(), (col.name if col else "").lower(), kind, value))
    return tuple(out)


def _kind(node: exp.Expr) -> str | None:
    if isinstance(node, exp.EQ):
        return "eq"
    if isinstance(node, (exp.Like, exp.ILike)):
        return "like"
    if isinstance(node, (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NEQ, exp.Between)):
        return "compare"
    if isinstance(node, (exp.In, exp.Or)):
        return "in_or"
    return None


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
