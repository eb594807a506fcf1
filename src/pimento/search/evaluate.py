"""Evaluation of completed queries on the synthetic database: execution clusters and sensitivity.

Everything here reads the synthetic engine only. Answers are bucketed into execution clusters
C_y (distinct queries with the same bucketed answer); each cluster keeps its incumbent, the
formulation of lowest predicted error (:class:`ErrorModel`: by default RS itself, the paper's
criterion; the release layer passes the noise of the mechanism it would use,
:mod:`pimento.release.predicted_error`). RS, its maximisers and the Shapley attribution come from
:mod:`pimento.sensitivity` and are cached per query, as are answers and predicted errors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any, Protocol

from pimento.engines import Engine
from pimento.errors import PimentoError
from pimento.schema import Catalog
from pimento.sql.ir import CountQuery

__all__ = [
    "RS_AS_ERROR",
    "Clusters",
    "ErrorModel",
    "Evaluation",
    "QueryEvaluator",
    "RsAsError",
    "SensitivityInfo",
    "SensitivityOracle",
    "bucket",
]


@dataclass(frozen=True)
class SensitivityInfo:
    """RS of a query on the synthetic database and each relation's Shapley share (by alias)."""

    rs: float
    shapley: dict[str, float]


class SensitivityOracle(Protocol):
    def __call__(self, query: CountQuery) -> SensitivityInfo: ...


class ErrorModel(Protocol):
    """What the search compares formulations by: a predicted error on the synthetic copy, lower is better.

    ``error(query, rs)``: the predicted error of releasing ``query`` (``rs``: its RS on the copy,
    for a model that needs it). ``floor(query, rs)``: a lower bound on the predicted error of
    every query the search can grow from the prefix ``query`` by adding relations (its RS on the
    copy is ``rs``; RS does not fall when a relation is added under containment), or None when
    no sound bound is known (nothing is pruned then). ``basis``: what the number is, in words.
    A model may raise a PimentoError (a formulation it cannot release): its error is then infinite.
    """

    @property
    def basis(self) -> str: ...

    def error(self, query: CountQuery, rs: float) -> float: ...

    def floor(self, query: CountQuery, rs: float) -> float | None: ...


class RsAsError:
    """The paper's criterion: the predicted error is RS itself (monotone in every mechanism's noise at a fixed size)."""

    basis = "residual sensitivity on the synthetic copy"

    def error(self, query: CountQuery, rs: float) -> float:
        return rs

    def floor(self, query: CountQuery, rs: float) -> float | None:
        return rs


#: The default :class:`ErrorModel` (RS), used when the caller passes none.
RS_AS_ERROR = RsAsError()


def residual_oracle(engine: Engine, catalog: Catalog, beta: float, *, attribution: bool = True) -> SensitivityOracle:
    """The default oracle: residual sensitivity computed on ``engine`` (the synthetic database).

    ``attribution=False`` skips the extra T_E and the Shapley values (all shares then 0): enough
    where only RS is compared, such as top-k selection.
    """
    from pimento.sensitivity import residual_sensitivity

    def oracle(query: CountQuery) -> SensitivityInfo:
        result = residual_sensitivity(engine, query, catalog, beta, attribution=attribution)
        return SensitivityInfo(float(result.rs), {k: float(v) for k, v in dict(result.shapley).items()})

    return oracle


def bucket(answer: int, relative: float) -> int:
    """Execution-cluster key of an answer: exact when ``relative`` is 0, else log-width buckets."""
    if relative <= 0 or answer <= 0:
        return int(answer)
    return int(round(math.log1p(answer) / math.log1p(relative))) + 1_000_000_000


@dataclass(frozen=True)
class Evaluation:
    """A completed query's outcome: valid or not, its answer, cluster, RS, Shapley credit and predicted error."""

    query: CountQuery | None
    valid: bool
    reason: str = ""
    answer: int | None = None
    cluster: int | None = None
    sensitivity: SensitivityInfo | None = None
    #: the :class:`ErrorModel`'s predicted error (None without sensitivity; inf where the model refused it)
    error: float | None = None


