"""A grouped or summed question's reading, found on the synthetic copy only: the formulation of the answer's lowest predicted error.

A grouped COUNT, a SUM or an AVG question is read here, spending nothing and never opening the
private database. Its formulations (:func:`proposals`), best first: the analyst's ``--seed-sql``
that is grouped or summed, then with ``--llm`` (for a question with an aggregate cue) the LLM's
samples of the aggregate prompt (``zero_shot_messages(aggregate=True)``), most frequent first, then
the offline parser's readings (:func:`pimento.nl.translate_aggregate`). A question none of these
makes grouped (a plain count) keeps the count search. Then:

1. **refused first**, from public inputs: a mode that cannot bound a grouped answer (split,
   contextual: :func:`pimento.release.aggregate.refuse_in_mode`) and the person unit
   (``[privacy] unit``);
2. **each proposal planned** as its release would plan it (:func:`pimento.release.aggregate.plan`:
   the groups, the bounds, the mechanism of each part), against a side whose engine is the synthetic
   copy: the public relations whose values make the groups are read there (the copy holds them
   verbatim), the private data never. A proposal its release would refuse (a SUM without declared
   bounds, too many groups) is dropped with its reason; if every one is, the first reason is the error;
3. **clustered by their answer on the copy** (the rows of the plan's SQL on the copy, key by key),
   as the count search clusters answers; each proposal ranked r weighs 2^-r, and the cluster of
   most weight is the answer (the question's meaning);
4. **among that cluster's formulations, the one of lowest predicted error of the whole answer**
   (:mod:`pimento.release.aggregate_accuracy`: the median 95% half-width over the groups at the
   copy's sensitivity, relative to the median group value on the copy, an AVG's to half its declared range); ties go
   to the parser's rank;
5. **the chosen formulation priced at the planner's epsilons**
   (:func:`pimento.release.aggregate_accuracy.planner`), so that the preview names the epsilon
   predicted to give about +-10%.

:func:`read_grouped` returns a :class:`GroupedReading` and the count-shaped
:class:`~pimento.release.ask.SearchOutcome` the :class:`~pimento.release.interpretation.Interpretation`
carries (each formulation with its copy total, the copy's sensitivity, its cluster and rank), so
that the confidence flag, the alternatives and ``expect_sql`` work as for a count.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

from pimento.errors import EngineError, SearchError, UnsupportedQuery, UserError
from pimento.llm.usage import Usage
from pimento.mechanisms.budget import Budget, format_number
from pimento.nl import translate_aggregate
from pimento.nl.aggregate_question import read_question
from pimento.nl.values import ValueIndex
from pimento.numbers import json_number
from pimento.release.aggregate import AggregatePlan, plan, refuse_in_mode
from pimento.release.aggregate_accuracy import GroupedEstimate, planner, predict
from pimento.release.aggregate_domains import key_of
from pimento.release.ask import LLM_UNUSABLE, SearchOutcome
from pimento.search.mcts import Alternative, SearchResult
from pimento.sql.ir import AggregateKind
from pimento.sql.parse import parse_aggregate_query
from pimento.sql.reading import reading

if TYPE_CHECKING:
    from pimento.config import Settings
    from pimento.engines.base import Engine
    from pimento.mechanisms import Ledger
    from pimento.release.admission import Admitted
    from pimento.release.modes.base import Private
    from pimento.release.request import SearchOptions
    from pimento.schema import Catalog
    from pimento.sql.ir import AggregateQuery

__all__ = ["ERROR_BASIS", "GroupedCandidate", "GroupedReading", "Proposals", "asks_aggregate", "proposals", "read_grouped"]

#: What a grouped formulation's predicted error is (the search's ``predicted_error_basis``).
ERROR_BASIS = ("grouped: the median over the groups of the noise's 95% half-width at the synthetic copy's sensitivity, "
               "relative to the median group value on the copy, an average's to half its declared bounds' range "
               "(pimento.release.aggregate_accuracy)")


def asks_aggregate(question: str, catalog: Catalog, synthetic: Engine, k: int) -> list[Any]:
    """The parser's grouped/summed readings of ``question`` (empty for a plain count), linked with the copy's values.

    The copy's value index (a few tenths of a second) is built only for a question with an aggregate cue: without
    column phrases :func:`~pimento.nl.aggregate_question.read_question` finds every cue the parser could (those
    phrases only suppress cues), so an empty list there is an empty list of readings.
    """
    if not question or not read_question(question):
        return []
    return translate_aggregate(question, catalog, values=ValueIndex.from_engine(synthetic, catalog), k=k)


@dataclass(frozen=True)
class Proposals:
    """The grouped/summed formulations of a question, best first (:func:`proposals`), why a seed or sample was not used,
    and what the LLM cost."""

    sql: tuple[str, ...]
    notes: tuple[str, ...] = ()
    llm_calls: int = 0
    llm_tokens: int = 0


def proposals(question: str, catalog: Catalog, synthetic: Engine, search: SearchOptions) -> Proposals:
    """The formulations to weigh (module docstring), from the analyst's ``search.seed_sql``, the LLM at ``search.llm``
    and the parser, on the copy only; empty ``sql`` for a plain count (the count search reads it, seeds and LLM included)."""
    notes: list[str] = []
    seeds = _seeded(search.seed_sql, catalog, notes)
    cued = bool(question) and bool(read_question(question))
    usage = Usage()
    sampled = _sampled(question, catalog, synthetic, search, usage, notes) if search.llm and cued else []
    parsed = [c.sql for c in asks_aggregate(question, catalog, synthetic, search.k)] if cued else []
    found = tuple(dict.fromkeys([*seeds, *sampled, *parsed]))
    return Proposals(found, tuple(notes) if found else (), usage.calls, usage.total_tokens)


def _grouped_or_summed(query: AggregateQuery) -> bool:
    return bool(query.group_by) or query.kind is not AggregateKind.COUNT


def _seeded(seed_sql: tuple[str, ...], catalog: Catalog, notes: list[str]) -> list[str]:
    """The analyst's seed SQL that is a grouped COUNT, a SUM or an AVG (a plain count or a refused one: noted)."""
    out = []
    for sql in seed_sql:
        try:
            query = parse_aggregate_query(sql, catalog)
        except UserError as exc:
            notes.append(f"--seed-sql {sql!r}: {exc.one_line()}")
            continue
        if _grouped_or_summed(query):
            out.append(query.to_sql())
        else:
            notes.append(f"--seed-sql {sql!r}: a plain count, not weighed among the grouped readings")
    return out


