"""One error envelope for every error the service returns: ``{"error": {"type", "message", "hint"}}``.

User errors keep the message and hint the CLI prints for them (the same fixed text for a release
that failed after its charge), except those whose text is the custodian's (engine and data-source
errors, ledger integrity): the analyst gets a fixed message and the real one goes to the server's
log. Anything unexpected is a 500 with a fixed message: no exception text, no traceback.

The HTTP status of a Pimento error is its class's ``http_status`` (the tree of :mod:`pimento.errors`
shows them); :class:`~pimento.errors.ServiceError`, the service's own refusals, carries one per error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from pimento.errors import (
    ConfigError,
    DataSourceError,
    DeploymentHaltedError,
    InternalError,
    LedgerIntegrityError,
    ReleaseAbortedError,
    ServiceError,
    UserError,
)

__all__ = ["envelope", "install_error_handlers", "user_error_body"]

log = logging.getLogger("pimento.service")

#: Fixed texts for errors whose own message is for the custodian only.
UNAVAILABLE = "the deployment's data cannot be read right now; nothing was released"
LEDGER_REFUSED = "the deployment's budget ledger failed an integrity check; nothing was spent and nothing is released until the custodian has looked"
ABORTED = "the release was closed as aborted before its answer was stored: the budget stays spent and no answer is given"
INTERNAL = "internal error in the Pimento service; nothing was released"
ASK_CUSTODIAN = "ask the custodian to check the service's log and `pimento audit`"


def envelope(type_: str, message: str, hint: str | None = None) -> dict[str, Any]:
    return {"error": {"type": type_, "message": message, "hint": hint}}


@dataclass(frozen=True)
class _Fixed:
    """What the analyst is shown instead of an error's own text, which is the custodian's: ``type``
    (None: the error's class name), message and hint; ``record`` puts the real text in the log."""

    message: str
    hint: str | None
    type: str | None = None
    record: Callable[[UserError], None] | None = None


def _unavailable(exc: UserError) -> None:
    log.error("data source or configuration error: %s", exc.one_line())


#: The errors whose text is replaced, by class; an error takes the entry of the first class of its
#: MRO that has one (the most specific).
_FIXED: dict[type[UserError], _Fixed] = {
    DeploymentHaltedError: _Fixed(DeploymentHaltedError.MESSAGE, DeploymentHaltedError.HINT),
    ReleaseAbortedError: _Fixed(ABORTED, ASK_CUSTODIAN, record=lambda exc: log.warning("release aborted: %s", exc.message)),
    LedgerIntegrityError: _Fixed(LEDGER_REFUSED, ASK_CUSTODIAN, record=lambda exc: log.error("ledger refused: %s", exc.one_line())),
    DataSourceError: _Fixed(UNAVAILABLE, ASK_CUSTODIAN, type="DataSourceError", record=_unavailable),
    ConfigError: _Fixed(UNAVAILABLE, ASK_CUSTODIAN, type="DataSourceError", record=_unavailable),
}


def _fixed(exc: UserError) -> _Fixed | None:
    return next((_FIXED[cls] for cls in type(exc).__mro__ if cls in _FIXED), None)


def user_error_body(exc: UserError) -> tuple[int, dict[str, Any]]:
    """Status (the class's :attr:`~pimento.errors.PimentoError.http_status`) and envelope of a user
    error: its own type and text, or the fixed ones of :data:`_FIXED` with the real text logged."""
    fixed = _fixed(exc)
    if fixed is not None:
        if fixed.record is not None:
            fixed.record(exc)
        return exc.http_status, envelope(fixed.type or type(exc).__name__, fixed.message, fixed.hint)
    if isinstance(exc, ServiceError):  # the service's own refusal: its type and text as written
        body = envelope(exc.type, exc.message, exc.hint)
    else:
        body = envelope(type(exc).__name__, " ".join(exc.message.split()), " ".join(exc.hint.split()) if exc.hint else None)
    details = getattr(exc, "details", None)
    if details:  # public fields of the refusal (MostlyNoiseError: the warning, the epsilon for +-10%)
        body["error"]["details"] = dict(details)
    return exc.http_status, body


def _validation_message(exc: RequestValidationError) -> str:
    """Where the request was malformed and how, without echoing the input back."""
    parts = []
    for error in exc.errors()[:5]:
        loc = [str(p) for p in error.get("loc", ()) if p != "body"]
        if error.get("type") == "extra_forbidden" and loc:
            loc[-1] = "(a field the request schema does not have)"  # its name is the caller's input: not echoed
        where = ".".join(loc) or "body"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "invalid request: " + "; ".join(parts)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def _service(request: Request, exc: ServiceError) -> JSONResponse:
        status, body = user_error_body(exc)
        return JSONResponse(body, status_code=status, headers=exc.headers)

    @app.exception_handler(UserError)
    async def _user(request: Request, exc: UserError) -> JSONResponse:
        status, body = user_error_body(exc)
        return JSONResponse(body, status_code=status)

    @app.exception_handler(InternalError)
    async def _internal(request: Request, exc: InternalError) -> JSONResponse:
        log.error("internal error on %s: %s", request.url.path, exc.one_line())
        return JSONResponse(envelope("InternalError", INTERNAL, ASK_CUSTODIAN), status_code=exc.http_status)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(envelope("ValidationError", _validation_message(exc), "see /openapi.json for the request schema"), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        status = exc.status_code
        message = {404: f"no such endpoint: {request.method} {request.url.path}", 405: f"{request.method} is not allowed on {request.url.path}"}.get(
            status, str(exc.detail)
        )
        hint = "see /openapi.json for the endpoints" if status in (404, 405) else None
        return JSONResponse(envelope(ServiceError.HTTP_TYPES.get(status, "Error"), message, hint), status_code=status, headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unexpected %s on %s", type(exc).__name__, request.url.path, exc_info=exc)
        return JSONResponse(envelope("InternalError", INTERNAL, ASK_CUSTODIAN), status_code=500)
