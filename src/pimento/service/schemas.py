"""The response bodies of the analyst's routes, as the OpenAPI document describes them.

Each route still returns the dict that :class:`pimento.service.deployment.Deployment` (and
:meth:`pimento.release.answers.Answer.to_dict`) writes: these models document it (``responses``
of the route), they never filter or convert it, so the JSON keys and numbers stay exactly as
pinned (``tests/unit/release/test_answer_keys.py``). ``tests/unit/service/test_response_models.py``
validates real responses against them and checks that each key sent is a field described here.
Keys that only some answers carry (a mode's, a question's) are optional.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AnswerResponse",
    "BudgetPart",
    "BudgetResponse",
    "ContextBody",
    "HistoryResponse",
    "HistoryRow",
    "MeResponse",
    "PreviewResponse",
    "SqlPreviewResponse",
]

Number = int | float


class _Described(BaseModel):
    """A response body: documented, never used to rewrite the JSON (module docs)."""

    model_config = ConfigDict(extra="allow")


class ContextBody(_Described):
    sender: str
    recipient: str
    purpose: str


class BudgetPart(_Described):
    """A budget: exact texts (the ledger's arithmetic) and their floats (for display)."""

    epsilon: str = Field(..., description="exact decimal or fraction, e.g. \"2.5\" or \"10/3\"")
    delta: str
    epsilon_float: float | None = None
    delta_float: float | None = None


class MeResponse(_Described):
    analyst: str
    principal: str | None = Field(..., description="the policy principal the key stands for (the recipient), or null")
    key_id: str
    modes: list[str] = Field(..., description="the release modes this deployment serves")
    senders: list[str]
    purposes: list[str]
    context: Any = Field(..., description="the key's context binding (senders, purposes)")


class BudgetResponse(_Described):
    analyst: str
    principal: str | None
    cap: BudgetPart = Field(..., description="your own cap ([ledger] analyst_epsilon_cap, else analyst_share of the database cap)")
    spent: BudgetPart
    left: BudgetPart = Field(..., description="what you may still spend: the smaller of your cap's and the database-wide cap's remainders")
    binds: Literal["analyst", "database"] = Field(
        ..., description="which cap limits `left`: your own, or the database-wide one (then `left` is what is left for all analysts together)")


class HistoryRow(_Described):
    time: str
    charge_id: int | None
    question: str | None
    sql: str | None
    mode: str | None = Field(..., description="the release mode: dp, split, contextual (or a plug-in mode's name)")
    part: Literal["count", "remainder"] | None = Field(
        None, description="what `value` estimates: the whole count, or (split) the remainder beside the exact authorized part")
    authorized_exact: int | None = Field(None, description="split: the authorized part, exact (value + authorized_exact estimates the count)")
    epsilon: str | None
    delta: str | None
    noise: str | None
    mechanism: str | None
    value: Number | None
    interval: list[Number] | None
    clamped: bool | None = None
    value_unclamped: Number | None = None


class HistoryResponse(_Described):
    analyst: str
    answers: list[HistoryRow] = Field(..., description="your released answers, newest first")


class GroupRow(_Described):
    """One group of a grouped or summed answer: its key and its noisy value with an interval from public quantities."""

    key: list[Any] = Field(..., description="the group's values, in `group_by` order")
    value: Number | None = Field(..., description="the noisy value (a count or a sum of non-negatives is clamped at zero; AVG: null "
                                 "when the noisy count is below 1)")
    value_exact: str | None
    interval: list[Number] = Field(..., description="the interval at `confidence` (95%; AVG: 90%)")
    interval_exact: list[str]
    sum: Number | None = Field(None, description="AVG: the group's noisy clipped sum")
    count: Number | None = Field(None, description="AVG: the group's noisy count of non-NULL values")


class AnswerResponse(_Described):
    """A release: a noisy count (modes dp, split, contextual) or, in mode ci, exact rows of the authorized data."""

    mode: str
    sql: str
    analyst: str
    question: str | None = Field(None, description="asks only: the question")
    value: Number | None = Field(None, description="the released count (noisy; clamped at zero)")
    value_exact: str | None = None
    interval: list[Number] | None = Field(None, description="95% interval")
    interval_exact: list[str] | None = None
    confidence: float | None = None
    interval_basis: str | None = None
    noise_scale_upper: float | None = None
    noise_scale_upper_exact: str | None = None
    mechanism: str | None = None
    noise: str | None = None
    epsilon: str | None = None
    delta: str | None = None
    epsilon_noise: str | None = None
    epsilon_rs_bound: str | None = None
    beta: str | None = None
    grid: str | None = None
    cached: bool | None = Field(None, description="an identical earlier request's answer, at no new cost")
    charge_id: int | None = None
    budget_left: BudgetPart | None = None
    neighbours: str | None = None
    unit: str | None = Field(None, description='the privacy unit: "tuple" (one row) or the relation of one person ([privacy] unit)')
    person_release: dict[str, Any] | None = Field(None, description="under a person unit: the mechanism chosen and why, its public "
                                                  "thresholds, the synthetic copy's predicted errors (docs/privacy-unit.md)")
    context: ContextBody | None = None
    authorized_exact: int | None = Field(None, description="split: the authorized part, exact; `value` is the noisy remainder")
    remainder: str | None = Field(None, description="split: what the remainder counts, in words")
    guarantee_kind: str | None = None
    value_unclamped: Number | None = None
    clamped: bool | None = None
    chosen_sql: str | None = Field(None, description="asks: the SQL the question was read as")
    synthetic_rs: float | None = None
    synthetic_crs: float | None = None
    synthetic_shapley: dict[str, float] | None = None
    avoided_sql: str | None = None
    guarantee: Any = Field(None, description="asks: the end-to-end guarantee (object); mode ci: its text")
    search: Any = None
    seconds: float | None = None
    policy: str | None = Field(None, description="mode ci: the policy's name")
    columns: list[str] | None = Field(None, description="mode ci: the columns of `rows`")
    rows: list[list[Any]] | None = Field(None, description="mode ci: the authorized rows, exact")
    provenance: Any = None
    aggregate: Literal["count", "sum", "avg"] | None = Field(None, description="a grouped or summed answer (GROUP BY, SUM, AVG): its aggregate")
    column: str | None = Field(None, description="SUM/AVG: the column summed, clipped to `bounds`")
    group_by: list[str] | None = Field(None, description="the GROUP BY columns (empty: one value)")
    bounds: list[str] | None = Field(None, description="SUM/AVG: the clipping interval [lower, upper] used: the custodian's [bounds], or "
                                     "the narrower one the request gave (`bounds`)")
    domain: str | None = Field(None, description="where the groups come from: a declared or public domain (every value, zeros included), "
                               "or partition selection")
    groups: list[GroupRow] | None = Field(None, description="one entry per group: key, noisy value and interval")
    budget_split: str | None = Field(None, description="AVG: how epsilon and delta were split between the SUM and the COUNT")
    releases: list[dict[str, Any]] | None = Field(None, description="how each noisy vector (sum, count) was released: mechanism, "
                                                  "epsilon, beta, the DP bound of its noise scale")
    partition_selection: dict[str, Any] | None = Field(None, description="private group keys: the threshold and the probability that "
                                                       "a group of a given size is shown")
    clipped_on_copy: dict[str, Any] | None = Field(None, description="SUM/AVG: how many rows the synthetic copy predicts are clipped")


class PreviewResponse(_Described):
    """``POST /v1/ask/preview``: how a question will be read, on the synthetic copy; nothing spent."""

    question: str
    mode: str
    chosen_sql: str
    reading: str
    confidence: str
    readings_proposed: int
    synthetic_answer: Any = Field(None, description="a count: its answer on the synthetic copy (a grouped question: absent)")
    synthetic_rs: float
    synthetic_crs: float | None = None
    synthetic_shapley: dict[str, float] = Field(default_factory=dict, description="a count over a join: the relations' Shapley "
                                                "shares of its sensitivity on the synthetic copy")
    estimated_half_width_95: Number | None
    estimate_basis: str
    predicted_relative_error: Number | None = Field(None, description="the noise's 95% half-width over the synthetic copy's answer")
    warn_relative_error: Number | None = Field(None, description="the custodian's threshold above which the answer is said to be mostly noise")
    epsilon_for_10_percent: str | None = Field(None, description="the smallest planner epsilon predicted to give +-10%, if any")
    noise_warning: str | None = Field(None, description="said when the answer would be mostly noise; null otherwise")
    cost: dict[str, str]
    mechanism: str
    guarantee_if_confirmed: dict[str, Any]
    alternatives: list[dict[str, Any]]
    notes: list[str]
    search_seconds: float
    spent: dict[str, str]
    # a question read as grouped or summed (docs/grouped.md): the plan's public fields and the whole answer's predicted error
    aggregate: Literal["count", "sum", "avg"] | None = Field(None, description="a grouped or summed reading: its aggregate")
    group_by: list[str] | None = Field(None, description="a grouped reading: its GROUP BY columns")
    groups: int | None = Field(None, description="a grouped reading: how many groups will be released (null under partition selection)")
    domain: str | None = Field(None, description="a grouped reading: where its groups come from (public inputs)")
    budget_split: str | None = Field(None, description="AVG: how the budget is split between its SUM and its COUNT")
    partition_selection: dict[str, Any] | None = Field(None, description="a grouped reading of private keys: partition selection applies")
    clipped_on_copy: dict[str, Any] | None = Field(None, description="SUM/AVG: the rows the synthetic copy predicts are clipped")
    predicted_error: dict[str, Any] | None = Field(None, description="a grouped reading: the whole answer's predicted error on the copy")
    formulations: list[dict[str, Any]] | None = Field(None, description="a grouped reading: each proposed formulation's rank, answer "
                                                      "cluster and predicted error on the synthetic copy")
    refused_formulations: list[str] | None = Field(None, description="a grouped reading: formulations the release would refuse, why")
    avoided_sql: str | None = Field(None, description="a grouped reading: the parser's top reading when another was chosen")
    planner: list[dict[str, Any]] = Field(..., description="what each epsilon buys: the estimated 95% half-width on the synthetic copy")
    budget_left: dict[str, str]


class SqlPreviewResponse(_Described):
    """``POST /v1/sql/preview``: what a SQL request costs and what it buys, on the synthetic copy; nothing spent."""

    sql: str
    mode: str
    context: ContextBody | None
    budget_left: dict[str, str]
    spent: dict[str, str]
    cost: dict[str, str]
    notes: list[str]
    normalized_sql: str | None = Field(None, description="the counting query as it will be run (not mode ci)")
    planner: list[dict[str, Any]] | None = None
    estimated_half_width_95: Number | None = None
    synthetic: dict[str, Any] | None = Field(None, description="the count on the synthetic copy and the copy's cost; null without a usable copy")
    predicted_relative_error: Number | None = Field(None, description="the noise's 95% half-width over the synthetic copy's answer")
    warn_relative_error: Number | None = Field(None, description="the custodian's threshold above which the answer is said to be mostly noise")
    epsilon_for_10_percent: str | None = Field(None, description="the smallest planner epsilon predicted to give +-10%, if any")
    noise_warning: str | None = Field(None, description="said when the answer would be mostly noise; null otherwise")
    groups: int | None = Field(None, description="a grouped query: how many groups will be released (null under partition selection)")
    domain: str | None = Field(None, description="a grouped query: where its groups come from (public inputs)")
    budget_split: str | None = Field(None, description="AVG: how the budget is split between its SUM and its COUNT")
    clipped_on_copy: dict[str, Any] | None = Field(None, description="SUM/AVG: the rows the synthetic copy predicts are clipped")
    predicted_error: dict[str, Any] | None = Field(None, description="a grouped query: the whole answer's predicted error on the copy")
    bounds: list[str] | None = Field(None, description="SUM/AVG: the clipping interval [lower, upper] the release will use: the "
                                     "custodian's [bounds], or the narrower one the request gave")