def _sampled(question: str, catalog: Catalog, synthetic: Engine, search: SearchOptions, usage: Usage, notes: list[str]) -> list[str]:
    """The LLM's grouped/summed samples (the aggregate prompt, ``search.k`` of them), most frequent first; an endpoint that
    fails is noted and the parser's readings are used."""
    from pimento.llm import SyntheticValues, generate_zero_shot, open_backend

    assert search.llm is not None
    try:
        backend = open_backend(url=search.llm)
        values = SyntheticValues.from_engine(synthetic, catalog)
        found = generate_zero_shot(backend, catalog, question, k=search.k, values=values, usage=usage, dialect=synthetic.dialect,
                                   aggregate=True)
    except UserError as exc:
        notes.append(f"{LLM_UNUSABLE}, offline parser used for the grouped readings: {exc.one_line()}")
        return []
    notes.extend(f"{n} LLM sample(s) dropped: {reason}" for reason, n in found.dropped.items())
    votes = Counter(c.query for c in found.candidates if _grouped_or_summed(c.query))
    ranked = sorted(votes, key=lambda q: -votes[q])  # stable: ties keep the order of first appearance
    return [q.to_sql() for q in ranked]


@dataclass(frozen=True)
class _CopyDatabase:
    """The synthetic copy in the place of the database for :func:`plan` (public relations, settings, schema)."""

    engine: Engine
    catalog: Catalog
    settings: Settings


