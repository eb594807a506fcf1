"""Exceptions raised by Pimento.

One root, :class:`PimentoError`. Everything a user can cause and fix is a
:class:`UserError`; :class:`InternalError` means "this is a bug in Pimento".
The CLI prints a user error as one line and exits with status 2; an internal
error is printed with a request to report it and exits with status 70.

    PimentoError
    ├── UserError
    │   ├── ConfigError             pimento.toml missing keys, typos, bad values
    │   ├── DataSourceError         missing file, unreadable database, bad DSN
    │   │   └── EngineError         the engine refused a statement
    │   │       └── QueryTimeout    the statement ran past its timeout / was cancelled
    │   ├── CatalogError            unknown table or column, inconsistent declarations
    │   │   └── ConstraintViolation a declared key/FK/FD does not hold in the data
    │   ├── SqlError                SQL that does not parse
    │   │   └── UnsupportedQuery    valid SQL outside the DP-compatible class
    │   ├── PrivacyParameterError   eps <= 0, delta outside (0, 1), NaN, beta <= 0
    │   ├── BudgetError             a spend the ledger refuses (nothing was spent)
    │   ├── ReleaseFailedError      a charged release failed; the charge stands, details in the audit log
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
    "EngineError",
    "Highlight",
    "InternalError",
    "LLMError",
    "PimentoError",
    "PolicyError",
    "PrivacyParameterError",
    "QueryTimeout",
    "ReleaseFailedError",
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


class ReleaseFailedError(UserError):
    """A release failed after its charge: the charge stands, the custodian's audit log has the reason.

    Its message is fixed: it carries no engine text and nothing computed from the data.
    """

    MESSAGE = (
        "the release failed after its budget was charged: the budget stays spent and no answer is given; "
        "the custodian's audit log records the reason"
    )

    def __init__(self, *, charge_id: int | None = None) -> None:
        super().__init__(self.MESSAGE, hint="ask the custodian to check `pimento audit`")
        self.charge_id = charge_id


class PolicyError(UserError):
    """A policy clause that cannot be compiled, grounded or satisfied."""

    def __init__(self, message: str, *, clause: str | None = None, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.clause = clause


class LLMError(UserError):
    """An LLM endpoint that cannot be reached, timed out, or returned unusable output."""


class SearchError(UserError):
    """The search found no DP-compatible formulation of the question."""
