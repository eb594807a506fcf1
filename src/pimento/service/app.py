"""The FastAPI application: the analyst's API (``/v1/...``), the custodian's API and the web page.

Authentication: ``Authorization: Bearer <key>``. An analyst key (``pimento keys add``) fixes the
analyst, their budget, their principal and the context they may use (senders, purposes); no request
names an analyst or a recipient, and a request picks a sender or purpose only among the key's.
Failed sign-ins are counted per client address: past ``auth_burst`` (refilled at ``auth_rate``)
they are answered 429 instead of 401. The custodian token
(``PIMENTO_CUSTODIAN_TOKEN`` or ``--custodian-token-file``, kept only as its SHA-256 here) opens
the custodian endpoints; without one they are off. See docs/service-api.md.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any, overload

from fastapi import APIRouter, Depends, FastAPI, Query, Request, Security
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response
from fastapi.security import HTTPBearer
from pydantic import BaseModel, ConfigDict, Field

from pimento import __version__
from pimento.errors import ServiceError
from pimento.release.request import Mode
from pimento.service.deployment import Deployment
from pimento.service.errors import install_error_handlers
from pimento.service.keys import ApiKey
from pimento.service.api_docs import reference
from pimento.service.limits import BodySizeLimit, RateLimiter
from pimento.service import schemas  # the response models, documentation only (kept out of this namespace of request bodies)
from pimento.service.noise_check import check_question, check_sql
from pimento.service.sql_preview import sql_preview
from pimento.service.shared_limits import SharedRateLimiter, SqliteState, StateStore, state_store_for
from pimento.service.shared_sessions import SharedSessions
from pimento.service.web import install_web, web_of

__all__ = ["CatalogResponse", "Guard", "ServiceOptions", "analyst_key", "create_app", "custodian_token", "deployment_of", "include_routes", "router", "token_digest"]

MAX_QUESTION_CHARS = 2_000
CUSTODIAN = "custodian"


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass
class ServiceOptions:
    """How the custodian runs the service (``pimento serve`` options)."""

    custodian_token_sha256: str | None = None
    max_body_bytes: int = 64 * 1024
    rate: float = 2.0
    burst: int = 20
    #: failed sign-ins per client address
    auth_rate: float = 1.0
    auth_burst: int = 20
    secure_cookies: bool = False
    #: rate limits and web sign-in sessions kept beside the ledger and shared by every process serving
    #: it (``pimento serve`` sets it: :mod:`pimento.service.shared_limits`); False: this process's memory
    shared_limits: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


#: What ``accept_noise`` does (:mod:`pimento.service.noise_check`).
ACCEPT_NOISE = ("spend even when the answer is predicted (on the synthetic copy) to be mostly noise; false: such a release is "
                "refused with 409 MostlyNoiseError before anything is spent (ignored by the previews)")


class _Body(BaseModel):
    """A request body: no unknown field, and strict types (``"epsilon": true`` or ``[1]`` is a 422, never
    coerced to 1; a number is never read as text nor text as a number) -- refused before anything is charged."""

    model_config = ConfigDict(extra="forbid", strict=True)


class _Mode(_Body):
    # the one list of modes (Mode); strict=False lets the JSON text "ci" be read as Mode.CI, nothing else
    mode: Mode = Field(Mode.DP, strict=False, description="release mode (ci, split, contextual need the deployment's policy)")
    sender: str | None = Field(None, max_length=200, description="ci/split/contextual: one of the senders your key is bound to "
                               "(GET /v1/me); may be left out when the key has one")
    purpose: str | None = Field(None, max_length=200, description="ci/split/contextual: one of the purposes your key is bound to "
                                "(GET /v1/me); may be left out when the key has one")


#: ``bounds`` of a body: the analyst's narrower clipping intervals (:func:`pimento.release.request.parse_bounds`).
Bounds = dict[Annotated[str, Field(max_length=200)], Annotated[list[str | int | float], Field(min_length=2, max_length=2)]] | None
BOUNDS_FIELD = ('clipping bounds narrower than the custodian\'s [bounds] for this request\'s SUM or AVG: {"Table.column": '
                '["LOWER", "UPPER"]} (exact decimals; refused with 422, before anything is spent, if wider or for another column)')


def _narrowing(bounds: Bounds) -> dict[str, Any]:
    """The ``bounds`` keyword of a deployment call, given only when the body has bounds."""
    return {} if bounds is None else {"bounds": bounds}


class SqlRequest(_Mode):
    sql: str = Field(..., min_length=1, description="a counting query: SELECT COUNT(*) FROM ... [JOIN ...] [WHERE ...] (mode ci: any SELECT)")
    epsilon: str | float | None = Field(None, description="epsilon of this release, e.g. \"0.5\" (exact decimal or 1/3); not for mode ci")
    delta: str | float | None = Field(None, description="(eps, delta)-DP with Laplace noise; omit for pure epsilon-DP")
    bounds: Bounds = Field(None, max_length=20, description=BOUNDS_FIELD)
    accept_noise: bool = Field(False, description=ACCEPT_NOISE)


class AskRequest(_Mode):
    question: str = Field(..., min_length=1, max_length=MAX_QUESTION_CHARS, description="a counting question in English")
    epsilon: str | float = Field(..., description="epsilon of the release (sets the search's beta in every mode)")
    delta: str | float | None = Field(None, description="delta of the release; omit for pure epsilon-DP")
    expect_sql: str | None = Field(None, min_length=1, description="the chosen_sql of a preview (POST /v1/ask/preview with the same "
                                   "fields): the question is answered only if it is still read as this SQL; otherwise it is "
                                   "refused before anything is charged")
    accept_noise: bool = Field(False, description=ACCEPT_NOISE)
    bounds: Bounds = Field(None, max_length=20, description=BOUNDS_FIELD + "; used when the question is read as a SUM or AVG of the column")


class PreviewRequest(_Mode):
    question: str = Field(..., min_length=1, max_length=MAX_QUESTION_CHARS, description="a counting question in English")
    epsilon: str | float = Field(..., description="epsilon of the release")
    delta: str | float | None = Field(None, description="delta of the release; omit for pure epsilon-DP")
    bounds: Bounds = Field(None, max_length=20, description=BOUNDS_FIELD + "; used when the question is read as a SUM or AVG of the column")


class KeyRequest(_Body):
    analyst: str = Field(..., min_length=1, max_length=64)
    principal: str | None = Field(None, max_length=200, description="the policy principal this analyst is (the recipient), e.g. employee:17")
    senders: list[Annotated[str, Field(max_length=200)]] = Field(
        default_factory=list, max_length=100, description="the senders the key may use in modes ci/split/contextual, KIND:ID each")
    purposes: list[Annotated[str, Field(max_length=200)]] = Field(
        default_factory=list, max_length=100, description="the purposes the key may declare, each one the policy lists")


class SynthRequest(_Body):
    epsilon: str | float = Field(..., description="epsilon_syn of the new copy, e.g. \"1.6\"")
    delta: str | float = Field(..., description="delta_syn of the new copy, e.g. \"1e-6\"")
    seed: int = Field(0, ge=0, description="sampling seed (the DP noise never depends on it)")


class ErrorBody(BaseModel):
    type: str
    message: str
    hint: str | None = None
    details: dict[str, Any] | None = Field(None, description="public fields of some refusals (409 MostlyNoiseError: noise_warning, "
                                           "predicted_relative_error, warn_relative_error, epsilon_for_10_percent)")


class ErrorEnvelope(BaseModel):
    error: ErrorBody


class CatalogColumn(BaseModel):
    name: str
    type: str = Field(..., description="type family: integer, real, text, boolean, date, time, timestamp, blob or other")
    raw_type: str = Field(..., description="the engine's own type name")
    nullable: bool


class CatalogTable(BaseModel):
    name: str
    private: bool = Field(..., description="a private relation: DP neighbours differ in one of its tuples")
    private_reason: str = Field(..., description="why, from the custodian's [privacy] settings")
    primary_key: list[str]
    unique: list[list[str]]
    columns: list[CatalogColumn]


class CatalogForeignKey(BaseModel):
    table: str
    columns: list[str]
    ref_table: str
    ref_columns: list[str]
    declared: bool = Field(..., description="declared in pimento.toml rather than by the database")


class CatalogDependency(BaseModel):
    table: str
    lhs: list[str]
    rhs: list[str]


class CatalogDeclarations(BaseModel):
    root: str | None = Field(None, description="the privacy unit's relation ([privacy] root)")
    public_values: list[str] = Field(..., description="Table.column whose set of values the custodian declared public ([synth] public_values)")
    link_context: list[str] = Field(..., description="Table.column declared public link context ([synth] link_context)")
    fan_out_caps: dict[str, int] = Field(..., description="declared children per parent, per table ([synth] caps)")


class CatalogResponse(BaseModel):
    """The public schema: no count, value or statistic of the private data."""

    tables: list[CatalogTable]
    foreign_keys: list[CatalogForeignKey]
    functional_dependencies: list[CatalogDependency]
    declared: CatalogDeclarations


#: The bearer schemes the OpenAPI document declares (the header is read by :func:`bearer`; a missing
#: or wrong one is answered by :class:`Guard` with the error envelope, never by these).
ANALYST_KEY = HTTPBearer(scheme_name="AnalystKey", description="an analyst key (`pimento keys add`)", auto_error=False)
CUSTODIAN_TOKEN = HTTPBearer(scheme_name="CustodianToken", description="the custodian token (PIMENTO_CUSTODIAN_TOKEN)", auto_error=False)


_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorEnvelope} for code in (400, 401, 403, 404, 409, 413, 422, 429, 500, 503)
}


#: The 409 of a spending route: a budget refusal, or an answer predicted to be mostly noise (:mod:`pimento.service.noise_check`).
_SPENDING_409: dict[int | str, dict[str, Any]] = {409: {"model": ErrorEnvelope, "description": "BudgetError (the budget left does not cover the cost), or "
                       "MostlyNoiseError: the answer is predicted to be mostly noise and accept_noise was false; nothing was spent"}}


def _documented(model: type[BaseModel], *, spends: bool = False) -> dict[int | str, dict[str, Any]]:
    """The route's responses: the error envelope, and ``model`` describing its 200 body (documentation
    only: the body is the dict the route returns, unchanged; :mod:`pimento.service.schemas`); ``spends``:
    the 409 says what a spending route refuses with it."""
    return {**_ERRORS, **(_SPENDING_409 if spends else {}), 200: {"model": model, "description": model.__doc__ or "the answer"}}


@overload
def _text(value: str | float) -> str: ...


@overload
def _text(value: str | float | None) -> str | None: ...


def _text(value: str | float | None) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else repr(value)


def bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


class Guard:
    """Authentication and rate limits, shared by the API and the web page."""

    def __init__(self, deployment: Deployment, options: ServiceOptions) -> None:
        self.deployment = deployment
        self.options = options
        self.limiter: RateLimiter | SharedRateLimiter
        self.failed: RateLimiter | SharedRateLimiter
        #: the state shared by every process serving the deployment (None: this process's memory)
        self.shared: StateStore | None = None
        if options.shared_limits:  # every process of the deployment draws from the same buckets (serve --workers)
            self.shared = state_store_for(deployment.settings.ledger.url, deployment.ledger_file)
            self.limiter = SharedRateLimiter(self.shared, "key", options.rate, options.burst)
            self.failed = SharedRateLimiter(self.shared, "sign-in", options.auth_rate, options.auth_burst)
        else:
            self.limiter = RateLimiter(options.rate, options.burst)
            self.failed = RateLimiter(options.auth_rate, options.auth_burst)
        #: whether a key check may run on the event loop (:func:`analyst_key`): buckets in memory or in a SQLite file
        #: (one statement), not on a PostgreSQL server
        self.inline = self.shared is None or isinstance(self.shared, SqliteState)

    def _client(self, request: Request) -> str:
        return request.client.host if request.client else "?"

    def refuse_sign_in(self, request: Request) -> None:
        """Count a failed sign-in for the client; too many -> 429 (instead of 401), until the allowance refills.

        A valid key is never refused here: every client of a loopback service (or behind a proxy) has
        the same address, and a lockout would let any of them lock the analysts out. Keys hold 32
        random bytes, so the limit is about load and noise, not about guessing."""
        wait = self.failed.take(self._client(request))
        if wait:
            raise ServiceError(429, "too many failed sign-ins from this address", hint=f"retry in {wait:.0f} s",
                               headers={"Retry-After": str(max(1, round(wait)))})

    def analyst(self, token: str | None, request: Request) -> ApiKey:
        key = self.deployment.keys.verify(token)
        if key is None:
            self.refuse_sign_in(request)
            raise ServiceError(
                401, "missing, unknown or revoked API key",
                hint="send Authorization: Bearer <key> with a key the custodian issued (`pimento keys add`)",
                headers={"WWW-Authenticate": "Bearer"},
            )
        self.rate(key.id)
        return key

    def rate(self, name: str) -> None:
        wait = self.limiter.take(name)
        if wait:
            raise ServiceError(
                429, "rate limit reached for this key", hint=f"retry in {wait:.1f} s",
                headers={"Retry-After": str(max(1, round(wait + 0.5)))},
            )

    def custodian_ok(self, token: str | None) -> bool:
        expected = self.options.custodian_token_sha256
        if expected is None or not token:
            return False
        return hmac.compare_digest(token_digest(token), expected)

    def custodian(self, token: str | None, request: Request) -> None:
        if self.options.custodian_token_sha256 is None:
            raise ServiceError(
                403, "the custodian endpoints are off in this deployment",
                hint="start `pimento serve` with PIMENTO_CUSTODIAN_TOKEN set or --custodian-token-file",
            )
        if not self.custodian_ok(token):
            self.refuse_sign_in(request)
            raise ServiceError(401, "missing or wrong custodian token", hint="send Authorization: Bearer <custodian token>", headers={"WWW-Authenticate": "Bearer"})
        self.rate(CUSTODIAN)


async def deployment_of(request: Request) -> Deployment:
    """The deployment the application serves (``app.state.deployment``, set by :func:`create_app`); a coroutine, so
    that FastAPI resolves it on the event loop instead of a worker thread (it only reads an attribute)."""
    deployment: Deployment = request.app.state.deployment
    return deployment


async def analyst_key(request: Request, _scheme: Any = Security(ANALYST_KEY)) -> ApiKey:
    """The analyst's key, verified and rate-limited (:meth:`Guard.analyst`): the dependency of every analyst route.

    A coroutine (issue 28, PERF7): where the check is local (:attr:`Guard.inline`: the key file's ``stat``, a SHA-256
    and one SQLite statement or the process's memory) it runs on the event loop, so that a request answered there
    (a memoized ``POST /v1/sql``) never waits for a worker thread; a PostgreSQL state's round trip goes to one."""
    guard: Guard = request.app.state.guard
    if guard.inline:
        return guard.analyst(bearer(request), request)
    return await run_in_threadpool(guard.analyst, bearer(request), request)


def custodian_token(request: Request, _scheme: Any = Security(CUSTODIAN_TOKEN)) -> None:
    """The custodian token, checked (:meth:`Guard.custodian`): the dependency of every custodian route."""
    guard: Guard = request.app.state.guard
    guard.custodian(bearer(request), request)


Served = Annotated[Deployment, Depends(deployment_of)]
Analyst = Annotated[ApiKey, Depends(analyst_key)]

#: The API's routes: module-level functions that take the deployment (and the analyst's key) as
#: dependencies; :func:`create_app` includes them.
router = APIRouter()


@router.get("/docs", include_in_schema=False)
def docs_page(request: Request) -> Response:
    """The API reference, rendered here from the OpenAPI document (:mod:`pimento.service.api_docs`): FastAPI's
    own pages load their scripts from a CDN (blank offline; a third-party script on this origin could act in
    an analyst's signed-in session), this one has no script at all."""
    return web_of(request).page("api_docs.html", ref=reference(request.app.openapi()), role=None)


@router.get("/redoc", include_in_schema=False)
def redoc_page() -> Response:
    """The one API reference is ``/docs``."""
    return RedirectResponse("/docs", status_code=307)


@router.get("/v1/health", tags=["service"], responses=_ERRORS)
def health() -> dict[str, Any]:
    """Liveness: the service answers (no authentication, no data)."""
    return {"status": "ok", "version": __version__}


@router.get("/v1/me", tags=["analyst"], response_model=None, responses=_documented(schemas.MeResponse))
def me(deployment: Served, key: Analyst) -> dict[str, Any]:
    """Who the key says you are: the analyst charged, the principal you stand for (the recipient) and
    the context the custodian bound the key to (the senders and purposes a request may pick among)."""
    return {"analyst": key.analyst, "principal": key.principal, "key_id": key.id, "modes": list(deployment.modes),
            "senders": list(key.senders), "purposes": list(key.purposes), "context": key.context()}


@router.get("/v1/catalog", tags=["analyst"], responses=_ERRORS, response_model=CatalogResponse)
def catalog(deployment: Served, key: Analyst) -> dict[str, Any]:
    """The public schema: tables, columns (type family), keys, foreign keys, which relations are private
    and why, and the custodian's public declarations. Read from the schema and pimento.toml at start-up:
    never a count, a value or a statistic of the private data."""
    return deployment.public_catalog


def _check_sql_length(deployment: Deployment, sql: str | None) -> None:
    """SQL longer than the custodian's ``[database] max_sql_chars``: a 413, before anything is read."""
    max_sql = deployment.settings.database.max_sql_chars
    if sql is not None and len(sql) > max_sql:
        raise ServiceError(413, f"the SQL is longer than {max_sql} characters", type_="PayloadTooLarge")


@router.post("/v1/sql", tags=["analyst"], response_model=None, responses=_documented(schemas.AnswerResponse, spends=True))
async def sql(body: SqlRequest, deployment: Served, key: Analyst) -> dict[str, Any] | Response:
    """Release a counting SQL query with DP; the ledger is charged first (an identical request is free). Refused
    with 409 MostlyNoiseError, before anything is spent, when the answer is predicted to be mostly noise, unless
    ``accept_noise``."""
    _check_sql_length(deployment, body.sql)
    # A repeat of a stored answer this process returned: answered here, on the event loop, with one ledger read
    # (Deployment.sql_memoized; never a refusal, never a charge), instead of waiting for a worker thread behind
    # fresh releases. Everything else (and any doubt) goes to the release path in a worker thread.
    memoized = deployment.sql_memoized(key, body.sql, _text(body.epsilon), _text(body.delta), mode=body.mode, sender=body.sender,
                                       purpose=body.purpose, **_narrowing(body.bounds))
    if memoized is not None:  # rendered by the memo as a JSON response renders the release path's answer
        return Response(memoized, media_type="application/json")
    return await run_in_threadpool(_release_sql, body, deployment, key)


def _release_sql(body: SqlRequest, deployment: Deployment, key: ApiKey) -> dict[str, Any]:
    """``POST /v1/sql`` by the release path (in a worker thread): the noise check, then :meth:`Deployment.sql`."""
    check_sql(deployment, key, body.sql, _text(body.epsilon), _text(body.delta), mode=body.mode, sender=body.sender,
              purpose=body.purpose, accept_noise=body.accept_noise, **_narrowing(body.bounds))
    return deployment.sql(key, body.sql, _text(body.epsilon), _text(body.delta), mode=body.mode, sender=body.sender, purpose=body.purpose,
                          **_narrowing(body.bounds))


@router.post("/v1/sql/preview", tags=["analyst"], response_model=None, responses=_documented(schemas.SqlPreviewResponse))
def sql_preview_route(body: SqlRequest, deployment: Served, key: Analyst) -> dict[str, Any]:
    """What ``POST /v1/sql`` with the same fields would cost and buy: the SQL as it will be run, the cost, the
    epsilon planner and the count on the synthetic copy, the budget left; spends nothing, never opens the
    private database (:mod:`pimento.service.sql_preview`)."""
    _check_sql_length(deployment, body.sql)
    return sql_preview(deployment, key, body.sql, _text(body.epsilon), _text(body.delta), mode=body.mode, sender=body.sender,
                       purpose=body.purpose, **_narrowing(body.bounds))


@router.post("/v1/ask/preview", tags=["analyst"], response_model=None, responses=_documented(schemas.PreviewResponse))
def preview(body: PreviewRequest, deployment: Served, key: Analyst) -> dict[str, Any]:
    """The interpretation of a question in its mode, found on the synthetic copy only: spends nothing."""
    return deployment.preview(key, body.question, _text(body.epsilon), _text(body.delta), mode=body.mode, sender=body.sender,
                              purpose=body.purpose, **_narrowing(body.bounds))


@router.post("/v1/ask", tags=["analyst"], response_model=None, responses=_documented(schemas.AnswerResponse, spends=True))
def ask(body: AskRequest, deployment: Served, key: Analyst) -> dict[str, Any]:
    """A DP answer to a question: the search on the synthetic copy, then the private release (charged first).
    With ``expect_sql``, a question no longer read as that SQL is refused before the charge; an answer predicted
    to be mostly noise too (409 MostlyNoiseError), unless ``accept_noise``."""
    _check_sql_length(deployment, body.expect_sql)
    check_question(deployment, key, body.question, _text(body.epsilon), _text(body.delta), mode=body.mode, sender=body.sender,
                   purpose=body.purpose, expect_sql=body.expect_sql, accept_noise=body.accept_noise, **_narrowing(body.bounds))
    return deployment.ask(key, body.question, _text(body.epsilon), _text(body.delta), mode=body.mode, sender=body.sender,
                          purpose=body.purpose, expect_sql=body.expect_sql, **_narrowing(body.bounds))


@router.get("/v1/budget", tags=["analyst"], response_model=None, responses=_documented(schemas.BudgetResponse))
def budget(deployment: Served, key: Analyst) -> dict[str, Any]:
    """Your cap, what you spent, what is left, and which cap binds (``binds``: ``"analyst"``, your own, or
    ``"database"``, the database-wide cap shared by all analysts: then ``left`` is what is left for everyone)."""
    return deployment.budget(key)


@router.get("/v1/history", tags=["analyst"], response_model=None, responses=_documented(schemas.HistoryResponse))
def history(deployment: Served, key: Analyst, limit: int = Query(50, ge=1, le=500)) -> dict[str, Any]:
    """Your released answers on this deployment, newest first (analyst-safe fields only), each with its mode;
    a split answer's ``value`` is the noisy remainder (``part``), beside the exact ``authorized_exact``."""
    return {"analyst": key.analyst, "answers": deployment.history(key, limit)}


_CUSTODIAN = [Depends(custodian_token)]


@router.get("/v1/audit", tags=["custodian"], responses=_ERRORS, dependencies=_CUSTODIAN)
def audit(deployment: Served, limit: int = Query(100, ge=0, le=10_000)) -> dict[str, Any]:
    """Custodian: the latest audit rows, private quantities included."""
    return {"rows": deployment.audit(limit)}


@router.get("/v1/caps", tags=["custodian"], responses=_ERRORS, dependencies=_CUSTODIAN)
def caps(deployment: Served) -> dict[str, Any]:
    """Custodian: caps, spent and left for the database and every analyst."""
    return deployment.caps()


@router.get("/v1/keys", tags=["custodian"], responses=_ERRORS, dependencies=_CUSTODIAN)
def keys(deployment: Served) -> dict[str, Any]:
    """Custodian: every key issued (ids, analysts, principals, dates; never the keys)."""
    return {"keys": [k.to_dict() for k in deployment.keys.keys()]}


@router.post("/v1/keys", tags=["custodian"], responses=_ERRORS, dependencies=_CUSTODIAN)
def add_key(body: KeyRequest, deployment: Served) -> dict[str, Any]:
    """Custodian: issue a key; the key is in this response only."""
    entry, secret = deployment.add_key(body.analyst, body.principal, body.senders, body.purposes)
    return {**entry.to_dict(), "key": secret}


@router.delete("/v1/keys/{key_id}", tags=["custodian"], responses=_ERRORS, dependencies=_CUSTODIAN)
def revoke_key(key_id: str, deployment: Served) -> dict[str, Any]:
    """Custodian: revoke a key; its next request is refused."""
    return deployment.revoke_key(key_id).to_dict()


@router.get("/v1/policy", tags=["custodian"], responses=_ERRORS, dependencies=_CUSTODIAN)
def policy(deployment: Served) -> dict[str, Any]:
    """Custodian: the compiled policy this deployment enforces (principals, purposes, norms), and its
    observable denials (acknowledged in [policy] acknowledge_observable_denials, or the start refused)."""
    summary = deployment.policy_summary()
    if summary.get("policy") is not None:
        summary["observable_denials"] = deployment.observable_denials
    return summary


@router.get("/v1/synth", tags=["custodian"], responses=_ERRORS, dependencies=_CUSTODIAN)
def synth_status(deployment: Served) -> dict[str, Any]:
    """Custodian: the synthetic copy in use (its charge, its public inputs) and the latest synthesis job."""
    return deployment.synthetic_status()


@router.post("/v1/synth", tags=["custodian"], status_code=202, responses=_ERRORS, dependencies=_CUSTODIAN)
def synth_start(body: SynthRequest, deployment: Served) -> dict[str, Any]:
    """Custodian: make a new synthetic copy in the background (charged to the ledger before it reads the
    data); it replaces the copy in use when it is done. Poll GET /v1/synth."""
    job = deployment.synth_jobs.start(_text(body.epsilon), _text(body.delta), seed=body.seed)
    return job.to_dict()


def include_routes(app: FastAPI, routes: APIRouter) -> None:
    """Serve ``routes`` (module-level route functions) on ``app``, each route listed in ``app.routes`` itself.

    (FastAPI's ``include_router`` nests a router as one entry of ``app.routes`` in recent versions;
    the routes are the same objects either way, and the envelope tests walk ``app.routes``.)
    """
    app.router.routes.extend(routes.routes)


def _closing(deployment: Deployment) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's lifespan: at shutdown (``pimento serve`` and each worker stopping, a test client's exit) the
    deployment's connections are closed (:meth:`Deployment.close`), so that nothing of this process holds the
    database, the synthetic copy or the ledger open after it."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            deployment.close()

    return lifespan


def create_app(deployment: Deployment, options: ServiceOptions | None = None) -> FastAPI:
    """The service for ``deployment``: API (:data:`router`), custodian API, web page, error envelope and limits;
    its lifespan closes the deployment's connections at shutdown (:func:`_closing`)."""
    options = options or ServiceOptions()
    app = FastAPI(
        lifespan=_closing(deployment),
        title="Pimento",
        version=__version__,
        description="DP answers to counting questions and SQL over one custodian's database. See docs/service-api.md.",
        docs_url=None,
        redoc_url=None,
    )
    guard = Guard(deployment, options)
    app.state.deployment = deployment
    app.state.guard = guard
    app.state.options = options
    install_error_handlers(app)
    include_routes(app, router)
    install_web(app, deployment, guard, options)
    if guard.shared is not None:  # sign-in sessions seen by every worker, like the buckets
        app.state.web.sessions = app.state.web_sessions = SharedSessions(guard.shared)
    app.add_middleware(BodySizeLimit, max_bytes=options.max_body_bytes)
    return app