@dataclass(frozen=True)
class _CopySide:
    database: _CopyDatabase
    ledger: Ledger
    location: str


@dataclass(frozen=True)
class GroupedCandidate:
    """One proposed formulation: its SQL, the parser's rank (1 = best), its cluster on the copy and its predicted error."""

    sql: str
    rank: int
    cluster: int
    cluster_size: int
    relative_error: Fraction
    half_width: Fraction
    copy_total: int

    def to_dict(self) -> dict[str, Any]:
        return {"sql": self.sql, "rank": self.rank, "cluster": self.cluster, "cluster_size": self.cluster_size,
                "predicted_relative_error": json_number(self.relative_error), "median_half_width_95": json_number(self.half_width)}


@dataclass(frozen=True)
class GroupedReading:
    """What a grouped or summed question will be answered as (module docstring); public inputs and the copy only."""

    sql: str
    #: the chosen SQL parsed (as written: the release's plan adds the domain's filter)
    query: AggregateQuery
    candidates: tuple[GroupedCandidate, ...]
    estimate: GroupedEstimate
    cost: Budget
    groups: int | None
    domain: str
    budget_split: str | None
    partition_selection: dict[str, Any] | None
    clipped_on_copy: dict[str, Any] | None
    mechanisms: tuple[str, ...]
    dropped: tuple[str, ...] = ()
    #: the epsilon planner's rows for the chosen formulation (:func:`pimento.release.aggregate_accuracy.planner`)
    planner: tuple[dict[str, Any], ...] = ()

    @property
    def avoided_sql(self) -> str | None:
        """The parser's top reading, when the choice is another formulation."""
        top = min(self.candidates, key=lambda c: c.rank)
        return None if top.sql == self.sql else top.sql

    def words(self) -> str:
        """What will be answered, in words."""
        query = self.query
        what = reading(query.count_query)
        if query.column is not None:
            table = query.body.relation(query.column.alias).table
            what = f"the {query.kind.value.upper()} of {table}.{query.column.column} over the rows of {what.removeprefix('the number of rows in ')}"
        if query.group_by:
            names = ", ".join(f"{query.body.relation(g.alias).table}.{g.column}" for g in query.group_by)
            what += f", per {names}"
        return what

    def to_dict(self) -> dict[str, Any]:
        """The grouped part of a preview (the rest is the Interpretation's)."""
        return {
            "aggregate": self.query.kind.value,
            "group_by": [str(g) for g in self.query.group_by],
            "groups": self.groups,
            "domain": self.domain,
            "budget_split": self.budget_split,
            "partition_selection": self.partition_selection,
            "clipped_on_copy": self.clipped_on_copy,
            "predicted_error": self.estimate.to_dict(),
            "formulations": [c.to_dict() for c in self.candidates],
            "refused_formulations": list(self.dropped),
            "planner": list(self.planner),
        }


@dataclass(frozen=True)
class _Planned:
    """One proposal planned on the copy: the parser's rank, its SQL, the release's plan, its predicted error, its answer there."""

    rank: int
    sql: str
    plan: AggregatePlan
    estimate: GroupedEstimate
    answer: tuple[Any, ...]


