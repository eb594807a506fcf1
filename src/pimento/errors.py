"""Exceptions raised by Pimento: every exception class of the package is defined here.

One root, :class:`PimentoError`. Everything a user can cause and fix is a
:class:`UserError`; :class:`InternalError` means "this is a bug in Pimento".
The CLI prints a user error as one line and exits with status 2; an internal
error is printed with a request to report it and exits with status 70.

Each class carries the HTTP status the service answers it with (:attr:`PimentoError.http_status`,
the column below; a subclass that sets none has its parent's). The tree, with that status:

    PimentoError                        500
    ├── UserError                       400  something the user can fix
    │   ├── ConfigError                 503  pimento.toml missing keys, typos, bad values
    │   ├── DataSourceError             503  missing file, unreadable database, bad DSN
    │   │   ├── EngineError             503  the engine refused a statement
    │   │   │   ├── EngineQueryError    503  an engine's failure: fixed message, the engine's text for the custodian
    │   │   │   └── QueryTimeout        503  the statement ran past its timeout / was cancelled
    │   │   ├── DatabaseChangedError    503  the database file was replaced or changed under a running service
    │   │   └── SyntheticCopyError      503  the synthetic copy's spend is not in this database's ledger (or it is no copy)
    │   ├── CatalogError                422  unknown table or column, inconsistent declarations
    │   │   └── ConstraintViolation     422  a declared key/FK/FD does not hold in the data
    │   ├── SqlError                    422  SQL that does not parse
    │   │   └── UnsupportedQuery        422  valid SQL outside the DP-compatible class
    │   │       └── Refusal             422  a selection outside the allow-list (the parser turns it into an UnsupportedQuery)
    │   ├── PrivacyParameterError       422  eps <= 0, delta outside (0, 1), NaN, beta <= 0
    │   ├── BudgetError                 409  a spend the ledger refuses (nothing was spent)
    │   │   ├── LedgerIntegrityError    503  the ledger failed an integrity check: no release until the custodian has looked
    │   │   └── ReleaseAbortedError     500  a charged release was closed as aborted before its answer was stored
    │   ├── MostlyNoiseError            409  a spend predicted to be mostly noise, not accepted (nothing was spent)
    │   ├── DeploymentHaltedError       503  releases are halted (a release failed after its charge) until the custodian resumes
    │   ├── PolicyError                 422  a policy clause that cannot be compiled or grounded
    │   ├── ModeError                   422  a release mode that is unknown or lacks what it needs (policy, context)
    │   │   └── ContextNotAllowedError  403  a sender or purpose the analyst's key is not bound to
    │   ├── LLMError                    502  unreachable endpoint, timeout, unusable output
    │   ├── SearchError                 422  no DP-compatible formulation was found
    │   ├── NotACountingQuestion        400  the question is not a single count (the offline parser's class)
    │   ├── NotASelectQuestion          400  the question is outside select-project-join
    │   ├── KeyStoreError               400  a key operation the custodian asked for cannot be done
    │   └── ServiceError                400  an HTTP-level refusal of the service; its status is per error (401, 403, 413, 429...)
    └── InternalError                   500  a bug: an invariant of Pimento's own code failed

Only a few exceptions live elsewhere, none of which reaches a user: control flow private to one
module (``_NotJson``, ``_SchemaError``, ``_Invalid``, ``_Unextracted``) and the PostgreSQL ledger's
``LedgerBackendError``, which is a :class:`sqlite3.OperationalError` on purpose (the ledger handles
both backends' errors alike). ``tests/unit/test_errors.py`` pins all of this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from sqlglot import exp

__all__ = [
    "BudgetError",
    "CatalogError",
    "ConfigError",
    "ConstraintViolation",
    "ContextNotAllowedError",
    "DataSourceError",
    "DatabaseChangedError",
    "DeploymentHaltedError",
    "EngineError",
    "EngineQueryError",
    "Highlight",
    "InternalError",
    "KeyStoreError",
    "LLMError",
    "LedgerIntegrityError",
    "ModeError",
    "MostlyNoiseError",
    "NotACountingQuestion",
    "NotASelectQuestion",
    "PimentoError",
    "PolicyError",
    "PrivacyParameterError",
    "QueryTimeout",
    "Refusal",
    "ReleaseAbortedError",
    "SearchError",
    "ServiceError",
    "SqlError",
    "SyntheticCopyError",
    "UnsupportedQuery",
    "UserError",
]


class PimentoError(Exception):
    """Root of every exception Pimento raises on purpose."""

    #: The HTTP status the service answers this error with. A class attribute, set where the tree of
    #: the module docstring says; a subclass that sets none has its parent's (:class:`ServiceError`
    #: alone sets it per error).
    http_status: int = 500
    #: Short hint telling the user what to do next; shown after the message.
    hint: str | None = None

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if hint is not None:
            self.hint = hint

    def one_line(self) -> str:
        """The message and hint on one line, as the CLI prints it."""
        text = " ".join(self.message.split())
        if self.hint:
            text += f" ({' '.join(self.hint.split())})"
        return text


class UserError(PimentoError):
    """Something the user can fix: input, configuration, data, parameters."""

    http_status = 400


class InternalError(PimentoError):
    """An invariant of Pimento's own code failed: this is a bug, please report it."""


