"""What a question will be answered as, found on the synthetic copy alone: one home for the reading.

:func:`interpret` is the one path from a question to the SQL that will be released. It needs the
public schema (the catalog), the custodian's settings, the ledger (for the analyst's cap and the
synthetic copy's charge) and the synthetic copy; it never opens the private database, so the
service's preview calls it with what it read at start-up. :meth:`Session.preview
<pimento.release.session.Session.preview>` and :meth:`Session.answer
<pimento.release.session.Session.answer>` call it too (through :func:`interpret_admitted`, for a
request already admitted), so that a preview shows exactly what a confirmed ask releases, in every
mode (contextual: the chosen cluster's formulation of lowest CRS on the copy).

:func:`planner` prices a reading at several epsilons (the half-width of the noise at the copy's
RS) and :func:`estimated_half_width` is the one formula both use.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pimento import sensitivity
from pimento.engines.base import Engine
from pimento.errors import ModeError
from pimento.mechanisms import GlobalLaplace, Ledger, mechanism_for
from pimento.mechanisms.budget import Budget, NumberLike, format_number
from pimento.mechanisms.ledger import database_key
from pimento.mechanisms.smooth import Mechanism
from pimento.release import ask as _ask
from pimento.release import predicted_error as _predicted
from pimento.release import reading_cache as _readings
from pimento.release.accuracy import PLANNER_EPSILONS, Accuracy
from pimento.release.aggregate_accuracy import GROUPED_ESTIMATE_BASIS
from pimento.release.admission import DEFAULT_ANALYST, Admitted, admit
from pimento.release.ask import SearchOutcome
from pimento.release.predicted_error import estimated_half_width
from pimento.numbers import json_number
from pimento.release.enforcement import enforcer_for
from pimento.release.request import Context, Request
from pimento.release.synthetic import synthetic_guarantee
from pimento.sensitivity.neighbourhood import Neighbourhood
from pimento.sql import CountQuery, parse_count_query
from pimento.sql.reading import reading
from pimento.synth import META_TABLE

if TYPE_CHECKING:
    from pimento.config import Settings
    from pimento.release.aggregate_reading import GroupedReading
    from pimento.schema import Catalog

__all__ = ["PLANNER_EPSILONS", "Interpretation", "estimated_half_width", "interpret", "interpret_admitted", "planner"]



@dataclass(frozen=True)
class Interpretation:
    """What a question will be answered as, found on the synthetic copy only (:func:`interpret`).

    Every field is public input or computed on the synthetic copy: showing it spends nothing.
    ``confidence`` weighs the readings the parser (or LLM) proposed as the final selection does
    (the proposal ranked r counts 2^-r): ``"high"`` when those giving the chosen answer on the
    synthetic copy hold at least 2/3 of the weight (the two best-ranked readings agree, say),
    ``"low"`` otherwise: the question can be read in several ways, and the analyst should check
    the reading before spending. A heuristic on the synthetic copy, not a guarantee.
    """

    question: str
    mode: str
    outcome: SearchOutcome
    query: CountQuery
    sql: str
    mechanism: Mechanism
    context: Context | None
    policy: str | None
    shapley: dict[str, float]
    synthetic_budget: Budget
    public_inputs: tuple[str, ...]
    contextual_sql: str | None = None
    synthetic_crs: float | None = None
    #: the neighbourhood the guarantee will hold for (None for an exact answer: ci)
    neighbours: Neighbourhood | None = Neighbourhood.ADD_REMOVE
    #: the custodian's ``[release] warn_relative_error`` (:mod:`pimento.release.accuracy`)
    warn_relative_error: Fraction = Fraction(1, 2)
    #: a grouped or summed question's reading (:mod:`pimento.release.aggregate_reading`); None for a count.
    #: Then ``sql`` is the grouped SQL, ``query`` its ungrouped count (whose sensitivity drives the noise) and
    #: ``outcome`` lists the grouped formulations weighed.
    grouped: GroupedReading | None = None

    @property
    def confidence(self) -> str:
        result = self.outcome.result
        chosen = next((a.cluster for a in result.alternatives if a.sql == result.sql), None)
        weights: dict[int, float] = {}
        for a in result.alternatives:
            if a.source.startswith("warm-start #"):
                rank = int(a.source.rsplit("#", 1)[1]) - 1
                weights[a.cluster] = weights.get(a.cluster, 0.0) + 2.0**-rank
        total = sum(weights.values())
        if total == 0 or chosen is None:
            return "low"
        return "high" if weights.get(chosen, 0.0) >= 2 * total / 3 else "low"

    @property
    def synthetic_rs(self) -> float:
        """The sensitivity the estimate uses: the CRS of the contextual reading, else the search's RS, on the copy."""
        return self.synthetic_crs if self.synthetic_crs is not None else float(self.outcome.result.synthetic_rs)

    def estimated_half_width(self) -> Fraction:
        """The 95% half-width of the noise at the copy's sensitivity and this epsilon (an accuracy estimate);
        a grouped answer's: the median over its groups."""
        if self.grouped is not None:
            return self.grouped.estimate.median_half_width
        result = self.outcome.result
        if result.error_basis == _predicted.PersonUnitError.basis and math.isfinite(result.predicted_error):
            return Fraction(result.predicted_error)  # the person unit: the person-level release's error, not RS's noise
        return estimated_half_width(self.mechanism.for_relations(len(self.query.relations)), self.synthetic_rs)

    def accuracy(self, planner_rows: tuple[Mapping[str, Any], ...] = ()) -> Accuracy:
        """The predicted accuracy at this epsilon (the copy's answer and sensitivity); ``planner_rows``: the
        :func:`planner`'s, for the epsilon that would give +-10%; a grouped answer's: the whole answer's predicted
        error (:mod:`pimento.release.aggregate_accuracy`) with its own planner (the reading's)."""
        if self.grouped is not None:
            return self.grouped.estimate.accuracy(self.warn_relative_error, self.grouped.planner)
        return Accuracy(self.estimated_half_width(), self.outcome.result.synthetic_answer, self.warn_relative_error, planner_rows)

    def to_dict(self) -> dict[str, Any]:
        if self.grouped is not None:
            return self._grouped_dict(self.grouped)
        used = self.mechanism.for_relations(len(self.query.relations))
        cost = used.privacy_cost()
        rs = self.synthetic_crs if self.synthetic_crs is not None else self.outcome.result.synthetic_rs
        half = estimated_half_width(used, rs)
        result = self.outcome.result
        return {
            "question": self.question,
            "mode": str(self.mode),
            "chosen_sql": self.sql,
            "reading": reading(self.query),
            "confidence": self.confidence,
            "readings_proposed": len({a.cluster for a in result.alternatives if a.source.startswith("warm-start")}),
            "synthetic_answer": result.synthetic_answer,
            "synthetic_rs": result.synthetic_rs,
            "synthetic_predicted_error": result.to_dict()["synthetic_predicted_error"],
            "predicted_error_basis": result.error_basis,
            **({"synthetic_crs": self.synthetic_crs} if self.synthetic_crs is not None else {}),
            "synthetic_shapley": dict(self.shapley),
            "estimated_half_width_95": json_number(half),
            "estimate_basis": "noise at the synthetic copy's residual sensitivity for this epsilon; the released "
            "interval comes from a DP bound of the private one and is usually wider",
            **self.accuracy().to_dict(),
            "cost": {"epsilon": format_number(cost.epsilon), "delta": format_number(cost.delta)},
            "mechanism": used.describe()["mechanism"],
            "guarantee_if_confirmed": self._guarantee(cost),
            "alternatives": [a.to_dict() for a in result.alternatives[:10]],
            "notes": list(self.outcome.notes),
            "search_seconds": round(self.outcome.seconds, 4),
            "spent": {"epsilon": "0", "delta": "0"},
        }

    def _guarantee(self, cost: Budget) -> dict[str, Any]:
        return {
            "epsilon": format_number(self.synthetic_budget.epsilon + cost.epsilon),
            "delta": format_number(self.synthetic_budget.delta + cost.delta),
            "epsilon_synthetic": format_number(self.synthetic_budget.epsilon),
            "delta_synthetic": format_number(self.synthetic_budget.delta),
            "public_inputs": list(self.public_inputs),
            **({"neighbours": str(self.neighbours)} if self.neighbours is not None else {}),
        }

    def _grouped_dict(self, grouped: GroupedReading) -> dict[str, Any]:
        """A grouped or summed question's preview: the reading, the groups, the cost, the whole answer's predicted error."""
        result = self.outcome.result
        cost = grouped.cost if self.mode != "ci" else Budget.zero()
        return {
            "question": self.question,
            "mode": str(self.mode),
            "chosen_sql": self.sql,
            "reading": grouped.words(),
            "confidence": self.confidence,
            "readings_proposed": len({a.cluster for a in result.alternatives}),
            **grouped.to_dict(),
            "synthetic_rs": result.synthetic_rs,
            "estimated_half_width_95": json_number(grouped.estimate.median_half_width),
            "estimate_basis": GROUPED_ESTIMATE_BASIS,
            **self.accuracy().to_dict(),
            "cost": {"epsilon": format_number(cost.epsilon), "delta": format_number(cost.delta)},
            "mechanism": "+".join(grouped.mechanisms),
            "guarantee_if_confirmed": self._guarantee(cost),
            "avoided_sql": grouped.avoided_sql,
            "alternatives": [a.to_dict() for a in result.alternatives[:10]],
            "notes": list(self.outcome.notes),
            "search_seconds": round(self.outcome.seconds, 4),
            "spent": {"epsilon": "0", "delta": "0"},
        }