def read_grouped(job: Admitted, question: str, proposed: Proposals | list[Any], synthetic: Engine, catalog: Catalog, settings: Settings,
                 ledger: Ledger, location: str) -> tuple[GroupedReading, SearchOutcome]:
    """The reading of ``question`` among the grouped/summed ``proposed`` formulations (:func:`proposals`, or a list of
    readings each with its ``sql``, best first; module docstring)."""
    start = time.perf_counter()
    _refuse_before(job, settings)
    if not isinstance(proposed, Proposals):
        proposed = Proposals(tuple(c.sql for c in proposed))
    side = cast("Private", _CopySide(_CopyDatabase(synthetic, catalog, settings), ledger, location))
    planned, dropped = _plan_each(job, list(proposed.sql), side, synthetic, catalog)
    clusters = _clusters(planned)
    chosen = _choose(planned, clusters)
    candidates = tuple(
        GroupedCandidate(p.sql, p.rank, clusters[p.answer], _size(clusters, planned, p), p.estimate.relative_error(),
                         p.estimate.median_half_width, _total(p.answer))
        for p in planned
    )
    found = chosen.plan
    reading_ = GroupedReading(
        sql=chosen.sql, query=parse_aggregate_query(chosen.sql, catalog), candidates=candidates, estimate=chosen.estimate,
        cost=found.cost, groups=None if found.keys is None else len(found.keys), domain=found.domain, budget_split=found.budget_split,
        partition_selection=_selection_words(found), clipped_on_copy=found.clipped_on_copy,
        mechanisms=tuple(_mechanism_name(p.mechanism) for p in found.parts) or ("laplace_partition_selection",), dropped=tuple(dropped),
        planner=tuple(planner(replace(job, sql=chosen.sql), side, synthetic, catalog, asked=chosen.estimate)),
    )
    return reading_, _outcome(reading_, planned, clusters, proposed, time.perf_counter() - start)


def _plan_each(job: Admitted, proposed: list[str], side: Private, synthetic: Engine, catalog: Catalog) -> tuple[list[_Planned], list[str]]:
    """Every proposal planned as its release would plan it (step 2), and the reasons of those the release would refuse."""
    planned: list[_Planned] = []
    dropped: list[str] = []
    first_error: UserError | None = None
    for rank, sql in enumerate(proposed, start=1):
        try:
            found = plan(side, replace(job, sql=sql))
            planned.append(_Planned(rank, sql, found, predict(found, synthetic, catalog), _answer_on_copy(found, synthetic)))
        except EngineError as exc:  # it does not run on the copy (an empty or older copy): not a formulation, as in the count search
            dropped.append(f"{sql}: does not run on the synthetic copy ({exc.one_line()})")
        except UserError as exc:
            first_error = first_error or exc
            dropped.append(f"{sql}: {exc.one_line()}")
    if not planned:
        if first_error is not None:
            raise first_error
        raise SearchError("no grouped or summed formulation of the question was found; nothing was spent",
                          hint="rephrase the question, or ask it as SQL with `pimento sql`")
    return planned, dropped


def _clusters(planned: list[_Planned]) -> dict[tuple[Any, ...], int]:
    """Each distinct answer on the copy and its cluster number (in the parser's order)."""
    clusters: dict[tuple[Any, ...], int] = {}
    for p in planned:
        clusters.setdefault(p.answer, len(clusters))
    return clusters


def _size(clusters: dict[tuple[Any, ...], int], planned: list[_Planned], one: _Planned) -> int:
    return sum(1 for p in planned if clusters[p.answer] == clusters[one.answer])


def _choose(planned: list[_Planned], clusters: dict[tuple[Any, ...], int]) -> _Planned:
    """Steps 3 and 4: the cluster of most weight (rank r weighs 2^-(r-1)), then its formulation of lowest predicted error."""
    weight = {c: 0.0 for c in clusters.values()}
    for p in planned:
        weight[clusters[p.answer]] += 2.0 ** -(p.rank - 1)
    best = max(weight, key=lambda c: (weight[c], -c))
    members = [p for p in planned if clusters[p.answer] == best]
    return min(members, key=lambda p: (p.estimate.relative_error(), p.rank))


