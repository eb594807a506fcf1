"""What the noisy modes (dp, split, contextual) share: the count admitted, charged, measured, answered.

:class:`NoisyMode` is the release of a counting query through
:func:`pimento.mechanisms.guarded.guarded_release`, in this order (nothing the analyst can observe
before the charge depends on the private data):

1. before the charge, on public inputs: the SQL parsed on the public schema (or the question's
   reading), whether this engine runs it (:func:`pimento.sql.allowlist.check_runs_on`), the
   mechanism for its number of relations, the policy's enforcer (modes with a context);
2. the charge (cache look-up and charge in one transaction), keyed by :meth:`NoisyMode.cache_key`;
3. after the charge, :meth:`NoisyMode.measure` on the private data: the true count
   (:meth:`NoisyMode.count`) and the smooth bound of its sensitivity (:meth:`NoisyMode.bound`;
   the global mechanism's GS for a single relation); a failure here halts the deployment;
4. the answer: the noisy count plus what :meth:`NoisyMode.finish` adds.

A mode overrides the step that differs (split: :meth:`count` and :meth:`finish`; contextual:
:meth:`bound` and :meth:`reading_on_copy`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, SupportsIndex, SupportsInt

from pimento import sensitivity
from pimento.errors import InternalError, ModeError, UnsupportedQuery
from pimento.mechanisms import GlobalLaplace, GuardedAnswer, guarded_release
from pimento.mechanisms.budget import Budget
from pimento.mechanisms.guarded import Measured
from pimento.mechanisms.smooth import Mechanism
from pimento.policy.authorized_tuples import authorization_view
from pimento.release.aggregate import looks_aggregate, refuse_in_mode, release_aggregate
from pimento.release.answers import Answer, EndToEnd
from pimento.release.enforcement import enforcer_for
from pimento.release.modes.base import Mode
from pimento.release.person_release import release_per_person
from pimento.sensitivity.neighbourhood import Neighbourhood
from pimento.sql import CountQuery, parse_count_query
from pimento.sql.allowlist import check_runs_on

if TYPE_CHECKING:
    from pimento.engines.base import Engine
    from pimento.policy import Context as PolicyContext
    from pimento.policy import Enforcer
    from pimento.release.admission import Admitted
    from pimento.release.ask import SearchOutcome
    from pimento.release.modes.base import Private
    from pimento.schema import Catalog
    from pimento.sensitivity.contextual import AuthorizationView

__all__ = ["NoisyMode", "Run", "as_int"]


@dataclass
class Run:
    """One noisy release under way: the admitted job and what step 1 fixed; ``found``: what ``measure`` read."""

    job: Admitted
    private: Private
    query: CountQuery
    sql: str
    mechanism: Mechanism
    enforcer: Enforcer | None = None
    context: PolicyContext | None = None
    found: dict[str, Any] = field(default_factory=dict)

    @property
    def engine(self) -> Engine:
        return self.private.database.engine

    @property
    def catalog(self) -> Catalog:
        return self.private.database.catalog

    def view(self) -> AuthorizationView:
        """The context's authorization for the query (modes with a context; schema and policy, data read lazily)."""
        if self.enforcer is None or self.context is None:
            raise InternalError("an authorization view needs the enforcer of a mode with a context")
        return authorization_view(self.enforcer, self.context, self.query)


