"""The web page: server-rendered Jinja2 templates over the same deployment and guard as the API.

Sign-in takes an analyst key (or the custodian token) once and opens a server-side session: the
browser holds only a random session id in an ``HttpOnly``, ``SameSite=Strict`` cookie (``Secure``
under ``--secure-cookies``, for a TLS proxy in front). Every form that changes something carries
the session's CSRF token, checked in constant time. A revoked key ends its sessions at their next
request. Pages send ``Content-Security-Policy: default-src 'self'`` (no script at all),
``X-Frame-Options: DENY`` and ``Cache-Control: no-store``.

Flow for an analyst: ``/ask`` (question, epsilon, delta; budget meter; the public schema, as
``GET /v1/catalog`` sends it) -> ``/ask/preview`` (the
interpretation on the synthetic copy, alternatives, accuracy estimate; nothing spent) ->
``/ask/confirm`` (the release: value, interval, guarantee, budget left; refused, nothing spent, if the
question is no longer read as the SQL previewed); beside the question, the SQL form: ``/sql/preview``
(cost, epsilon planner and count on the synthetic copy; nothing spent, as ``POST /v1/sql/preview``) ->
``/sql/confirm`` (the release, as ``POST /v1/sql``); ``/history`` (each answer's mode, and for split
the exact part beside the noisy remainder). The budget meter says which cap binds. For the
custodian: ``/custodian`` (caps, keys, issue and revoke), ``/custodian/audit`` and
``/custodian/policy/review`` (the open questions of ``[policy] draft``, answered:
:mod:`pimento.service.policy_review`; an analyst's session gets 403).

Every page is a module-level route function of :data:`router` that finds what it serves (the
deployment, the guard, the templates, the sign-in sessions) in the :class:`Web` that
:func:`install_web` puts on ``app.state.web``.
"""

from __future__ import annotations

import hmac
import re
import secrets
import threading
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool

from pimento.errors import ServiceError, UserError
from pimento.numbers import short_number
from pimento.service.errors import user_error_body
from pimento.service.policy_review import load_draft, question_views, save_review
from pimento.service.noise_check import check_question, check_sql
from pimento.service.sql_preview import sql_preview

if TYPE_CHECKING:
    from pimento.service.app import Guard, ServiceOptions
    from pimento.service.deployment import Deployment
    from pimento.service.keys import ApiKey

__all__ = ["Web", "install_web", "router", "web_of"]

SESSION_COOKIE = "pimento_session"
LOGIN_COOKIE = "pimento_login"
SESSION_SECONDS = 8 * 3600
TEMPLATES = Path(__file__).parent / "templates"
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'none'; frame-ancestors 'none'; form-action 'self'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@dataclass
class WebSession:
    role: str  # "analyst" or "custodian"
    key_id: str | None
    csrf: str
    expires: float


class Sessions:
    def __init__(self) -> None:
        self._items: dict[str, WebSession] = {}
        self._lock = threading.Lock()

    def open(self, role: str, key_id: str | None) -> tuple[str, WebSession]:
        sid = secrets.token_urlsafe(32)
        session = WebSession(role, key_id, secrets.token_urlsafe(32), time.time() + SESSION_SECONDS)
        with self._lock:
            now = time.time()
            for old in [s for s, v in self._items.items() if v.expires < now]:
                del self._items[old]
            self._items[sid] = session
        return sid, session

    def get(self, sid: str | None) -> WebSession | None:
        if not sid:
            return None
        with self._lock:
            session = self._items.get(sid)
            if session is not None and session.expires < time.time():
                del self._items[sid]
                return None
            return session

    def close(self, sid: str | None) -> None:
        with self._lock:
            self._items.pop(sid or "", None)


def _meter(budget: dict[str, Any]) -> dict[str, Any]:
    cap = Fraction(str(budget["cap"]["epsilon"]))
    left = Fraction(str(budget["left"]["epsilon"]))
    share = float(left / cap) if cap > 0 else 0.0
    return {"left": short_number(budget["left"]["epsilon"]), "cap": short_number(budget["cap"]["epsilon"]), "spent": short_number(budget["spent"]["epsilon"]),
            "delta_left": short_number(budget["left"]["delta"]), "percent": max(0, min(100, round(100 * share))), "binds": budget.get("binds")}


def _names(text: str) -> list[str]:
    """The custodian's list of senders or purposes in a form field: names separated by commas or blanks
    (neither can be part of a name, :func:`pimento.release.request.context_value`)."""
    return [name for name in re.split(r"[,\s]+", text) if name]


