"""A count released under the person unit (``[privacy] unit = "Patient"``): planned, charged, then measured.

Under a person unit two databases are neighbours when one is the other plus one person and every
row that references them (docs/privacy-unit.md). A noisy count is then released by truncation
(``mechanisms/PROOF.md`` section 12), never by residual sensitivity (a tuple-level bound). In the
order of :mod:`pimento.mechanisms.guarded` (nothing the analyst can observe before the charge
depends on the private data):

1. before the charge, from public inputs (:func:`plan_person_release`): the unit's foreign-key
   chains (:func:`~pimento.sensitivity.person.person_paths`: a relation that cannot reach the unit
   is a ConfigError), the query's class (one person per result, or several: R2T's LP), an
   unsupported COUNT(DISTINCT) refused (:func:`~pimento.sensitivity.person.contributions_sql`), GS
   (1 for COUNT(DISTINCT person), else ``[privacy] max_contribution``), and the mechanism: on the
   SYNTHETIC copy (charged to this ledger; a copy that is not is never read) the contributions give
   the threshold of the one-threshold mechanism (:func:`~pimento.mechanisms.truncation.choose_threshold`)
   and both mechanisms' predicted errors; the smaller wins. Without a usable copy the release is
   R2T, which needs no threshold from anywhere (a copy is not required: the answer says why);
2. the charge, epsilon with delta = 0, through :func:`pimento.mechanisms.guarded.guarded_vector_release`
   (the one charge-then-measure protocol; the cache key's mode part names the unit, so a person-unit
   answer is never a cached tuple-unit one);
3. after the charge (:func:`measure_and_release`): the contributions on the private data, the
   truncated count(s) and the release. A one-person plan meeting a result with two persons (the
   data broke the custodian's ``one_person_per_row`` declaration) raises InternalError, which halts
   the deployment like every failure after a charge (PROOF.md section 9).

The analyst's answer states the unit and :class:`PersonChoice` (the mechanism, why, its public
thresholds and the copy's predictions); the audit row records the unit and the private quantities.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from pimento.errors import InternalError, ModeError, PimentoError, UnsupportedQuery, UserError
from pimento.mechanisms.budget import Budget, format_number
from pimento.mechanisms.guarded import GuardedAnswer, guarded_vector_release
from pimento.mechanisms.r2t import (
    R2TPlan,
    certified_lp_count,
    error_bound,
    predicted_error,
    r2t_plan,
    r2t_release,
)
from pimento.mechanisms.smooth import CONFIDENCE, GlobalLaplace, Noise, Release
from pimento.mechanisms.truncation import (
    TruncationPlan,
    choose_threshold,
    truncation_plan,
    truncation_predicted_error,
    truncation_release,
)
from pimento.release import ask as _ask
from pimento.release.aggregate import looks_aggregate
from pimento.release.synthetic import synthetic_guarantee
from pimento.sensitivity.person import (
    Contributions,
    PersonPaths,
    contributions_sql,
    owner_expressions,
    person_contributions,
    person_paths,
)

if TYPE_CHECKING:
    from pimento.config import Settings
    from pimento.engines.base import Engine
    from pimento.release.admission import Admitted
    from pimento.release.modes.base import Private
    from pimento.release.modes.noisy import NoisyMode, Run
    from pimento.schema import Catalog
    from pimento.sql import CountQuery

__all__ = [
    "R2T",
    "R2T_BETA",
    "TRUNCATION",
    "PersonChoice",
    "PersonPlan",
    "cache_mode",
    "measure_and_release",
    "plan_person_release",
    "predicted_half_width",
    "refuse_aggregate",
    "release_per_person",
    "release_planned",
]

#: The mechanisms' names, as answers state them (``mechanism``).
TRUNCATION = "truncated_laplace"
R2T = "r2t"
#: R2T's failure probability: 1 - CONFIDENCE, so that its interval holds at the 95% every answer states.
R2T_BETA = 1 - CONFIDENCE


@dataclass(frozen=True)
class PersonChoice:
    """How a person-unit count was released, for the analyst: public inputs and the synthetic copy only.

    ``mechanism``: :data:`TRUNCATION` or :data:`R2T`; ``reason`` in words; ``max_contribution``: the
    GS used (1 for COUNT(DISTINCT person)); ``thresholds``: the public truncation threshold(s)
    (one, or R2T's); ``several_persons``: whether a result may reference several persons (the LP);
    ``predicted_error``: the expected absolute error of each mechanism predicted on the synthetic
    copy (None without a copy); ``copy_count``: the count on the copy (None without one).
    """

    unit: str
    mechanism: str
    reason: str
    max_contribution: int
    thresholds: tuple[int, ...]
    several_persons: bool
    predicted_error: Mapping[str, float] | None = None
    copy_count: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "mechanism": self.mechanism,
            "reason": self.reason,
            "max_contribution": self.max_contribution,
            "thresholds": list(self.thresholds),
            "several_persons": self.several_persons,
            "predicted_error_on_copy": None if self.predicted_error is None else {k: round(v, 4) for k, v in self.predicted_error.items()},
            "count_on_copy": self.copy_count,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PersonChoice:
        """A stored answer's choice read back (a cached answer states what was released then)."""
        predicted = data.get("predicted_error_on_copy")
        return cls(
            unit=str(data["unit"]), mechanism=str(data["mechanism"]), reason=str(data["reason"]),
            max_contribution=int(data["max_contribution"]), thresholds=tuple(int(t) for t in data["thresholds"]),
            several_persons=bool(data["several_persons"]),
            predicted_error=None if predicted is None else {str(k): float(v) for k, v in predicted.items()},
            copy_count=None if data.get("count_on_copy") is None else int(data["count_on_copy"]),
        )


@dataclass(frozen=True)
class PersonPlan:
    """Everything a person-unit release needs that public inputs decide, fixed before the charge."""

    query: CountQuery
    paths: PersonPaths
    choice: PersonChoice
    plan: TruncationPlan | R2TPlan

    @property
    def cost(self) -> Budget:
        """What the release costs: epsilon, pure (delta = 0), whatever delta the request offered."""
        return Budget.spend(self.plan.epsilon)

    @property
    def lp(self) -> bool:
        return self.choice.several_persons


def cache_mode(mode: str, unit: str) -> str:
    """The mode part of the answer cache's key: another unit, another answer (never the tuple unit's)."""
    return f"{mode}:unit={unit}"


# ------------------------------------------------------------------------------ before the charge


def _truncated_at(c: Contributions, lp: bool) -> Callable[[int], int]:
    """Q(tau) of ``c``: the certified LP's value with several persons per result, else the fast sum."""
    if lp and not c.one_person:
        cache: dict[int, int] = {}

        def lp_value(tau: int) -> int:
            if tau not in cache:
                cache[tau] = certified_lp_count(c.owner_sets, c.public, tau)
            return cache[tau]

        return lp_value
    ordered = sorted(c.counts)
    prefix = [0, *accumulate(ordered)]

    def summed(tau: int) -> int:  # public + sum_p min(c_p, tau): truncated_count, in O(log n) per tau
        cut = bisect.bisect_left(ordered, tau)
        return c.public + prefix[cut] + tau * (len(ordered) - cut)

    return summed


def _on_copy(query: CountQuery, catalog: Catalog, paths: PersonPaths, copy: Engine, epsilon: Fraction, gs: int,
             lp: bool, unit: str) -> tuple[PersonChoice, TruncationPlan | R2TPlan]:
    """Both mechanisms planned and their errors predicted on the synthetic copy's contributions; the smaller wins."""
    syn = person_contributions(copy, query, catalog, paths, with_sets=lp)
    at = _truncated_at(syn, lp)
    # the count as the plan's model sees it (equal to syn.total on a copy whose rows have one owner each)
    count = syn.total if lp else at(max(syn.largest, 1))
    r2t = r2t_plan(epsilon, gs, beta=R2T_BETA, lp=lp)
    r2t_error = predicted_error(r2t, [at(t) for t in r2t.thresholds], count)
    if lp:  # an LP per candidate: R2T's thresholds only
        tau = min(r2t.thresholds, key=lambda t: (truncation_predicted_error(truncation_plan(epsilon, t, lp=True), at(t), count), t))
    else:
        tau = choose_threshold(at, count, epsilon, gs=gs)
    trunc = truncation_plan(epsilon, tau, lp=lp)
    trunc_error = truncation_predicted_error(trunc, at(tau), count)
    predicted = {TRUNCATION: trunc_error, R2T: r2t_error}
    if trunc_error <= r2t_error:
        reason = (f"on the synthetic copy, one threshold (tau = {tau}, chosen there) predicts an expected error of "
                  f"{trunc_error:.3g}, R2T {r2t_error:.3g}: the smaller wins")
        return PersonChoice(unit, TRUNCATION, reason, gs, (tau,), lp, predicted, count), trunc
    reason = (f"on the synthetic copy, R2T predicts an expected error of {r2t_error:.3g}, one threshold (tau = {tau}) "
              f"{trunc_error:.3g}: the smaller wins")
    return PersonChoice(unit, R2T, reason, gs, r2t.thresholds, lp, predicted, count), r2t


# proof: person-plan
def plan_person_release(query: CountQuery, *, catalog: Catalog, settings: Settings, epsilon: Fraction,
                        copy: Engine | None, no_copy: str = "no synthetic copy") -> PersonPlan:
    """The plan of a person-unit release of ``query`` (module docs, step 1): public inputs and ``copy`` only.

    ``copy`` is an engine on the synthetic copy charged to this deployment's ledger, or None
    (``no_copy`` says why): then R2T, whose thresholds need nothing from the data. Raises what
    public inputs decide: ConfigError (the unit against the catalog), UnsupportedQuery (a
    COUNT(DISTINCT) of anything but the person's key), PrivacyParameterError (epsilon, GS).
    """
    privacy = settings.privacy
    unit = privacy.person_unit
    if unit is None:
        raise InternalError("a person-unit plan under the tuple unit")
    paths = person_paths(catalog, unit, one_person_per_row=privacy.one_person_per_row)
    contributions_sql(query, catalog, paths)  # refuses an unsupported COUNT(DISTINCT) (UnsupportedQuery)
    lp = len(owner_expressions(query, catalog, paths)) > 1
    gs = 1 if query.count.distinct else privacy.max_contribution
    epsilon = Fraction(epsilon)
    if gs == 1:  # both mechanisms are the Laplace mechanism at scale s / epsilon: nothing to choose, no copy read
        why = ("each person counts once (distinct persons): the Laplace mechanism at the public sensitivity, unbiased"
               if query.count.distinct else "[privacy] max_contribution = 1: each person's results cut at 1, then the Laplace mechanism")
        return PersonPlan(query, paths, PersonChoice(unit, TRUNCATION, why, gs, (1,), lp), truncation_plan(epsilon, 1, lp=lp))
    if copy is not None:
        try:
            choice, chosen = _on_copy(query, catalog, paths, copy, epsilon, gs, lp, unit)
            return PersonPlan(query, paths, choice, chosen)
        except (PimentoError, ArithmeticError) as exc:  # the copy does not fit (another schema, a solver failure)
            no_copy = f"the synthetic copy could not be used ({type(exc).__name__})"
    r2t = r2t_plan(epsilon, gs, beta=R2T_BETA, lp=lp)
    reason = f"{no_copy}: R2T, which needs no threshold from the data (a copy would let a single threshold be chosen)"
    return PersonPlan(query, paths, PersonChoice(unit, R2T, reason, gs, r2t.thresholds, lp), r2t)


def refuse_aggregate(sql: str | None, unit: str) -> None:
    """A grouped or summed query under the person unit: refused before anything is spent (UnsupportedQuery),
    by the release (:func:`release_per_person`) and by its preview alike."""
    if sql is not None and looks_aggregate(sql):
        raise UnsupportedQuery("aggregate_under_person_unit", f"grouped and summed queries are not supported under [privacy] unit = {unit!r}",
                               hint="ask for one COUNT; docs/privacy-unit.md lists what the person unit supports")


def predicted_half_width(planned: PersonPlan, copy: Engine | None, catalog: Catalog) -> Fraction | None:
    """The error ``planned``'s release is predicted to stay within with 95% probability, on the synthetic copy ``copy``.

    The preview's estimate under the person unit (:func:`pimento.release.sql_preview.preview_sql`): one threshold
    tau, the copy's truncation bias Q - Q(tau) plus the noise's 95% half-width (the interval the answer states);
    R2T, its 95% bound at the copy's largest contribution (:func:`~pimento.mechanisms.r2t.error_bound`) plus the
    bias of contributions above GS. COUNT(DISTINCT person) is unbiased: the noise alone, no copy read. None without
    a copy otherwise, or when the copy does not fit (another schema, a solver failure: as for the plan). From the
    synthetic copy and the public plan only: showing it spends nothing.
    """
    plan = planned.plan
    if isinstance(plan, TruncationPlan) and planned.query.count.distinct:
        return Fraction(_interval(plan, 0)[0][1])
    if copy is None:
        return None
    try:
        syn = person_contributions(copy, planned.query, catalog, planned.paths, with_sets=planned.lp)
        at = _truncated_at(syn, planned.lp)
        count = syn.total if planned.lp else at(max(syn.largest, 1))
        top = at(plan.tau if isinstance(plan, TruncationPlan) else plan.gs)
    except (PimentoError, ArithmeticError):
        return None
    if isinstance(plan, TruncationPlan):
        return max(Fraction(count - top), Fraction(0)) + Fraction(_interval(plan, 0)[0][1])
    largest = min(max(syn.largest, 1), plan.gs)
    return Fraction(error_bound(plan, largest)) + max(Fraction(count - top), Fraction(0))


def open_copy(private: Private, job: Admitted) -> tuple[Engine | None, str]:
    """The synthetic copy charged to this deployment's ledger, opened, or None with the reason in words.

    A copy that is not charged to this ledger is never read (it might not be synthetic).
    """
    settings = private.database.settings
    try:
        path = _ask.resolve_synthetic(job.request.search.synthetic, private.location, settings)
        synthetic_guarantee(private.ledger, private.location, path)
        return _ask.open_synthetic(path), ""
    except UserError as exc:
        return None, f"no synthetic copy charged to this deployment's ledger ({exc.one_line()})"


# ------------------------------------------------------------------------------ after the charge


# proof: person-interval
def _interval(plan: TruncationPlan | R2TPlan, value: int) -> tuple[tuple[Fraction, Fraction], Fraction, str]:
    """The 95% interval (from the public plan and the value only), the public noise scale, the interval's basis."""
    if isinstance(plan, TruncationPlan):
        half = GlobalLaplace(Budget.spend(plan.epsilon), gs=plan.sensitivity).half_width(plan.scale)
        return (value - half, value + half), plan.scale, "truncated_count"
    if len(plan.thresholds) == 1:
        half = Fraction(error_bound(plan, 1))
        return (value - half, value + half), plan.scales[0], "truncated_count"
    # with probability >= 1 - beta the release lies in [Q - bound, Q] when no person contributes more than GS
    return (Fraction(value), Fraction(value + error_bound(plan, plan.gs))), max(plan.scales), "r2t_underestimate"


def measure_and_release(planned: PersonPlan, engine: Engine, catalog: Catalog) -> tuple[dict[str, Any], dict[str, Any]]:
    """Step 3, after the charge: the contributions on the private ``engine``, truncated, released.

    Returns the analyst's answer (JSON-ready: the release, the unit and the choice) and the
    custodian's audit details. Raises InternalError for a one-person plan meeting a result that
    references several persons (the data broke ``one_person_per_row``): the deployment halts.
    """
    plan, lp = planned.plan, planned.lp
    c = person_contributions(engine, planned.query, catalog, planned.paths, with_sets=lp)
    # proof: person-one-owner
    if not lp and c.most_owners > 1:
        raise InternalError(
            f"a counted result references {c.most_owners} persons, but [privacy] one_person_per_row is declared "
            "(the data breaks it: check it with pimento.sensitivity.person.rows_with_several_owners)"
        )
    at = _truncated_at(c, lp)
    if isinstance(plan, TruncationPlan):
        truncated = [at(plan.tau)]
        value = truncation_release(plan, truncated[0])
    else:
        truncated = [at(t) for t in plan.thresholds]
        value = r2t_release(plan, truncated)
    interval, scale, basis = _interval(plan, value)
    release = Release(
        value=Fraction(value), interval=interval, mechanism=planned.choice.mechanism, noise=Noise.LAPLACE,
        epsilon=plan.epsilon, delta=Fraction(0), epsilon_noise=plan.epsilon, epsilon_rs_bound=Fraction(0), beta=Fraction(0),
        grid=Fraction(1), noise_scale_upper=scale, interval_basis=basis, confidence=CONFIDENCE,
    )
    unit = planned.choice.unit
    answer = {**release.to_dict(), "unit": unit, "person_release": planned.choice.to_dict()}
    audit = {
        "mechanism": release.mechanism,
        "unit": unit,
        "scale": format_number(scale),
        "value": format_number(release.value),
        "interval": [format_number(interval[0]), format_number(interval[1])],
        "private": {
            "true_value": c.total, "truncated": truncated, "largest_contribution": c.largest, "persons": len(c.counts),
            "public_results": c.public, "most_owners": c.most_owners,
        },
    }
    return answer, audit


# ------------------------------------------------------------------------------ the release


def release_planned(private: Private, job: Admitted, planned: PersonPlan, *, sql: str, mode: str) -> tuple[GuardedAnswer, PersonChoice]:
    """Steps 2 and 3: charge ``planned.cost`` (cache key's mode part :func:`cache_mode`), then measure and release.

    Returns the analyst's release with its bookkeeping and the choice it states (the stored one for
    a cached answer).
    """
    database = private.database
    # proof: person-charge
    guarded = guarded_vector_release(
        private.ledger, planned.cost, lambda: measure_and_release(planned, database.engine, database.catalog),
        analyst=job.analyst, database=private.location, sql=sql, mode=cache_mode(mode, planned.choice.unit), question=job.question,
    )
    stored = guarded.stored
    choice = PersonChoice.from_dict(stored["person_release"]) if "person_release" in stored else planned.choice
    answer = GuardedAnswer(Release.from_dict(dict(stored)), guarded.cached, guarded.charge_id, guarded.request_key, guarded.budget_left)
    return answer, choice


def release_per_person(mode: NoisyMode, private: Private, job: Admitted) -> tuple[GuardedAnswer, PersonChoice, Run]:
    """``mode``'s release of ``job`` under the deployment's person unit (module docs): the guarded answer, the
    choice it states and the run (the mode builds the :class:`~pimento.release.answers.Answer`).

    Refused before the charge (nothing spent): a grouped or summed query, and whatever
    :func:`plan_person_release` refuses (the mode refuses a mode other than dp).
    """
    unit = private.database.settings.privacy.person_unit
    if unit is None:
        raise InternalError("a person-unit release under the tuple unit")
    if job.interpretation is None:
        refuse_aggregate(job.sql, unit)
    run = mode.prepare(private, job)  # the SQL on the public schema, this engine's admission
    assert job.request.epsilon is not None  # admission refused a spending mode without it
    epsilon = Budget.spend(job.request.epsilon).epsilon
    copy, no_copy = (None, "") if run.query.count.distinct else open_copy(private, job)
    try:
        planned = plan_person_release(run.query, catalog=run.catalog, settings=private.database.settings, epsilon=epsilon,
                                      copy=copy, no_copy=no_copy)
    finally:
        if copy is not None:
            copy.close()
    guarded, choice = release_planned(private, job, planned, sql=run.sql, mode=mode.name)
    return guarded, choice, run