class NoisyMode:
    """A noisy release of a counting query (module docstring); subclasses set the attributes."""

    name: str
    spends = True
    needs_context = False
    neighbourhoods: tuple[Neighbourhood, ...] = (Neighbourhood.ADD_REMOVE,)
    guarantee: str
    end_to_end_kind = "DP"

    def guarantee_kind(self, neighbours: Neighbourhood | None) -> str | None:
        """The guarantee with the neighbourhood it holds for."""
        return self.guarantee if neighbours is None else f"{self.guarantee}; for {neighbours.words}"

    def reading_on_copy(self, job: Admitted, outcome: SearchOutcome, synthetic: Engine, catalog: Catalog) -> tuple[str, float] | None:
        """The search's choice stands."""
        return None

    # ------------------------------------------------------------------ the release

    def release(self, private: Private, job: Admitted) -> Answer:
        if job.interpretation is not None and job.interpretation.grouped is not None:  # before the person unit: refused there
            return self.release_asked_aggregate(private, job)
        if private.database.settings.privacy.person_unit is not None:  # [privacy] unit names a person: truncation, not RS
            return self.release_per_person(private, job)
        if job.interpretation is None and looks_aggregate(job.sql):
            return self.release_aggregate(private, job)
        run = self.prepare(private, job)
        guarded = guarded_release(
            private.ledger, run.mechanism, analyst=job.analyst, database=private.location, sql=run.sql,
            measure=lambda: self.measure(run), mode=self.cache_key(run), question=job.question,
        )
        answer = Answer.released(
            guarded, mode=self.name, sql=run.sql, analyst=job.analyst, context=job.context, neighbours=job.neighbours,
            guarantee_kind=self.guarantee_kind(job.neighbours), **self.finish(run, guarded),
        )
        return answer if job.interpretation is None else self.asked(answer, run)

    #: whether this mode answers a GROUP BY, SUM or AVG (:mod:`pimento.release.aggregate`); else refused before the charge
    aggregates = False

    def release_aggregate(self, private: Private, job: Admitted) -> Answer:
        """A grouped or summed query: one charge, a noisy table (:mod:`pimento.release.aggregate`), or a ModeError."""
        if not self.aggregates:
            raise refuse_in_mode(self.name)
        grouped, guarded, sql = release_aggregate(private, job, self.name)
        return Answer.aggregated(
            grouped, guarded, mode=self.name, sql=sql, analyst=job.analyst, context=job.context,
            neighbours=job.neighbours, guarantee_kind=self.guarantee_kind(job.neighbours),
        )

    def release_asked_aggregate(self, private: Private, job: Admitted) -> Answer:
        """A question read as grouped or summed (:mod:`pimento.release.aggregate_reading`): its SQL released as
        :meth:`release_aggregate` releases SQL (one charge), with the question's fields. The person unit is refused
        before the charge (the reading refused it already; the deployment's settings are checked again here)."""
        seen = job.interpretation
        assert seen is not None and seen.grouped is not None
        unit = private.database.settings.privacy.person_unit
        if unit is not None:
            raise UnsupportedQuery("aggregate_under_person_unit", f"grouped and summed questions are not supported under [privacy] unit = {unit!r}",
                                   hint="ask for one count; docs/privacy-unit.md lists what the person unit supports")
        answer = self.release_aggregate(private, job)
        assert answer.epsilon is not None and answer.delta is not None
        result = seen.outcome.result
        return answer.with_fields(
            question=seen.question, search=seen.outcome, chosen_sql=seen.sql, synthetic_rs=float(result.synthetic_rs),
            avoided_sql=seen.grouped.avoided_sql, seconds=job.seconds,
            end_to_end=EndToEnd(seen.synthetic_budget, Budget(answer.epsilon, answer.delta), tuple(seen.public_inputs),
                                self.end_to_end_kind, job.neighbours),
        )

    def release_per_person(self, private: Private, job: Admitted) -> Answer:
        """The release under the deployment's person unit (:func:`pimento.release.person_release.release_per_person`);
        only dp releases under it (refused before the charge otherwise)."""
        unit = private.database.settings.privacy.person_unit
        if self.name != Mode.DP:
            raise ModeError(f"--mode {self.name} is not available under [privacy] unit = {unit!r}",
                            hint="use --mode dp (the custodian chose the person unit; docs/privacy-unit.md)")
        guarded, choice, run = release_per_person(self, private, job)
        answer = Answer.released(
            guarded, mode=self.name, sql=run.sql, analyst=job.analyst, context=job.context, neighbours=job.neighbours,
            guarantee_kind=self.guarantee_kind(job.neighbours), unit=choice.unit, person_release=choice,
        )
        return answer if job.interpretation is None else self.asked(answer, run)

    def prepare(self, private: Private, job: Admitted) -> Run:
        """Step 1: everything before the charge, on the schema, the policy and public inputs only."""
        database = private.database
        if job.mechanism is None:
            raise InternalError("a noisy release was admitted without a mechanism")
        if job.interpretation is not None:
            query = job.interpretation.query
        else:
            query = parse_count_query(job.sql, database.catalog, max_chars=database.settings.database.max_sql_chars)
        check_runs_on(query, database.engine.dialect)  # a construct this engine cannot run: refused before the charge
        # A single-relation count has global sensitivity 1 (structure, not data): plain Laplace.
        mechanism = job.mechanism.for_relations(len(query.relations))
        run = Run(job, private, query, query.to_sql(database.engine.dialect), mechanism)
        if self.needs_context:
            assert job.policy is not None and job.context is not None  # admit refused a mode without them
            run.enforcer, run.context = enforcer_for(job.policy, job.context, database.engine, database.catalog)
        return run

    def cache_key(self, run: Run) -> str:
        """The mode part of the answer cache's key (:meth:`job_cache_key` with the enforcer's policy)."""
        return self.job_cache_key(run.job, None if run.enforcer is None else run.enforcer.compiled.name)

    def job_cache_key(self, job: Admitted, policy_name: str | None) -> str:
        """The mode part of the answer cache's key, from public inputs (the admitted ``job`` and the name of its
        compiled policy, None for a mode without a context): another policy, context or neighbourhood, another
        answer. Its one home: the release and the service's check before a spend
        (:func:`pimento.release.noise_check_cache.plain_count_key`) both ask it."""
        if not self.needs_context or policy_name is None or job.context is None:
            return self.name
        key = f"{self.name}:{policy_name}:{job.context.key()}"
        if job.neighbours not in (None, Neighbourhood.ADD_REMOVE):  # another bound: never the same cached answer
            key += f":{job.neighbours}"
        return key

    def measure(self, run: Run) -> Measured:
        """Step 3, after the charge: the true count and the smooth bound of its sensitivity."""
        true_value, custodian = self.count(run)
        if isinstance(run.mechanism, GlobalLaplace):
            return Measured(true_value, run.mechanism.gs, custodian)
        bound, more = self.bound(run)
        return Measured(true_value, bound, {**custodian, **more})

    def count(self, run: Run) -> tuple[int, dict[str, Any]]:
        """The count to release, and what the custodian's audit row records about it."""
        return as_int(run.engine.execute(run.sql).scalar()), {}

    def bound(self, run: Run) -> tuple[Fraction, Mapping[str, Any]]:
        """The residual sensitivity (RS) at the mechanism's beta, with the custodian's details."""
        result = sensitivity.residual_sensitivity(run.engine, run.query, run.catalog, run.mechanism.beta_float(), attribution=False)
        return result.rs, {"ls": result.ls, "k_star": result.k_star, "te": {str(k): int(v) for k, v in result.te.items()}}

    def finish(self, run: Run, guarded: GuardedAnswer) -> dict[str, Any]:
        """Fields of :class:`Answer` this mode adds to the noisy count."""
        return {}

    def asked(self, answer: Answer, run: Run) -> Answer:
        """A question's answer: what the synthetic copy showed and the end-to-end guarantee."""
        seen = run.job.interpretation
        assert seen is not None and answer.epsilon is not None and answer.delta is not None
        result = seen.outcome.result
        top1 = result.zero_shot_top1
        avoided = top1.to_sql(run.engine.dialect) if top1 is not None and top1.canonical() != result.query else None
        return answer.with_fields(
            question=seen.question, search=seen.outcome, chosen_sql=seen.contextual_sql or result.sql,
            synthetic_rs=float(result.synthetic_rs), synthetic_crs=seen.synthetic_crs, synthetic_shapley=dict(seen.shapley),
            avoided_sql=avoided, seconds=run.job.seconds,
            end_to_end=EndToEnd(seen.synthetic_budget, Budget(answer.epsilon, answer.delta), tuple(seen.public_inputs),
                                self.end_to_end_kind, run.job.neighbours),
        )


def as_int(value: object) -> int:
    """A COUNT's result as an int; an :class:`InternalError` for anything else (a bug, not the data)."""
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            if not isinstance(value, (str, bytes, SupportsInt, SupportsIndex)):
                raise TypeError
            as_integer = int(value)
        except (TypeError, ValueError):
            raise InternalError(f"a COUNT returned {value!r}, not an integer") from None
        if as_integer != value:
            raise InternalError(f"a COUNT returned {value!r}, not an integer")
        return as_integer
    return value