@dataclass
class Web:
    """What the pages serve: the deployment, the guard, the options, the templates and the sign-in sessions."""

    deployment: Deployment
    guard: Guard
    options: ServiceOptions
    env: Environment
    sessions: Sessions
    css: str

    def page(self, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = self.env.get_template(name).render(**context)
        return HTMLResponse(html, status_code=status, headers=HEADERS)

    def set_cookie(self, response: Response, name: str, value: str, max_age: int) -> None:
        response.set_cookie(name, value, max_age=max_age, httponly=True, samesite="strict", secure=self.options.secure_cookies, path="/")

    def current(self, request: Request) -> tuple[WebSession | None, ApiKey | None]:
        """The request's sign-in session and, for an analyst, their key (None, None when signed out or revoked)."""
        session = self.sessions.get(request.cookies.get(SESSION_COOKIE))
        if session is None:
            return None, None
        if session.role == "analyst":
            key = self.deployment.keys.get(session.key_id) if session.key_id is not None else None
            if key is None or not key.active:  # revoked since sign-in
                self.sessions.close(request.cookies.get(SESSION_COOKIE))
                return None, None
            return session, key
        return session, None

    def custodian_session(self, request: Request) -> WebSession | None:
        session, _ = self.current(request)
        return session if session is not None and session.role == "custodian" else None

    async def analyst_context(self, session: WebSession, key: ApiKey) -> dict[str, Any]:
        budget = await run_in_threadpool(self.deployment.budget, key)
        return {"key": key, "csrf": session.csrf, "meter": _meter(budget), "budget": budget, "role": "analyst",
                "modes": self.deployment.modes, "catalog": self.deployment.public_catalog,
                "max_sql_chars": self.deployment.settings.database.max_sql_chars}

    async def custodian_page(self, session: WebSession, status: int = 200, **extra: Any) -> Response:
        caps = await run_in_threadpool(self.deployment.caps)
        keys = [k.to_dict() for k in self.deployment.keys.keys()]
        return self.page("custodian.html", status=status, csrf=session.csrf, role="custodian", caps=caps, keys=keys,
                         new_key=extra.get("new_key"), error=extra.get("error"))


def install_web(app: FastAPI, deployment: Deployment, guard: Guard, options: ServiceOptions) -> None:
    """Serve the web page of ``deployment`` on ``app``: the :data:`router`'s pages over a new :class:`Web`."""
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html"]))
    env.filters["num"] = short_number
    sessions = Sessions()
    app.state.web = Web(deployment, guard, options, env, sessions, (TEMPLATES / "pimento.css").read_text(encoding="utf-8"))
    app.state.web_sessions = sessions
    app.router.routes.extend(router.routes)  # each page in app.routes itself (as pimento.service.app.include_routes)


def web_of(request: Request) -> Web:
    """The :class:`Web` the application serves (``app.state.web``, set by :func:`install_web`)."""
    web: Web = request.app.state.web
    return web


async def form(request: Request) -> dict[str, str]:
    """The posted HTML form (refused unless it is ``application/x-www-form-urlencoded``), each field's first value."""
    return {k: v[0] for k, v in (await form_lists(request)).items()}


async def form_lists(request: Request) -> dict[str, list[str]]:
    """The posted HTML form with every value of each field (checkboxes of one name), as :func:`form` checks it."""
    kind = request.headers.get("content-type", "").split(";")[0].strip()
    if kind != "application/x-www-form-urlencoded":
        raise ServiceError(415, "this page takes HTML form posts only", hint="use the /v1 API for JSON")
    return parse_qs((await request.body()).decode("utf-8", errors="replace"), keep_blank_values=True)


def check_csrf(session: WebSession, data: dict[str, str]) -> None:
    if not hmac.compare_digest(data.get("csrf", ""), session.csrf):
        raise ServiceError(403, "the form's CSRF token is missing or wrong", hint="reload the page and submit it again", type_="CsrfError")


def to_login() -> RedirectResponse:
    return RedirectResponse("/login", status_code=303)


def error_text(exc: Exception) -> tuple[int, dict[str, Any]]:
    """The status and the ``{type, message, hint}`` of an error, as the API's envelope holds them."""
    if isinstance(exc, ServiceError):
        return exc.status, {"type": exc.type, "message": exc.message, "hint": exc.hint}
    assert isinstance(exc, UserError)
    status, body = user_error_body(exc)
    return status, body["error"]


def request_form(data: dict[str, str]) -> dict[str, str]:
    """The ask form as posted. Sender and purpose are taken verbatim (the page offers the key's own as
    choices; anything else is refused by :meth:`Deployment.request`, as on the API)."""
    return {
        "question": data.get("question", "")[:2000], "epsilon": data.get("epsilon", "").strip(), "delta": data.get("delta", "").strip(),
        "mode": data.get("mode", "dp").strip() or "dp", "sender": data.get("sender", ""), "purpose": data.get("purpose", ""),
        "sql": data.get("sql", ""), "bounds": data.get("bounds", "")[:2000],
    }


def form_bounds(f: dict[str, str]) -> dict[str, Any]:
    """The SQL form's optional ``bounds`` (``Table.column=LOWER:UPPER``, several separated by blanks or commas) as the
    ``bounds`` keyword of a deployment call (:func:`pimento.release.request.parse_bounds` reads them); none: no keyword."""
    given = [part for part in re.split(r"[\s,;]+", f.get("bounds", "")) if part]
    return {"bounds": given} if given else {}


#: The web page's routes (none in the OpenAPI document); :func:`install_web` includes them.
router = APIRouter()


@router.get("/static/pimento.css", include_in_schema=False)
def stylesheet(request: Request) -> Response:
    return Response(web_of(request).css, media_type="text/css", headers={"Cache-Control": "max-age=3600", "X-Content-Type-Options": "nosniff"})


@router.get("/", include_in_schema=False)
def root(request: Request) -> Response:
    session, _key = web_of(request).current(request)
    if session is None:
        return to_login()
    return RedirectResponse("/custodian" if session.role == "custodian" else "/ask", status_code=303)


@router.get("/login", include_in_schema=False)
def login_page(request: Request) -> Response:
    web = web_of(request)
    token = secrets.token_urlsafe(32)
    response = web.page("login.html", csrf=token, error=None)
    web.set_cookie(response, LOGIN_COOKIE, token, 900)
    return response


@router.post("/login", include_in_schema=False)
async def login(request: Request) -> Response:
    web = web_of(request)
    data = await form(request)
    expected = request.cookies.get(LOGIN_COOKIE, "")
    if not expected or not hmac.compare_digest(data.get("csrf", ""), expected):
        raise ServiceError(403, "the sign-in form's CSRF token is missing or wrong", hint="reload /login and sign in again", type_="CsrfError")
    presented = data.get("key", "").strip()
    key = await run_in_threadpool(web.deployment.keys.verify, presented)
    if key is not None:
        sid, _ = web.sessions.open("analyst", key.id)
        target = "/ask"
    elif web.guard.custodian_ok(presented):
        sid, _ = web.sessions.open("custodian", None)
        target = "/custodian"
    else:
        try:
            web.guard.refuse_sign_in(request)
        except ServiceError as exc:
            return web.page("login.html", status=exc.status, csrf=data.get("csrf"), error={"message": exc.message, "hint": exc.hint})
        return web.page("login.html", status=401, csrf=data.get("csrf"), error={"message": "unknown or revoked key", "hint": "ask the custodian for a key"})
    response = RedirectResponse(target, status_code=303)
    web.set_cookie(response, SESSION_COOKIE, sid, SESSION_SECONDS)
    response.delete_cookie(LOGIN_COOKIE, path="/")
    return response


@router.post("/logout", include_in_schema=False)
async def logout(request: Request) -> Response:
    web = web_of(request)
    session, _ = web.current(request)
    if session is not None:
        check_csrf(session, await form(request))
        web.sessions.close(request.cookies.get(SESSION_COOKIE))
    response = to_login()
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


# ------------------------------------------------------------------ analyst pages


@router.get("/ask", include_in_schema=False)
async def ask_page(request: Request) -> Response:
    web = web_of(request)
    session, key = web.current(request)
    if key is None or session is None:  # an analyst's key comes with their session
        return to_login()
    return web.page("ask.html", **await web.analyst_context(session, key), form=request_form({"epsilon": "0.5", "delta": "1e-6"}), error=None)


async def analyst_post(request: Request) -> tuple[WebSession, ApiKey, dict[str, str]] | Response:
    """A signed-in analyst's form post, its CSRF token checked and their rate limit taken; else the sign-in page."""
    web = web_of(request)
    session, key = web.current(request)
    if key is None or session is None:  # an analyst's key comes with their session
        return to_login()
    data = await form(request)
    check_csrf(session, data)
    web.guard.rate(key.id)
    return session, key, data


async def form_action(request: Request, work: Callable[[Web, ApiKey, dict[str, str], dict[str, str]], Any], template: str, name: str) -> Response:
    """The shape every analyst form shares: the signed-in analyst's POST (:func:`analyst_post`), ``work``
    run off the event loop on the deployment, then ``template`` with its result as ``name``; a refusal
    (:class:`UserError`, :class:`ServiceError`) shows the form again with the error."""
    got = await analyst_post(request)
    if isinstance(got, Response):
        return got
    web = web_of(request)
    session, key, data = got
    f = request_form(data)
    try:
        result = await run_in_threadpool(lambda: work(web, key, f, data))
    except (UserError, ServiceError) as exc:
        status, err = error_text(exc)
        return web.page("ask.html", status=status, **await web.analyst_context(session, key), form=f, error=err)
    return web.page(template, **await web.analyst_context(session, key), form=f, **{name: result})


@router.post("/ask/preview", include_in_schema=False)
async def preview_page(request: Request) -> Response:
    def work(web: Web, key: ApiKey, f: dict[str, str], data: dict[str, str]) -> Any:
        return web.deployment.preview(key, f["question"], f["epsilon"], f["delta"] or None, mode=f["mode"], sender=f["sender"] or None,
                                      purpose=f["purpose"] or None)

    return await form_action(request, work, "preview.html", "preview")


@router.post("/ask/confirm", include_in_schema=False)
async def confirm_page(request: Request) -> Response:
    def work(web: Web, key: ApiKey, f: dict[str, str], data: dict[str, str]) -> Any:
        check_question(web.deployment, key, f["question"], f["epsilon"], f["delta"] or None, mode=f["mode"], sender=f["sender"] or None,
                       purpose=f["purpose"] or None, expect_sql=data.get("previewed_sql", "") or None, accept_noise=noise_accepted(data))
        previewed = data.get("previewed_sql", "") or None  # the reading the analyst confirmed: refused before the charge if it changed
        return web.deployment.ask(key, f["question"], f["epsilon"], f["delta"] or None, mode=f["mode"], sender=f["sender"] or None,
                                  purpose=f["purpose"] or None, expect_sql=previewed)

    return await form_action(request, work, "answer.html", "answer")


def noise_accepted(data: dict[str, str]) -> bool:
    """Whether the analyst ticked the box under the preview's warning (templates/_noise_warning.html). The
    confirmation is then checked as ``POST /v1/sql`` and ``/v1/ask`` are (:mod:`pimento.service.noise_check`):
    predicted to be mostly noise and not accepted, refused (409) before the charge. A courtesy to the analyst,
    not a privacy control: the warning comes from the synthetic copy and public inputs."""
    return bool(data.get("accept_noise"))


def check_sql_form(web: Web, f: dict[str, str]) -> None:
    """The SQL form's text: present, and no longer than the custodian's ``[database] max_sql_chars`` (as ``POST /v1/sql``)."""
    max_sql = web.deployment.settings.database.max_sql_chars
    if not f["sql"].strip():
        raise ServiceError(422, "write a SQL query", hint="SELECT COUNT(*) FROM ... (the schema is listed below the form)")
    if len(f["sql"]) > max_sql:
        raise ServiceError(413, f"the SQL is longer than {max_sql} characters", type_="PayloadTooLarge")


@router.post("/sql/preview", include_in_schema=False)
async def sql_preview_page(request: Request) -> Response:
    """The SQL form's free preview (:func:`pimento.service.sql_preview.sql_preview`: the synthetic copy only, nothing spent)."""
    def work(web: Web, key: ApiKey, f: dict[str, str], data: dict[str, str]) -> Any:
        check_sql_form(web, f)
        return sql_preview(web.deployment, key, f["sql"], f["epsilon"] or None, f["delta"] or None, mode=f["mode"],
                           sender=f["sender"] or None, purpose=f["purpose"] or None, **form_bounds(f))

    return await form_action(request, work, "sql_preview.html", "preview")


@router.post("/sql/confirm", include_in_schema=False)
async def sql_confirm_page(request: Request) -> Response:
    """The SQL release the analyst confirmed (:meth:`Deployment.sql`, as ``POST /v1/sql``: charged first)."""
    def work(web: Web, key: ApiKey, f: dict[str, str], data: dict[str, str]) -> Any:
        check_sql_form(web, f)
        check_sql(web.deployment, key, f["sql"], f["epsilon"] or None, f["delta"] or None, mode=f["mode"], sender=f["sender"] or None,
                  purpose=f["purpose"] or None, accept_noise=noise_accepted(data), **form_bounds(f))
        return web.deployment.sql(key, f["sql"], f["epsilon"] or None, f["delta"] or None, mode=f["mode"], sender=f["sender"] or None,
                                  purpose=f["purpose"] or None, **form_bounds(f))

    return await form_action(request, work, "answer.html", "answer")


@router.get("/history", include_in_schema=False)
async def history_page(request: Request) -> Response:
    web = web_of(request)
    session, key = web.current(request)
    if key is None or session is None:  # an analyst's key comes with their session
        return to_login()
    rows = await run_in_threadpool(web.deployment.history, key, 100)
    return web.page("history.html", **await web.analyst_context(session, key), rows=rows)


# ------------------------------------------------------------------ custodian pages


@router.get("/custodian", include_in_schema=False)
async def custodian_home(request: Request) -> Response:
    session = web_of(request).custodian_session(request)
    if session is None:
        return root(request)  # an analyst goes back to their own page, anyone else to sign-in
    return await web_of(request).custodian_page(session)


@router.post("/custodian/keys", include_in_schema=False)
async def custodian_add_key(request: Request) -> Response:
    web = web_of(request)
    session = web.custodian_session(request)
    if session is None:
        return to_login()
    data = await form(request)
    check_csrf(session, data)
    try:
        entry, secret = await run_in_threadpool(
            web.deployment.add_key, data.get("analyst", "").strip(), data.get("principal", "").strip() or None,
            _names(data.get("senders", "")), _names(data.get("purposes", "")),
        )
    except UserError as exc:
        status, err = error_text(exc)
        return await web.custodian_page(session, status=status, error=err)
    return await web.custodian_page(session, new_key={**entry.to_dict(), "key": secret})


@router.post("/custodian/keys/{key_id}/revoke", include_in_schema=False)
async def custodian_revoke(key_id: str, request: Request) -> Response:
    web = web_of(request)
    session = web.custodian_session(request)
    if session is None:
        return to_login()
    check_csrf(session, await form(request))
    try:
        await run_in_threadpool(web.deployment.revoke_key, key_id)
    except UserError as exc:
        status, err = error_text(exc)
        return await web.custodian_page(session, status=status, error=err)
    return RedirectResponse("/custodian", status_code=303)


@router.get("/custodian/audit", include_in_schema=False)
async def custodian_audit(request: Request) -> Response:
    web = web_of(request)
    session = web.custodian_session(request)
    if session is None:
        return to_login()
    rows = await run_in_threadpool(web.deployment.audit, 200)
    return web.page("audit.html", csrf=session.csrf, role="custodian", rows=list(reversed(rows)))


def review_session(request: Request) -> WebSession | Response:
    """The custodian's session for the policy review; an analyst's session is refused (403), anyone else signs in."""
    web = web_of(request)
    session, _key = web.current(request)
    if session is None:
        return to_login()
    if session.role != "custodian":
        raise ServiceError(403, "the policy review is the custodian's page", hint="sign in with the custodian token")
    return session


async def review_page(request: Request, session: WebSession, status: int = 200, **extra: Any) -> Response:
    """``policy_review.html`` for the deployment's draft (or why there is none), with ``extra`` (error, saved)."""
    web = web_of(request)
    draft, questions, error = None, [], extra.pop("error", None)
    try:
        draft = await run_in_threadpool(load_draft, web.deployment)
        questions = question_views(draft, web.deployment.catalog) if draft is not None else []
    except UserError as exc:
        status, error = error_text(exc)
    return web.page("policy_review.html", status=status, csrf=session.csrf, role="custodian", draft=draft,
                    questions=questions, error=error, **extra)


@router.get("/custodian/policy/review", include_in_schema=False)
async def custodian_review(request: Request) -> Response:
    session = review_session(request)
    if isinstance(session, Response):
        return session
    return await review_page(request, session)


@router.post("/custodian/policy/review", include_in_schema=False)
async def custodian_review_save(request: Request) -> Response:
    """Apply the posted answers to the draft and write the reviewed policy (:func:`policy_review.save_review`)."""
    session = review_session(request)
    if isinstance(session, Response):
        return session
    fields = await form_lists(request)
    check_csrf(session, {k: v[0] for k, v in fields.items()})
    web = web_of(request)
    try:
        saved = await run_in_threadpool(save_review, web.deployment, (fields.get("draft_sha256") or [""])[0], fields)
    except (UserError, ServiceError) as exc:
        status, err = error_text(exc)
        return await review_page(request, session, status=status, error=err)
    return await review_page(request, session, saved=saved)
