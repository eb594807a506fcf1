"""Zero-shot generation: K samples of SQL for a counting question, parsed into CountQuery.

Each sample is asked as ``{"sql": "..."}`` JSON (one repair round for malformed JSON), then
parsed with :func:`pimento.sql.parse_count_query`. Samples that are not usable are dropped
and counted by reason, never raised: a weak model's garbage is data, not a crash.

With ``aggregate=True`` the prompt asks for a grouped COUNT, or a SUM or AVG of a column
(``zero_shot_messages(..., aggregate=True)``, answered as :class:`AggregateSqlAnswer`), and
samples are parsed with :func:`pimento.sql.parse.parse_aggregate_query` into
:class:`~pimento.sql.ir.AggregateQuery`; the same reasons apply (``unsupported:having``,
``unsupported:order_by``, ``unsupported:other_aggregate`` for a MAX, ...).

Reasons (keys of :attr:`ZeroShotResult.dropped`):

* ``empty``, ``not_json``, ``schema``: the answer (after the repair round) is not ``{"sql": ...}``;
* ``sql_syntax``: the SQL does not parse or names unknown columns/relations;
* ``catalog``: the SQL names a table that does not exist;
* ``unsupported:<construct>``: valid SQL outside the DP-compatible class (``construct``
  as in :data:`pimento.sql.parse.REJECTION_REASONS`, e.g. ``unsupported:group_by``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar, overload

from pimento.errors import CatalogError, SqlError, UnsupportedQuery
from pimento.llm.base import Backend
from pimento.llm.prompts import AggregateSqlAnswer, SqlAnswer, SyntheticValues, zero_shot_messages
from pimento.llm.structured import complete_structured
from pimento.llm.usage import Usage
from pimento.schema import Catalog
from pimento.sql.ir import AggregateQuery, CountQuery

__all__ = ["Candidate", "Rejected", "ZeroShotResult", "generate_zero_shot"]

#: The parsed query of a sample: a CountQuery, or an AggregateQuery (``aggregate=True``).
Q = TypeVar("Q", CountQuery, AggregateQuery)
Parser = Callable[[str, Catalog], CountQuery]
AggregateParser = Callable[[str, Catalog], AggregateQuery]


@dataclass(frozen=True)
class Candidate(Generic[Q]):
    """A usable sample: its index among the K drawn, the SQL text, and the parsed query."""

    index: int
    sql: str
    query: Q
    repaired: bool = False


@dataclass(frozen=True)
class Rejected:
    """A dropped sample: index, reason (see module docstring), detail, and the raw answer."""

    index: int
    reason: str
    detail: str
    text: str


@dataclass
class ZeroShotResult(Generic[Q]):
    """Candidates in sample order, dropped samples counted by reason, and the usage."""

    candidates: list[Candidate[Q]]
    rejected: list[Rejected]
    usage: Usage
    k: int
    dropped: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.dropped = Counter(r.reason for r in self.rejected)

    @property
    def distinct_queries(self) -> list[Q]:
        """Parsed queries without repeats, in order of first appearance."""
        return list(dict.fromkeys(c.query for c in self.candidates))

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "valid": len(self.candidates),
            "invalid": len(self.rejected),
            "dropped": dict(sorted(self.dropped.items())),
            "candidates": [{"index": c.index, "sql": c.sql, "repaired": c.repaired} for c in self.candidates],
            "usage": self.usage.to_dict(),
        }


@overload
def generate_zero_shot(
    backend: Backend,
    catalog: Catalog,
    question: str,
    *,
    k: int = ...,
    temperature: float = ...,
    max_tokens: int = ...,
    values: SyntheticValues | None = ...,
    policy: str | None = ...,
    dialect: str = ...,
    low_sensitivity: bool = ...,
    usage: Usage | None = ...,
    seed: int | None = ...,
    parse: Parser | None = ...,
    aggregate: Literal[False] = ...,
) -> ZeroShotResult[CountQuery]: ...


@overload
def generate_zero_shot(
    backend: Backend,
    catalog: Catalog,
    question: str,
    *,
    k: int = ...,
    temperature: float = ...,
    max_tokens: int = ...,
    values: SyntheticValues | None = ...,
    policy: str | None = ...,
    dialect: str = ...,
    low_sensitivity: bool = ...,
    usage: Usage | None = ...,
    seed: int | None = ...,
    parse: AggregateParser | None = ...,
    aggregate: Literal[True],
) -> ZeroShotResult[AggregateQuery]: ...


def generate_zero_shot(
    backend: Backend,
    catalog: Catalog,
    question: str,
    *,
    k: int = 5,
    temperature: float = 0.7,
    max_tokens: int = 256,
    values: SyntheticValues | None = None,
    policy: str | None = None,
    dialect: str = "duckdb",
    low_sensitivity: bool = False,
    usage: Usage | None = None,
    seed: int | None = None,
    parse: Parser | AggregateParser | None = None,
    aggregate: bool = False,
) -> ZeroShotResult[CountQuery] | ZeroShotResult[AggregateQuery]:
    """Draw ``k`` SQL samples for ``question`` and keep those in the DP-compatible counting class.

    ``usage`` accumulates calls and tokens (pass the question's accumulator); ``parse``
    defaults to :func:`pimento.sql.parse_count_query`. With ``aggregate=True`` the prompt asks
    for a grouped COUNT or a SUM/AVG, and ``parse`` defaults to
    :func:`pimento.sql.parse.parse_aggregate_query`. Transport failures (endpoint
    unreachable, timeout) raise :class:`~pimento.errors.LLMError`; bad answers are counted.
    """
    if parse is None:
        if aggregate:
            from pimento.sql.parse import parse_aggregate_query

            parse = parse_aggregate_query
        else:
            from pimento.sql import parse_count_query

            parse = parse_count_query
    usage = usage if usage is not None else Usage()
    messages = zero_shot_messages(
        catalog, question, values=values, policy=policy, dialect=dialect, low_sensitivity=low_sensitivity, aggregate=aggregate
    )
    answer = AggregateSqlAnswer if aggregate else SqlAnswer
    samples = complete_structured(
        backend, messages, answer, n=k, temperature=temperature, max_tokens=max_tokens, usage=usage, seed=seed
    )
    candidates: list[Candidate[Any]] = []
    rejected: list[Rejected] = []
    for sample in samples:
        if sample.value is None:
            rejected.append(Rejected(sample.index, sample.error_kind or "schema", sample.error or "", sample.text))
            continue
        sql = _clean_sql(sample.value.sql)
        try:
            query = parse(sql, catalog)
        except UnsupportedQuery as exc:
            rejected.append(Rejected(sample.index, f"unsupported:{exc.construct}", exc.one_line(), sample.text))
        except SqlError as exc:
            rejected.append(Rejected(sample.index, "sql_syntax", exc.one_line(), sample.text))
        except CatalogError as exc:
            rejected.append(Rejected(sample.index, "catalog", exc.one_line(), sample.text))
        else:
            candidates.append(Candidate(sample.index, sql, query, repaired=sample.repaired))
    return ZeroShotResult[Any](candidates, rejected, usage, k)


def _clean_sql(sql: str) -> str:
    """Strip code fences and a trailing semicolon that models add around SQL."""
    text = sql.strip()
    if text.startswith("```"):
        text = text.strip("`")
        if text.lower().startswith("sql"):
            text = text[3:]
    return text.strip().rstrip(";").strip()