@dataclass
class Clusters:
    """Execution clusters: distinct valid queries grouped by bucketed answer, with incumbents.

    An incumbent is the member of lowest score seen (the search's predicted error), kept as
    ``(score, query)``; equal scores go to the lower ``tie`` (RS), then to the first seen.
    """

    members: dict[int, list[CountQuery]] = field(default_factory=dict)
    answers: dict[int, int] = field(default_factory=dict)
    incumbents: dict[int, tuple[float, CountQuery]] = field(default_factory=dict)
    first_seen: dict[int, int] = field(default_factory=dict)
    _ties: dict[int, float] = field(default_factory=dict)

    def add(self, key: int, answer: int, query: CountQuery, score: float | None, order: int, tie: float = 0.0) -> None:
        queries = self.members.setdefault(key, [])
        if query not in queries:
            queries.append(query)
        self.answers.setdefault(key, answer)
        self.first_seen.setdefault(key, order)
        if score is None:
            return
        if key not in self.incumbents or (score, tie) < (self.incumbents[key][0], self._ties[key]):
            self.incumbents[key] = (score, query)
            self._ties[key] = tie

    @property
    def valid_queries(self) -> int:
        return sum(len(v) for v in self.members.values())

    def size(self, key: int) -> int:
        return len(self.members.get(key, ()))

    def correctness(self, key: int) -> float:
        """(|C_y| - 1) / (M - 1), and 0 when M <= 1."""
        m = self.valid_queries
        return 0.0 if m <= 1 else (self.size(key) - 1) / (m - 1)

    def max_incumbent(self) -> float | None:
        """The largest incumbent score: a prefix whose extensions all score above it cannot improve any cluster."""
        return max((score for score, _ in self.incumbents.values()), default=None)

    def largest(self) -> int | None:
        """The cluster with most queries; ties go to the one seen first (the best-ranked warm start)."""
        if not self.members:
            return None
        return min(self.members, key=lambda k: (-len(self.members[k]), self.first_seen[k]))


class QueryEvaluator:
    """Runs completed queries on the synthetic engine with caches for answers, sensitivities and predicted errors."""

    def __init__(
        self,
        engine: Engine,
        catalog: Catalog,
        oracle: SensitivityOracle,
        *,
        rs_oracle: SensitivityOracle | None = None,
        error_model: ErrorModel | None = None,
        bucket_relative: float = 0.0,
        timeout_s: float | None = 30.0,
    ):
        self.engine = engine
        self.catalog = catalog
        self.oracle = oracle
        self.error_model: ErrorModel = error_model or RS_AS_ERROR
        self._errors: dict[CountQuery, float] = {}
        #: RS without Shapley values (fewer T_E): for checks that compare RS only, such as pruning.
        self.rs_oracle = rs_oracle or oracle
        self._rs_only: dict[CountQuery, float | PimentoError] = {}
        self.bucket_relative = bucket_relative
        self.timeout_s = timeout_s
        self._answers: dict[CountQuery, int | PimentoError] = {}
        self._sensitivity: dict[CountQuery, SensitivityInfo | PimentoError] = {}
        self.executions = 0
        self.rs_computations = 0

    def answer(self, query: CountQuery) -> int:
        def run() -> int:
            self.executions += 1
            value = self.engine.execute(query.to_sql(self.engine.dialect), timeout_s=self.timeout_s).scalar()
            return int(value or 0)

        return _memo(self._answers, query, run)

    def sensitivity(self, query: CountQuery) -> SensitivityInfo:
        def run() -> SensitivityInfo:
            self.rs_computations += 1
            return self.oracle(query)

        return _memo(self._sensitivity, query, run)

    def rs(self, query: CountQuery) -> float:
        """RS alone: from the full computation when it was done, else the cheaper RS-only oracle."""
        if query in self._sensitivity:
            return self.sensitivity(query).rs

        def run() -> float:
            self.rs_computations += 1
            return self.rs_oracle(query).rs

        return _memo(self._rs_only, query, run)

    def error(self, query: CountQuery) -> float:
        """The predicted error of releasing ``query`` (:class:`ErrorModel`), from its RS; inf where the model refuses it.

        Raises what computing RS raises (the query is then no candidate at all).
        """
        if query not in self._errors:
            rs = self.rs(query)
            try:
                self._errors[query] = float(self.error_model.error(query, rs))
            except PimentoError:
                self._errors[query] = math.inf
        return self._errors[query]

    def floor(self, query: CountQuery) -> float | None:
        """The model's lower bound on the predicted error of every query grown from the prefix ``query`` (None: none known)."""
        try:
            return self.error_model.floor(query, self.rs(query))
        except PimentoError:
            return None

    def evaluate(self, query: CountQuery | None, *, with_sensitivity: bool = True) -> Evaluation:
        if query is None:
            return Evaluation(None, False, "incomplete or disconnected query")
        try:
            answer = self.answer(query)
        except PimentoError as exc:
            return Evaluation(query, False, f"does not execute: {exc.one_line()}")
        info = None
        if with_sensitivity:
            try:
                info = self.sensitivity(query)
            except PimentoError as exc:
                return Evaluation(query, False, f"no residual sensitivity: {exc.one_line()}")
        error = self.error(query) if info is not None else None
        return Evaluation(query, True, "", answer, bucket(answer, self.bucket_relative), info, error)


def _memo(cache: dict, key: CountQuery, compute: Callable[[], Any]) -> Any:
    """``compute()`` once per key; a PimentoError is remembered and raised again, like a value."""
    if key not in cache:
        try:
            cache[key] = compute()
        except PimentoError as exc:
            cache[key] = exc
    value = cache[key]
    if isinstance(value, PimentoError):
        raise value
    return value