def interpret(
    request: Request,
    *,
    catalog: Catalog,
    settings: Settings,
    ledger: Ledger,
    location: str,
    analyst: str = DEFAULT_ANALYST,
    synthetic: Engine | str | Path | None = None,
) -> Interpretation:
    """The reading of ``request`` (a question) on the synthetic copy; spends nothing, never opens the private database.

    ``catalog``, ``settings``: the deployment's public schema and the custodian's settings;
    ``ledger``, ``location``: the deployment's ledger and the location its releases charge (the
    analyst's cap, the copy's charge). ``analyst``: who asks when the request names nobody.
    ``synthetic``: an Engine already open on the copy, or its path; default the request's
    ``search.synthetic``, else ``[synth] path``, else ``DB.synthetic.duckdb`` beside the database.
    Raises what admission raises (:func:`pimento.release.admission.admit`), a
    :class:`pimento.errors.SyntheticCopyError` for a copy not charged to this ledger, a
    :class:`pimento.errors.SearchError` when no formulation is found.
    """
    job = admit(request, settings=settings, ledger=ledger, analyst=analyst)
    return interpret_admitted(job, catalog=catalog, settings=settings, ledger=ledger, location=location, synthetic=synthetic)


def interpret_admitted(
    job: Admitted,
    *,
    catalog: Catalog,
    settings: Settings,
    ledger: Ledger,
    location: str,
    synthetic: Engine | str | Path | None = None,
) -> Interpretation:
    """:func:`interpret` for a request :func:`~pimento.release.admission.admit` already admitted."""
    seen = _interpret(job, catalog=catalog, settings=settings, ledger=ledger, location=location, synthetic=synthetic)
    return replace(seen, warn_relative_error=Fraction(settings.release.warn_relative_error))


