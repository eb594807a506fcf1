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


class PreviewResponse(_Described):
    """``POST /v1/ask/preview``: how a question will be read, on the synthetic copy; nothing spent."""

    question: str
    mode: str
    chosen_sql: str
    reading: str
    confidence: str
    readings_proposed: int
    synthetic_answer: Any
    synthetic_rs: float
    synthetic_crs: float | None = None
    synthetic_shapley: dict[str, float]
    estimated_half_width_95: Number | None
    estimate_basis: str
    cost: dict[str, str]
    mechanism: str
    guarantee_if_confirmed: dict[str, Any]
    alternatives: list[dict[str, Any]]
    notes: list[str]
    search_seconds: float
    spent: dict[str, str]
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