def _refuse_before(job: Admitted, settings: Settings) -> None:
    """What public inputs refuse before any proposal is planned: the mode, the person unit."""
    if job.mode.spends and not getattr(job.mode, "aggregates", False):
        raise refuse_in_mode(job.mode.name)
    unit = settings.privacy.person_unit
    if unit is not None:
        raise UnsupportedQuery("aggregate_under_person_unit", f"grouped and summed questions are not supported under [privacy] unit = {unit!r}",
                               hint="ask for one count (\"How many ...?\"); docs/privacy-unit.md lists what the person unit supports")


def _answer_on_copy(planned: AggregatePlan, synthetic: Engine) -> tuple[Any, ...]:
    """The formulation's answer on the copy, key by key (what clusters formulations): its rows, keys normalised."""
    width = len(planned.query.group_by)
    rows = synthetic.execute(planned.query.to_sql(synthetic.dialect)).rows
    out = []
    for row in rows:
        key = tuple(key_of(v) for v in row[:width])
        if None in key or (planned.keys is not None and not _in_domain(key, planned)):
            continue
        out.append((key, tuple(_exact(v) for v in row[width:])))
    return tuple(sorted(out, key=repr))


def _in_domain(key: tuple[Any, ...], planned: AggregatePlan) -> bool:
    return key in {tuple(key_of(v) for v in k) for k in planned.keys or ()}


def _exact(value: Any) -> Any:
    try:
        return Fraction(value if value is not None else 0)
    except (TypeError, ValueError, OverflowError, ArithmeticError):
        return str(value)


def _total(answer: tuple[Any, ...]) -> int:
    """The copy's answer summed over the groups (its first column: the count, or the sum), as an integer for the table."""
    total = sum((v[0] for _, v in answer if isinstance(v[0], Fraction)), Fraction(0))
    return int(round(total))


def _mechanism_name(mechanism: Any) -> str:
    return str(mechanism.describe()["mechanism"]) if hasattr(mechanism, "describe") else type(mechanism).__name__


def _selection_words(planned: AggregatePlan) -> dict[str, Any] | None:
    """Partition selection in the preview: that it applies, and the budget it spends (the threshold is stated with the answer)."""
    if planned.selection is None:
        return None
    return {"applies": True, "epsilon": format_number(planned.cost.epsilon), "delta": format_number(planned.cost.delta),
            "note": "the group keys are private: only groups whose noisy count passes a threshold are shown"}


def _outcome(reading_: GroupedReading, planned: list[_Planned], clusters: dict[tuple[Any, ...], int], proposed: Proposals,
             seconds: float) -> SearchOutcome:
    """The count-shaped outcome the Interpretation carries: every formulation with its copy total, the copy's sensitivity of
    the ungrouped count (1.0 for one relation: the public GS), its cluster, rank and predicted error."""
    alternatives = tuple(
        Alternative(sql=p.sql, query=p.plan.query.count_query, synthetic_answer=_total(p.answer),
                    synthetic_rs=float(p.estimate.synthetic_rs) if p.estimate.synthetic_rs is not None else 1.0,
                    cluster=clusters[p.answer], cluster_size=_size(clusters, planned, p), source=f"warm-start #{p.rank}",
                    predicted_error=float(p.estimate.relative_error()))
        for p in planned
    )
    chosen = next(a for a in alternatives if a.sql == reading_.sql)
    result = SearchResult(
        query=chosen.query, sql=reading_.sql, synthetic_rs=chosen.synthetic_rs, synthetic_answer=chosen.synthetic_answer,
        cluster_size=chosen.cluster_size, alternatives=alternatives, rollouts=0, evaluations=len(alternatives), pruned=0,
        invalid=len(reading_.dropped), seconds=seconds, zero_shot_top1=None, predicted_error=chosen.predicted_error,
        error_basis=ERROR_BASIS,
    )
    return SearchOutcome(result, tuple(p.sql for p in planned), (*proposed.notes, *reading_.dropped), proposed.llm_calls,
                         proposed.llm_tokens, seconds)