def _interpret(job: Admitted, *, catalog: Catalog, settings: Settings, ledger: Ledger, location: str,
               synthetic: Engine | str | Path | None) -> Interpretation:
    question = job.question
    if question is None or job.mechanism is None:  # admit gives every question a mechanism
        raise _not_a_question()
    if isinstance(synthetic, Engine):
        synthetic_budget, public_inputs = synthetic_guarantee(ledger, location, synthetic)
        where = _Where(settings, ledger, location)
        return _read_any(job, question, job.mechanism, synthetic, catalog, where, synthetic_budget, public_inputs)
    path = _ask.resolve_synthetic(synthetic or job.request.search.synthetic, location, settings)
    synthetic_budget, public_inputs = synthetic_guarantee(ledger, location, path)  # checked for every request, never cached
    engine = _ask.open_synthetic(path)
    try:
        where = _Where(settings, ledger, location)
        if _readings.enabled():
            return _read_shared(job, question, job.mechanism, engine, catalog, where, path, synthetic_budget, public_inputs)
        return _read_any(job, question, job.mechanism, engine, catalog, where, synthetic_budget, public_inputs)
    finally:
        engine.close()


def _read_shared(job: Admitted, question: str, mechanism: Mechanism, engine: Engine, catalog: Catalog, where: _Where,
                 path: Path, synthetic_budget: Budget, public_inputs: list[str]) -> Interpretation:
    """:func:`_read` through the cache of readings beside the copy (:mod:`pimento.release.reading_cache`):
    the search runs only for a key not seen before; the rest of the Interpretation is this request's."""
    copy_id = str(engine.execute(f"SELECT copy_id FROM {META_TABLE}").rows[0][0])
    key = _readings.reading_key(_readings.reading_parts(job, mechanism, catalog, where.settings, copy_id=copy_id,
                                                        database=database_key(where.location)))
    store = _readings.store_for(path)
    entry = store.get(key)
    if isinstance(entry, dict):
        return Interpretation(
            question=question, mode=job.mode.name, outcome=entry["outcome"], query=entry["query"], sql=entry["sql"], mechanism=mechanism,
            context=job.context, policy=job.policy, shapley=dict(entry["shapley"]), synthetic_budget=synthetic_budget,
            public_inputs=tuple(public_inputs), contextual_sql=entry["contextual_sql"], synthetic_crs=entry["synthetic_crs"],
            neighbours=job.neighbours, grouped=entry.get("grouped"),
        )
    seen = _read_any(job, question, mechanism, engine, catalog, where, synthetic_budget, public_inputs)
    store.put(key, {"outcome": seen.outcome, "query": seen.query, "sql": seen.sql, "shapley": seen.shapley,
                    "contextual_sql": seen.contextual_sql, "synthetic_crs": seen.synthetic_crs, "grouped": seen.grouped})
    return seen