class ConfigError(UserError):
    """pimento.toml (or another setting) is invalid."""

    http_status = 503


class DataSourceError(UserError):
    """A database file or server cannot be opened or read."""

    http_status = 503


class EngineError(DataSourceError):
    """The database engine refused or failed a statement."""


class EngineQueryError(EngineError):
    """The engine refused or failed a statement. Its text may quote private data.

    ``message`` (hence ``one_line()``, what the CLI prints) is a fixed text that says nothing
    about the data: :attr:`PUBLIC_MESSAGE`, or :attr:`READ_ONLY_MESSAGE` for a write refused on
    a read-only connection. ``engine_text`` is the engine's own first line, for the custodian's
    audit record; ``str(exc)`` includes it too (for logs and Pimento's own classification, such
    as telling an integer overflow apart), so never show ``str()`` of this error to an analyst.
    """

    PUBLIC_MESSAGE = "the database engine could not run the statement"
    READ_ONLY_MESSAGE = "the database is opened read-only: only reading statements run on it"

    def __init__(self, engine: str, engine_text: str, *, public: str | None = None, hint: str | None = None):
        super().__init__(public or self.PUBLIC_MESSAGE, hint=hint)
        self.engine = engine
        self.engine_text = engine_text
        self.args = (f"{self.message} ({engine}: {engine_text})",)

    def __str__(self) -> str:
        return str(self.args[0])


class QueryTimeout(EngineError):
    """A statement ran past its timeout or was cancelled."""


class DatabaseChangedError(DataSourceError):
    """The database file was replaced or changed since the service opened it: nothing is answered
    from it until the service is restarted (an answer could come from the old data)."""


class SyntheticCopyError(DataSourceError):
    """The synthetic copy cannot be used: its spend is not in this database's ledger (or it is no copy)."""


class CatalogError(UserError):
    """Unknown table or column, or inconsistent schema declarations."""

    http_status = 422


class ConstraintViolation(CatalogError):
    """A declared constraint (key, foreign key, functional dependency) fails on the data."""

    def __init__(self, message: str, *, constraint: str, examples: tuple = (), hint: str | None = None):
        super().__init__(message, hint=hint)
        self.constraint = constraint
        self.examples = examples


@dataclass(frozen=True)
class Highlight:
    """A span of SQL text to show the user: 0-based [start, end) offsets."""

    sql: str
    start: int
    end: int

    @property
    def line(self) -> int:
        return self.sql.count("\n", 0, self.start) + 1

    @property
    def column(self) -> int:
        return self.start - (self.sql.rfind("\n", 0, self.start) + 1) + 1

    @property
    def text(self) -> str:
        return self.sql[self.start : self.end]

    def render(self, mark: str = "^") -> str:
        """The offending line with a marker line under the highlighted span."""
        line_start = self.sql.rfind("\n", 0, self.start) + 1
        line_end = self.sql.find("\n", self.start)
        if line_end == -1:
            line_end = len(self.sql)
        line = self.sql[line_start:line_end]
        width = max(1, min(self.end, line_end) - self.start)
        return line + "\n" + " " * (self.start - line_start) + mark * width


