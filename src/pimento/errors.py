"""Exceptions raised by Pimento.

One root, :class:`PimentoError`. Everything a user can cause and fix is a
:class:`UserError`; :class:`InternalError` means "this is a bug in Pimento".
The CLI prints a user error as one line and exits with status 2; an internal
error is printed with a request to report it and exits with status 70.

    PimentoError
    ├── UserError
    │   ├── ConfigError             pimento.toml missing keys, typos, bad values
    │   ├── DataSourceError         missing file, unreadable database, bad DSN
    │   │   ├── EngineError         the engine refused a statement
    │   │   │   └── QueryTimeout    the statement ran past its timeout / was cancelled
    │   │   └── DatabaseChangedError the database file was replaced or changed under a running service
    │   ├── CatalogError            unknown table or column, inconsistent declarations
    │   │   └── ConstraintViolation a declared key/FK/FD does not hold in the data
    │   ├── SqlError                SQL that does not parse
    │   │   └── UnsupportedQuery    valid SQL outside the DP-compatible class
    │   ├── PrivacyParameterError   eps <= 0, delta outside (0, 1), NaN, beta <= 0
    │   ├── BudgetError             a spend the ledger refuses (nothing was spent)
    │   ├── DeploymentHaltedError   releases are halted (a release failed after its charge) until the custodian resumes
    │   ├── PolicyError             a policy clause that cannot be compiled or grounded
    │   ├── LLMError                unreachable endpoint, timeout, unusable output
    │   └── SearchError             no DP-compatible formulation was found
    └── InternalError               a bug: an invariant of Pimento's own code failed
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BudgetError",
    "CatalogError",
    "ConfigError",
    "ConstraintViolation",
    "DataSourceError",
    "DatabaseChangedError",
    "DeploymentHaltedError",
    "EngineError",
    "Highlight",
    "InternalError",
    "LLMError",
    "PimentoError",
    "PolicyError",
    "PrivacyParameterError",
    "QueryTimeout",
    "SearchError",
    "SqlError",
    "UnsupportedQuery",
    "UserError",
]


class PimentoError(Exception):
    """Root of every exception Pimento raises on purpose."""

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


class InternalError(PimentoError):
    """An invariant of Pimento's own code failed: this is a bug, please report it."""


class ConfigError(UserError):
    """pimento.toml (or another setting) is invalid."""


class DataSourceError(UserError):
    """A database file or server cannot be opened or read."""


class EngineError(DataSourceError):
    """The database engine refused or failed a statement."""


class QueryTimeout(EngineError):
    """A statement ran past its timeout or was cancelled."""


class DatabaseChangedError(DataSourceError):
    """The database file was replaced or changed since the service opened it: nothing is answered
    from it until the service is restarted (an answer could come from the old data)."""


class CatalogError(UserError):
    """Unknown table or column, or inconsistent schema declarations."""


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


class PrivacyParameterError(UserError):
    """A privacy parameter is out of range (eps <= 0, delta outside (0, 1), NaN, beta <= 0)."""


class BudgetError(UserError):
    """The ledger refuses a spend: cap exhausted, unknown analyst. Nothing was spent."""


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

    def __init__(self) -> None:
        super().__init__(self.MESSAGE, hint=self.HINT)


class PolicyError(UserError):
    """A policy clause that cannot be compiled, grounded or satisfied."""

    def __init__(self, message: str, *, clause: str | None = None, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.clause = clause


class LLMError(UserError):
    """An LLM endpoint that cannot be reached, timed out, or returned unusable output."""


class SearchError(UserError):
    """The search found no DP-compatible formulation of the question."""