@dataclass(frozen=True)
class _Where:
    """The deployment a reading is for: the custodian's settings, the ledger and the location its releases charge."""

    settings: Settings
    ledger: Ledger
    location: str


def _read_any(job: Admitted, question: str, mechanism: Mechanism, engine: Engine, catalog: Catalog, where: _Where,
              synthetic_budget: Budget, public_inputs: list[str]) -> Interpretation:
    """A question the analyst's seed SQL, the LLM or the parser reads as grouped or summed: its grouped reading
    (:mod:`pimento.release.aggregate_reading`); any other: the count search (:func:`_read`)."""
    from pimento.release import aggregate_reading as _grouped  # imports this module's estimated_half_width

    proposed = _grouped.proposals(question, catalog, engine, job.request.search)
    if not proposed.sql:
        return _read(job, question, mechanism, engine, catalog, synthetic_budget, public_inputs, where.settings)
    grouped, outcome = _grouped.read_grouped(job, question, proposed, engine, catalog, where.settings, where.ledger, where.location)
    return Interpretation(
        question=question, mode=job.mode.name, outcome=outcome, query=outcome.result.query, sql=grouped.sql, mechanism=mechanism,
        context=job.context, policy=job.policy, shapley={}, synthetic_budget=synthetic_budget, public_inputs=tuple(public_inputs),
        neighbours=job.neighbours, grouped=grouped,
    )


def _not_a_question() -> Exception:
    return ModeError("only a question has an interpretation; a SQL request is answered as written")


def _read(job: Admitted, question: str, mechanism: Mechanism, engine: Engine, catalog: Catalog,
          synthetic_budget: Budget, public_inputs: list[str], settings: Settings) -> Interpretation:
    """The search on the open synthetic copy ``engine``, then the mode's own choice and the explanation there."""
    if job.mode.needs_context:
        assert job.policy is not None and job.context is not None  # admit refused a mode without them
        enforcer_for(job.policy, job.context, engine, catalog)  # a bad policy or context fails before the search
    options = job.request.search
    outcome = _ask.search_question(question, engine, catalog, beta=mechanism.beta_float(), seed_sql=options.seed_sql,
                                   k=options.k, config=options.config, llm=options.llm,
                                   error_model=_predicted.error_model(mechanism, engine, catalog, settings))
    chosen = job.mode.reading_on_copy(job, outcome, engine, catalog)
    sql = chosen[0] if chosen is not None else outcome.result.sql
    query = parse_count_query(sql, catalog)
    shapley: dict[str, float] = {}
    if len(query.relations) > 1:
        on_copy = sensitivity.residual_sensitivity(engine, query, catalog, mechanism.beta_float(), attribution=True)
        shapley = {name: round(float(v), 4) for name, v in on_copy.shapley.items()}
    return Interpretation(
        question=question, mode=job.mode.name, outcome=outcome, query=query, sql=sql, mechanism=mechanism,
        context=job.context, policy=job.policy, shapley=shapley, synthetic_budget=synthetic_budget,
        public_inputs=tuple(public_inputs), contextual_sql=chosen[0] if chosen is not None else None,
        synthetic_crs=chosen[1] if chosen is not None else None, neighbours=job.neighbours,
    )


def planner(
    query: CountQuery,
    synthetic: Engine,
    catalog: Catalog,
    *,
    epsilon: NumberLike,
    delta: NumberLike | None,
    share: NumberLike,
    epsilons: tuple[str, ...] = PLANNER_EPSILONS,
) -> list[dict[str, Any]]:
    """What each epsilon buys: the 95% half-width of the noise at the synthetic copy's RS (recomputed at
    each epsilon's beta) for ``query``, at each of ``epsilons`` and the one asked for; computed on the
    synthetic copy only. ``share``: the custodian's ``[release] rs_bound_share``."""
    wanted = sorted({Fraction(e) for e in epsilons} | {Fraction(str(epsilon))})
    rows = []
    for eps in wanted:
        text = format_number(eps)
        mechanism = mechanism_for(text, delta, share=share).for_relations(len(query.relations))
        if isinstance(mechanism, GlobalLaplace):
            rs: Fraction | int = mechanism.gs
        else:
            rs = sensitivity.residual_sensitivity(synthetic, query, catalog, mechanism.beta_float(), attribution=False).rs
        rows.append({"epsilon": text, "estimated_half_width_95": json_number(estimated_half_width(mechanism, rs))})
    return rows
