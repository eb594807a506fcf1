"""``Session``: one private database, its ledger, and the release of counting SQL queries.

    >>> with Session("shop.duckdb") as s:                                  # doctest: +SKIP
    ...     answer = s.release_sql("SELECT COUNT(*) FROM orders", epsilon="0.5", delta="1e-6", analyst="ann")
    ...     answer.release.value, answer.release.interval, answer.budget_left
    ...     asked = s.ask("How many orders?", synthetic="shop.syn.duckdb", epsilon="1", delta="1e-6")

Order of work in :meth:`Session.release_sql`, chosen so that bad input and refused
requests spend nothing and read as little as possible:

1. parameters -> mechanism (PrivacyParameterError: nothing read, nothing spent);
2. analyst known? (BudgetError);
3. SQL -> CountQuery (SqlError / UnsupportedQuery);
4. answer cache: an identical earlier request returns its answer, free;
5. budget left >= cost? (BudgetError, before any private data is read);
6. true count and residual sensitivity at the mechanism's beta, on the private data;
7. :func:`pimento.mechanisms.guarded_release`: charge (durable) -> noise -> cache + audit -> return.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pimento.config import Settings
from pimento.errors import BudgetError, InternalError
from pimento.mechanisms import GlobalLaplace, GuardedAnswer, Ledger, guarded_release, mechanism_for, mechanism_for_query
from pimento.mechanisms.guarded import cached_release
from pimento.mechanisms.budget import NumberLike
from pimento.mechanisms.samplers import RandomSource

__all__ = ["SqlAnswer", "Session"]

DEFAULT_ANALYST = "default"


@dataclass(frozen=True)
class SqlAnswer:
    """A released SQL count: the guarded answer plus the query as it was counted."""

    answer: GuardedAnswer
    sql: str
    analyst: str
    mode: str = "dp"

    @property
    def release(self):  # type: ignore[no-untyped-def]
        return self.answer.release

    @property
    def budget_left(self):  # type: ignore[no-untyped-def]
        return self.answer.budget_left

    def to_dict(self) -> dict[str, Any]:
        return {"sql": self.sql, "analyst": self.analyst, "mode": self.mode, **self.answer.to_dict()}


class Session:
    """A private database opened read-only, with its budget ledger."""

    def __init__(
        self,
        db: str | Path,
        *,
        config: str | Path | Settings | None = None,
        private: list[str] | None = None,
        analyst: str = DEFAULT_ANALYST,
        rng: RandomSource | None = None,
    ) -> None:
        from pimento.engines.database import load_database

        self.database = load_database(db, read_only=True, private=private, config=config)
        self.location = str(self.database.location)
        self.ledger = Ledger.for_database(self.location, self.database.settings)
        self.analyst = analyst
        self._rng = rng

    def close(self) -> None:
        self.ledger.close()
        self.database.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def release_sql(
        self,
        sql: str,
        epsilon: NumberLike,
        delta: NumberLike | None = None,
        *,
        analyst: str | None = None,
        question: str | None = None,
    ) -> SqlAnswer:
        """Release a counting SQL query with DP: (epsilon, delta) Laplace, or pure epsilon without delta."""
        from pimento.sql import parse_count_query

        analyst = analyst or self.analyst
        mechanism = mechanism_for(epsilon, delta)
        cost = mechanism.privacy_cost()
        self.ledger.analyst_cap(analyst)  # unknown analyst -> BudgetError, nothing read
        catalog = self.database.catalog
        engine = self.database.engine
        query = parse_count_query(sql, catalog)
        # A single-relation count has global sensitivity 1 (structure, not data): plain Laplace.
        mechanism = mechanism_for_query(epsilon, delta, relations=len(query.relations))
        cost = mechanism.privacy_cost()
        counted_sql = query.to_sql(engine.dialect)
        hit = cached_release(self.ledger, mechanism, analyst=analyst, database=self.location, sql=counted_sql)
        if hit is not None:
            return SqlAnswer(hit, counted_sql, analyst)
        left = self.ledger.remaining(self.location, analyst)
        if not cost.fits_within(left):
            raise BudgetError(f"budget exhausted: this request costs {cost} but only {left} is left for analyst {analyst!r}; nothing was spent")
        from pimento import sensitivity

        true_value = _as_int(engine.execute(counted_sql).scalar())
        if isinstance(mechanism, GlobalLaplace):
            rs: Any = mechanism.gs
        else:
            rs = sensitivity.residual_sensitivity(engine, query, catalog, mechanism.beta_float(), attribution=False).rs
        answer = guarded_release(
            self.ledger,
            mechanism,
            analyst=analyst,
            database=self.location,
            sql=counted_sql,
            true_value=true_value,
            rs=rs,
            question=question,
            rng=self._rng,
        )
        return SqlAnswer(answer, counted_sql, analyst)


    def ask(
        self,
        question: str,
        *,
        synthetic: str | Path | None = None,
        epsilon: NumberLike,
        delta: NumberLike | None = None,
        analyst: str | None = None,
        seed_sql: tuple[str, ...] = (),
        k: int = 10,
        config: Any = None,
        llm: str | None = None,
    ) -> Any:
        """Answer a natural-language counting question with DP (``pimento ask --mode dp``).

        The sensitivity-guided search runs on the DP synthetic copy only (``synthetic``, else
        ``[synth] path`` in pimento.toml, else ``DB.synthetic.duckdb`` beside the database; it never
        reads this session's private database); the chosen query is then released with
        :meth:`release_sql`, which charges the ledger before the answer exists. Returns a
        :class:`pimento.release.ask.AskAnswer` (answer, chosen SQL and RS, alternatives, cost).
        A question with no usable formulation raises a UserError and spends nothing.
        """
        from pimento.release.ask import ask_dp

        return ask_dp(
            self,
            question,
            synthetic=synthetic,
            epsilon=epsilon,
            delta=delta,
            analyst=analyst,
            seed_sql=tuple(seed_sql),
            k=k,
            config=config,
            llm=llm,
        )


def _as_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            as_int = int(value)  # type: ignore[call-overload]
        except (TypeError, ValueError):
            raise InternalError(f"a COUNT returned {value!r}, not an integer") from None
        if as_int != value:
            raise InternalError(f"a COUNT returned {value!r}, not an integer")
        return as_int
    return value
