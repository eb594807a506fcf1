"""The one answer every release returns: :class:`Answer`, flat and typed, with one :meth:`Answer.to_dict`.

An answer is one of three shapes, told apart by :attr:`Answer.exact` and :attr:`Answer.grouped`:

* a **noisy count** (modes dp, split, contextual): the released value and what is derived from it
  (``value``, ``interval``, clamped at zero: post-processing), the mechanism's public description
  (``epsilon``, ``delta``, ``noise``, ``noise_scale_upper``, ...), the ledger's bookkeeping
  (``cached``, ``charge_id``, ``budget_left``), the neighbourhood; for a question also what the
  synthetic copy showed (``search``, ``synthetic_rs``, ``synthetic_shapley``, ...) and the end-to-end
  guarantee (:class:`EndToEnd`);
* an **exact answer** (mode ci): ``columns`` and ``rows`` on the authorized data of the context,
  and the policy's name;
* a **grouped or summed answer** (a GROUP BY, SUM or AVG in mode dp, :mod:`pimento.release.aggregate`):
  ``aggregate``, ``group_by``, ``groups`` (per group its key, noisy value and interval), how each
  noisy vector was released and the ledger's bookkeeping (:class:`~pimento.release.aggregate_answer.GroupedRelease`).

Everything here is analyst-facing: the noisy value, what is computed from it, public inputs, the
synthetic copy, or authorized cells. :meth:`Answer.to_dict` writes the JSON every edge sends
(``pimento sql/ask --json``, ``/v1/sql``, ``/v1/ask``); its keys per mode are pinned by
tests/unit/release/test_answer_keys.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from pimento.mechanisms.budget import Budget, format_number
from pimento.mechanisms.guarded import GuardedAnswer, GuardedVector
from pimento.release.aggregate_answer import GroupedRelease
from pimento.mechanisms.smooth import Noise, Release
from pimento.release.clamp import clamp_count
from pimento.release.request import Context
from pimento.sensitivity.neighbourhood import Neighbourhood

if TYPE_CHECKING:
    from pimento.release.ask import SearchOutcome
    from pimento.release.person_release import PersonChoice

__all__ = ["Answer", "EndToEnd"]


@dataclass(frozen=True)
class EndToEnd:
    """A question's end-to-end guarantee: the synthetic copy's charge plus this release's, for
    neighbours that agree on the declared-public inputs the copy took without noise."""

    synthetic: Budget
    release: Budget
    public_inputs: tuple[str, ...]
    kind: str
    neighbours: Neighbourhood | None

    @property
    def epsilon(self) -> Fraction:
        return self.synthetic.epsilon + self.release.epsilon

    @property
    def delta(self) -> Fraction:
        return self.synthetic.delta + self.release.delta

    def to_dict(self) -> dict[str, Any]:
        return {
            "epsilon_synthetic": format_number(self.synthetic.epsilon),
            "delta_synthetic": format_number(self.synthetic.delta),
            "epsilon_release": format_number(self.release.epsilon),
            "delta_release": format_number(self.release.delta),
            "epsilon": format_number(self.epsilon),
            "delta": format_number(self.delta),
            "public_inputs": list(self.public_inputs),
            "kind": self.kind,
            "neighbours": None if self.neighbours is None else str(self.neighbours),
        }


@dataclass(frozen=True)
class Answer:
    """One released answer (module docstring). Fields a shape does not have are None (or empty)."""

    mode: str
    #: the SQL answered (a noisy count: as it was counted, in the engine's dialect)
    sql: str
    analyst: str
    #: the context of a ci, split or contextual answer (public input)
    context: Context | None = None
    #: the guarantee in words (ci: the exact answer's; split, contextual: with the neighbourhood); None for dp
    guarantee_kind: str | None = None
    #: the question, when the request was one
    question: str | None = None

    # -- a noisy count: the release (Release) and its bookkeeping (GuardedAnswer)
    #: the noisy value as drawn (unbiased; :attr:`value` is it clamped at zero)
    value_unclamped: Fraction | None = None
    interval_unclamped: tuple[Fraction, Fraction] | None = None
    mechanism: str | None = None
    noise: Noise | None = None
    epsilon: Fraction | None = None
    delta: Fraction | None = None
    epsilon_noise: Fraction | None = None
    epsilon_rs_bound: Fraction | None = None
    beta: Fraction | None = None
    grid: Fraction | None = None
    #: a DP upper bound of the noise scale (GS / epsilon for the global mechanism)
    noise_scale_upper: Fraction | None = None
    interval_basis: str | None = None
    confidence: Fraction | None = None
    #: whether an identical earlier request's answer was returned (free)
    cached: bool | None = None
    charge_id: int | None = None
    budget_left: Budget | None = None
    #: the neighbourhood the guarantee holds for (None for an exact answer)
    neighbours: Neighbourhood | None = None
    #: the privacy unit a noisy answer protects: "tuple" (one row) or the relation of one person ([privacy] unit)
    unit: str = "tuple"
    #: under a person unit: the mechanism chosen and why, its public thresholds (release/person_release.py)
    person_release: PersonChoice | None = None
    #: split: the authorized part, exact, and the remainder in words
    authorized_exact: int | None = None
    remainder: str | None = None

    # -- an exact answer (ci)
    policy: str | None = None
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[Any, ...], ...] = ()
    #: texts the authorized cells were read from, when the custodian lets them flow (release/provenance.py)
    provenance: dict[str, Any] | None = None

    # -- a grouped or summed answer (GROUP BY, SUM, AVG): the groups and how they were released
    grouped: GroupedRelease | None = None

    # -- a question answered with noise: what the synthetic copy showed
    search: SearchOutcome | None = None
    #: the SQL chosen (contextual: the chosen cluster's formulation of lowest CRS on the copy)
    chosen_sql: str | None = None
    synthetic_rs: float | None = None
    synthetic_crs: float | None = None
    synthetic_shapley: dict[str, float] = field(default_factory=dict)
    #: the zero-shot top reading the search avoided, if it differs
    avoided_sql: str | None = None
    #: seconds before the release (admission and the search; the private read is not timed)
    seconds: float | None = None
    end_to_end: EndToEnd | None = None

    # ------------------------------------------------------------------ construction

    @classmethod
    def released(cls, guarded: GuardedAnswer, *, mode: str, sql: str, analyst: str, **fields: Any) -> Answer:
        """A noisy count: ``guarded``'s release and bookkeeping, flattened; ``fields`` as the class's."""
        r = guarded.release
        return cls(
            mode=mode, sql=sql, analyst=analyst, value_unclamped=r.value, interval_unclamped=r.interval,
            mechanism=r.mechanism, noise=r.noise, epsilon=r.epsilon, delta=r.delta, epsilon_noise=r.epsilon_noise,
            epsilon_rs_bound=r.epsilon_rs_bound, beta=r.beta, grid=r.grid, noise_scale_upper=r.noise_scale_upper,
            interval_basis=r.interval_basis, confidence=r.confidence, cached=guarded.cached, charge_id=guarded.charge_id,
            budget_left=guarded.budget_left, **fields,
        )

    @classmethod
    def aggregated(cls, grouped: GroupedRelease, guarded: GuardedVector, *, mode: str, sql: str, analyst: str, **fields: Any) -> Answer:
        """A grouped or summed answer: ``grouped`` and ``guarded``'s bookkeeping; ``fields`` as the class's."""
        return cls(
            mode=mode, sql=sql, analyst=analyst, grouped=grouped, epsilon=grouped.epsilon, delta=grouped.delta,
            cached=guarded.cached, charge_id=guarded.charge_id, budget_left=guarded.budget_left, **fields,
        )

    def with_fields(self, **fields: Any) -> Answer:
        """The same answer with ``fields`` replaced (a question's synthetic-copy fields, say)."""
        return replace(self, **fields)

    # ------------------------------------------------------------------ reading

    @property
    def exact(self) -> bool:
        """Whether this is an exact answer (rows on the authorized data), not a noisy count or table."""
        return self.value_unclamped is None and self.grouped is None

    @property
    def value(self) -> Fraction | None:
        """The released count, clamped at zero (a count is never negative: post-processing)."""
        return None if self.value_unclamped is None else max(self.value_unclamped, Fraction(0))

    @property
    def interval(self) -> tuple[Fraction, Fraction] | None:
        """The 95% interval, its ends clamped at zero (the true count is >= 0)."""
        if self.interval_unclamped is None:
            return None
        lo, hi = self.interval_unclamped
        return max(lo, Fraction(0)), max(hi, Fraction(0))

    @property
    def clamped(self) -> bool:
        """Whether clamping changed the value or the interval."""
        if self.value_unclamped is None or self.interval_unclamped is None:
            return False
        return self.value_unclamped < 0 or self.interval_unclamped[0] < 0

    def release(self) -> Release | None:
        """The noisy count as :class:`~pimento.mechanisms.smooth.Release` (unclamped), None for an exact answer."""
        if self.exact or self.grouped is not None:
            return None
        assert self.interval_unclamped is not None and self.mechanism is not None and self.noise is not None
        assert self.epsilon is not None and self.delta is not None and self.epsilon_noise is not None
        assert self.epsilon_rs_bound is not None and self.beta is not None and self.grid is not None
        assert self.noise_scale_upper is not None and self.confidence is not None and self.value_unclamped is not None
        return Release(
            value=self.value_unclamped, interval=self.interval_unclamped, mechanism=self.mechanism, noise=self.noise,
            epsilon=self.epsilon, delta=self.delta, epsilon_noise=self.epsilon_noise, epsilon_rs_bound=self.epsilon_rs_bound,
            beta=self.beta, grid=self.grid, noise_scale_upper=self.noise_scale_upper, interval_basis=self.interval_basis or "",
            confidence=self.confidence,
        )

    # ------------------------------------------------------------------ JSON

    def to_dict(self) -> dict[str, Any]:
        """The JSON every edge sends (keys per shape pinned by tests/unit/release/test_answer_keys.py)."""
        if self.exact:
            return self._exact_dict()
        if self.grouped is not None:
            return self._grouped_dict()
        data = self._count_dict()
        if self.question is None:
            return data
        return {"question": self.question, **data, **self._asked_fields()}

    def _count_dict(self) -> dict[str, Any]:
        release = self.release()
        assert release is not None
        out = self._released(release.to_dict())
        if self.person_release is not None:
            out["person_release"] = self.person_release.to_dict()
        if self.context is not None:
            out["context"] = self.context.to_dict()
        if self.remainder is not None:
            out["authorized_exact"] = self.authorized_exact
            out["remainder"] = self.remainder
        if self.guarantee_kind is not None:
            out["guarantee_kind"] = self.guarantee_kind
        return clamp_count(out)  # a count is never negative: post-processing, said in `clamped`

    def _grouped_dict(self) -> dict[str, Any]:
        assert self.grouped is not None
        data = self._released(self.grouped.to_dict())
        if self.question is None:
            return data
        return {"question": self.question, **data, **self._asked_fields()}

    def _asked_fields(self) -> dict[str, Any]:
        """A question's noisy answer: the SQL chosen, what the synthetic copy showed, the end-to-end guarantee, the search."""
        search = self.search
        assert search is not None and self.end_to_end is not None  # a question's noisy answer has both
        return {
            "chosen_sql": self.chosen_sql or search.result.sql,
            "synthetic_rs": self.synthetic_rs,
            **({"synthetic_crs": self.synthetic_crs} if self.synthetic_crs is not None else {}),
            "synthetic_shapley": dict(self.synthetic_shapley),
            "avoided_sql": self.avoided_sql,
            "guarantee": self.end_to_end.to_dict(),
            "search": search.to_dict(),
            "seconds": round(self.seconds or 0.0, 4),
        }

    def _released(self, body: dict[str, Any]) -> dict[str, Any]:
        """A noisy answer's keys in their order: who and what was asked, ``body`` (the release), then the ledger's."""
        assert self.budget_left is not None
        return {
            "sql": self.sql,
            "analyst": self.analyst,
            "mode": str(self.mode),
            **body,
            "cached": self.cached,
            "charge_id": self.charge_id,
            "budget_left": {"epsilon": format_number(self.budget_left.epsilon), "delta": format_number(self.budget_left.delta)},
            "neighbours": None if self.neighbours is None else str(self.neighbours),
            "unit": self.unit,
        }

    def _exact_dict(self) -> dict[str, Any]:
        return {
            **({"provenance": self.provenance} if self.provenance is not None else {}),
            "mode": str(self.mode),
            "sql": self.sql,
            "analyst": self.analyst,
            "context": self.context.to_dict() if self.context is not None else None,
            "policy": self.policy,
            "columns": list(self.columns),
            "rows": [list(r) for r in self.rows],
            "guarantee": self.guarantee_kind,
        }
