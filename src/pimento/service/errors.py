"""One error envelope for every error the service returns: ``{"error": {"type", "message", "hint"}}``.

User errors keep the message and hint the CLI prints for them (the same fixed text for a release
that failed after its charge), except those whose text is the custodian's (engine and data-source
errors, ledger integrity): the analyst gets a fixed message and the real one goes to the server's
log. Anything unexpected is a 500 with a fixed message: no exception text, no traceback.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from pimento.errors import (
    BudgetError,
    CatalogError,
    ConfigError,
    DataSourceError,
    DeploymentHaltedError,
    InternalError,
    LLMError,
    PolicyError,
    PrivacyParameterError,
    SearchError,
    SqlError,
    UserError,
)
from pimento.mechanisms.ledger import LedgerIntegrityError, ReleaseAbortedError
from pimento.release.modes import ModeError
from pimento.service.keys import ContextNotAllowedError

__all__ = ["ServiceError", "envelope", "install_error_handlers", "status_for"]

log = logging.getLogger("pimento.service")

#: Fixed texts for errors whose own message is for the custodian only.
UNAVAILABLE = "the deployment's data cannot be read right now; nothing was released"
LEDGER_REFUSED = "the deployment's budget ledger failed an integrity check; nothing was spent and nothing is released until the custodian has looked"
ABORTED = "the release was closed as aborted before its answer was stored: the budget stays spent and no answer is given"
INTERNAL = "internal error in the Pimento service; nothing was released"
ASK_CUSTODIAN = "ask the custodian to check the service's log and `pimento audit`"

_HTTP_TYPES = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    413: "PayloadTooLarge",
    415: "UnsupportedMediaType",
    429: "RateLimited",
}


class ServiceError(Exception):
    """An HTTP-level refusal of the service (authentication, rate limit, size...)."""

    def __init__(self, status: int, message: str, *, hint: str | None = None, type_: str | None = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.hint = hint
        self.type = type_ or _HTTP_TYPES.get(status, "Error")
        self.headers = headers or {}


def envelope(type_: str, message: str, hint: str | None = None) -> dict[str, Any]:
    return {"error": {"type": type_, "message": message, "hint": hint}}


def status_for(exc: UserError) -> int:
    if isinstance(exc, ReleaseAbortedError):
        return 500
    if isinstance(exc, LedgerIntegrityError | DeploymentHaltedError):
        return 503
    if isinstance(exc, BudgetError):
        return 409
    if isinstance(exc, ContextNotAllowedError):
        return 403
    if isinstance(exc, PrivacyParameterError | SqlError | SearchError | CatalogError | ModeError | PolicyError):
        return 422
    if isinstance(exc, DataSourceError | ConfigError):
        return 503
    if isinstance(exc, LLMError):
        return 502
    return 400


def user_error_body(exc: UserError) -> tuple[int, dict[str, Any]]:
    """Status and envelope for a Pimento user error, with custodian-only texts replaced."""
    status = status_for(exc)
    name = type(exc).__name__
    if isinstance(exc, DeploymentHaltedError):
        return status, envelope(name, DeploymentHaltedError.MESSAGE, DeploymentHaltedError.HINT)
    if isinstance(exc, ReleaseAbortedError):
        log.warning("release aborted: %s", exc.message)
        return status, envelope(name, ABORTED, ASK_CUSTODIAN)
    if isinstance(exc, LedgerIntegrityError):
        log.error("ledger refused: %s", exc.one_line())
        return status, envelope(name, LEDGER_REFUSED, ASK_CUSTODIAN)
    if isinstance(exc, DataSourceError | ConfigError):
        log.error("data source or configuration error: %s", exc.one_line())
        return status, envelope("DataSourceError", UNAVAILABLE, ASK_CUSTODIAN)
    return status, envelope(name, " ".join(exc.message.split()), " ".join(exc.hint.split()) if exc.hint else None)


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
        return JSONResponse(envelope(exc.type, exc.message, exc.hint), status_code=exc.status, headers=exc.headers)

    @app.exception_handler(UserError)
    async def _user(request: Request, exc: UserError) -> JSONResponse:
        status, body = user_error_body(exc)
        return JSONResponse(body, status_code=status)

    @app.exception_handler(InternalError)
    async def _internal(request: Request, exc: InternalError) -> JSONResponse:
        log.error("internal error on %s: %s", request.url.path, exc.one_line())
        return JSONResponse(envelope("InternalError", INTERNAL, ASK_CUSTODIAN), status_code=500)

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
        return JSONResponse(envelope(_HTTP_TYPES.get(status, "Error"), message, hint), status_code=status, headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unexpected %s on %s", type(exc).__name__, request.url.path, exc_info=exc)
        return JSONResponse(envelope("InternalError", INTERNAL, ASK_CUSTODIAN), status_code=500)