class SqlError(UserError):
    """SQL text that cannot be parsed or resolved."""

    http_status = 422

    def __init__(self, message: str, *, highlight: Highlight | None = None, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.highlight = highlight

    def one_line(self) -> str:
        text = super().one_line()
        if self.highlight is not None and self.highlight.text:
            text += f" [line {self.highlight.line}, col {self.highlight.column}: {self.highlight.text!r}]"
        return text


class UnsupportedQuery(SqlError):
    """Valid SQL that lies outside the DP-compatible counting class.

    ``construct`` names the offending construct with a stable identifier
    (for example ``"group_by"`` or ``"outer_join"``) so that tools can tabulate reasons.
    """

    def __init__(
        self,
        construct: str,
        message: str,
        *,
        highlight: Highlight | None = None,
        hint: str | None = None,
    ):
        super().__init__(message, highlight=highlight, hint=hint)
        self.construct = construct


class Refusal(UnsupportedQuery):
    """Why a selection is outside the allow-list of :mod:`pimento.sql.allowlist`: a construct of its
    ``SELECTION_REASONS``, the node to highlight, and a detail.

    Raised by ``check_selection``; its callers (the parser, ``check_query``) turn it into an
    :class:`UnsupportedQuery` with the reason's text and a highlight into the SQL they read.
    """

    def __init__(self, construct: str, node: exp.Expr, detail: str = ""):
        super().__init__(construct, f"outside the DP-compatible counting class: {construct}" + (f" ({detail})" if detail else ""))
        self.node = node
        self.detail = detail


class PrivacyParameterError(UserError):
    """A privacy parameter is out of range (eps <= 0, delta outside (0, 1), NaN, beta <= 0)."""

    http_status = 422


class BudgetError(UserError):
    """The ledger refuses a spend: cap exhausted, unknown analyst. Nothing was spent."""

    http_status = 409


class MostlyNoiseError(UserError):
    """A spend whose answer the synthetic copy predicts to be mostly noise, refused before the charge because the
    request did not accept it (``accept_noise``). Nothing was spent. ``details``: the public fields of the
    preview that warned (computed on the synthetic copy and public inputs)."""

    http_status = 409

    def __init__(self, message: str, *, hint: str | None = None, details: dict[str, object] | None = None):
        super().__init__(message, hint=hint)
        self.details = dict(details or {})


class LedgerIntegrityError(BudgetError):
    """The ledger failed an integrity check (or is missing while its witness says budget was spent):
    no release is made until the custodian has looked."""

    http_status = 503


class ReleaseAbortedError(BudgetError):
    """A charged release was closed as aborted (its process looked dead or it exceeded the pending
    timeout) before it stored its answer: the answer is withheld, the charge stays."""

    http_status = 500


class DeploymentHaltedError(UserError):
    """Releases on this deployment are halted: a release failed after its charge, and the custodian
    has not resumed the deployment since (``pimento audit resume``).

    Its message is fixed and the same for the request whose failure halted the deployment and for
    every later release request of every analyst while it is halted: it carries no engine text and
    nothing computed from the data. The reason is in the custodian's audit log.
    """

    MESSAGE = (
        "releases on this deployment are halted until its custodian resumes them: no answer is given; "
        "budget already charged stays spent, and nothing is charged while releases are halted"
    )
    HINT = "ask the custodian: `pimento audit show` says why, `pimento audit resume --db DB` resumes"
    http_status = 503

    def __init__(self) -> None:
        super().__init__(self.MESSAGE, hint=self.HINT)


class PolicyError(UserError):
    """A policy clause that cannot be compiled, grounded or satisfied."""

    http_status = 422

    def __init__(self, message: str, *, clause: str | None = None, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.clause = clause


class ModeError(UserError):
    """A release mode that is unknown or lacks what it needs (policy, context), or a bad context or neighbourhood."""

    http_status = 422


class ContextNotAllowedError(ModeError):
    """A request that names a sender or purpose its key is not bound to, or a context mode on a key
    bound to none (the service answers 403, before anything is read or charged)."""

    http_status = 403


class LLMError(UserError):
    """An LLM endpoint that cannot be reached, timed out, or returned unusable output."""

    http_status = 502


class SearchError(UserError):
    """The search found no DP-compatible formulation of the question."""

    http_status = 422


class NotACountingQuestion(UserError):
    """The question is not a single count (a list, an average, a per-group count, ...).

    ``reason`` is a stable identifier: ``"empty"``, ``"no_count"``, ``"group"``, ``"average"``,
    ``"sum"``, ``"extreme"``, ``"list"``, ``"ratio"``.
    """

    def __init__(self, question: str, reason: str, message: str):
        super().__init__(
            message,
            hint="Pimento answers counting questions: 'How many ...', 'Count the number of ...', "
            "'What is the total number of ...'",
        )
        self.question = question
        self.reason = reason


class NotASelectQuestion(UserError):
    """The question asks for something outside select-project-join (a ranking, an average, ...).

    ``reason``: ``"empty"``, ``"average"``, ``"sum"``, ``"extreme"``, ``"group"``, ``"ratio"``.
    """

    def __init__(self, question: str, reason: str, message: str):
        super().__init__(message, hint="ask for rows or columns ('List the names of ...', 'Which ... ?') or a count")
        self.question = question
        self.reason = reason


class KeyStoreError(UserError):
    """A key operation the custodian asked for cannot be done (unknown id, bad analyst name...)."""


class ServiceError(UserError):
    """An HTTP-level refusal of the service (authentication, rate limit, size...), with its own status.

    ``type`` is the envelope's error type: the one given, or the name of the status
    (:attr:`HTTP_TYPES`); ``headers`` go with the response (``WWW-Authenticate``, ``Retry-After``).
    """

    #: The envelope's error type of an HTTP status, for refusals that name none of their own.
    HTTP_TYPES: ClassVar[dict[int, str]] = {
        400: "BadRequest",
        401: "Unauthorized",
        403: "Forbidden",
        404: "NotFound",
        405: "MethodNotAllowed",
        413: "PayloadTooLarge",
        415: "UnsupportedMediaType",
        429: "RateLimited",
    }

    def __init__(
        self, status: int, message: str, *, hint: str | None = None, type_: str | None = None, headers: dict[str, str] | None = None
    ):
        super().__init__(message, hint=hint)
        self.http_status = status
        self.type = type_ or self.HTTP_TYPES.get(status, "Error")
        self.headers = headers or {}

    @property
    def status(self) -> int:
        """The HTTP status of this refusal (:attr:`http_status`)."""
        return self.http_status
