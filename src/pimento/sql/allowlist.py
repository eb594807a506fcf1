"""The expressions a selection may use: nothing that can fail on the data, reveal it, or vary.

A selection runs on private rows before anything is charged, and the count and its sensitivity
(T_E) run it in separate statements. So a selection must be a *total, deterministic* function of
the row: an engine error would print a private value ("Could not convert string 'Ana Baker'") or
answer one bit for free (whether the statement failed at all), and a non-deterministic function
(``random()``) would let the count and T_E see different rows.

The allow-list (anything else is refused with an :class:`~pimento.errors.UnsupportedQuery`):

* ``AND``, ``OR``, ``NOT``, parentheses, ``TRUE``/``FALSE``, a boolean column on its own;
* comparisons ``= <> < <= > >=``, ``IS [NOT] DISTINCT FROM``, ``BETWEEN``, ``IN (literal, ...)``,
  ``IS [NOT] NULL``, ``IS [NOT] TRUE/FALSE`` (on a boolean) between operands of the *same type
  family*, so that no engine casts a column: number with number, text with text (or a string),
  boolean with ``TRUE``/``FALSE``, date and timestamp with each other or with a string that is a
  valid ISO date or timestamp (checked here, so the engine's cast of the constant cannot fail),
  time with a valid ``HH:MM[:SS]`` string, uuid with a valid uuid string. A string compared with a
  number column is rewritten to the number when it is a plain decimal numeral (SQLite, DuckDB and
  PostgreSQL all compare it as that number), and refused otherwise;
* ``[NOT] LIKE``/``[NOT] ILIKE`` of a text value with a string-literal pattern (at most
  :data:`MAX_PATTERN_CHARS` characters; a backslash only with an explicit ``ESCAPE``, and no
  dangling escape character, which PostgreSQL and DuckDB refuse at run time). ``ESCAPE`` takes one
  character of :data:`ESCAPE_CHARACTERS` (printable ASCII other than letters): DuckDB refuses a
  multi-byte escape (``'é'``) and SQLite an empty one, but only when a row reaches the predicate,
  and ILIKE folds the case of a letter escape differently on each engine (DuckDB lowercases the
  pattern, so ``'aX' ESCAPE 'x'`` dangles there alone);
* operands: columns, literals (numbers within what every engine converts without error: integers
  in the signed 64-bit range [-2^63, 2^63 - 1], finite decimals of at most
  :data:`MAX_NUMBER_CHARS` characters that are 0 or of magnitude at least
  :data:`MIN_DECIMAL_MAGNITUDE`, below which PostgreSQL's conversion to a double fails; strings
  without a NUL character, which no engine accepts in a statement, or a lone surrogate, which
  cannot be encoded in UTF-8), ``NULL``,
  ``DATE '...'``/``TIMESTAMP '...'`` of a valid literal, ``LOWER``/``UPPER``/``LENGTH`` of a text
  value, and date parts (``EXTRACT(YEAR|MONTH|DAY FROM d)``, ``YEAR(d)``, ``MONTH(d)``,
  ``DAY(d)``; also ``HOUR``/``MINUTE``/``SECOND`` of a timestamp) of a date or timestamp column.

Refused, each with its reason: casts (``CAST``, ``::``, ``TRY_CAST``, which PostgreSQL and SQLite
render as a plain cast), arithmetic (integer overflow raises on DuckDB and PostgreSQL, division by
zero on PostgreSQL; no rewrite makes it total on all three), every other function (``error()``,
``current_setting()``, ``getenv()``, ``read_csv()``, regular expressions, string functions that
raise, user functions), non-deterministic functions (``random()``, ``now()``, ``CURRENT_DATE``,
``uuid()``, ``setseed()``, ...), ``CASE``, string concatenation, and subqueries (the parser
handles the rewritable ``IN (SELECT ...)`` before this check).

``CURRENT_DATE`` is refused although it is constant within one statement: the count and T_E are
different statements, and a release may straddle midnight.

The parser applies :func:`check_selection` to every selection it reads. A
:class:`~pimento.sql.ir.CountQuery` built another way (the offline translator, the search's
actions) goes through :func:`check_query` before it runs on private data.
"""

from __future__ import annotations

import datetime as _dt
import re
import uuid as _uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from sqlglot import exp

from pimento.errors import Highlight, Refusal, UnsupportedQuery
from pimento.schema import Catalog
from pimento.sql.ir import CountQuery, Selection

__all__ = [
    "ESCAPE_CHARACTERS",
    "MAX_NUMBER_CHARS",
    "MIN_DECIMAL_MAGNITUDE",
    "MAX_PATTERN_CHARS",
    "SELECTION_REASONS",
    "check_query",
    "check_runs_on",
    "check_selection",
    "column_family",
    "unrunnable_character",
]

#: Stable identifiers of the refusals of this module, with a human description.
SELECTION_REASONS: dict[str, str] = {
    "cast": "cast in a selection (it can fail on the data, and the engine's error names the value)",
    "arithmetic": "arithmetic in a selection (it can overflow or divide by zero on the data)",
    "function": "function outside the selection allow-list",
    "nondeterministic_function": "non-deterministic function in a selection (the count and its sensitivity would see different rows)",
    "type_mismatch": "comparison that makes the engine cast a column (the cast can fail on the data)",
    "like_pattern": "LIKE pattern that is not a plain string literal every engine accepts",
    "literal": "literal that an engine may fail to convert",
    "expression": "expression outside the selection allow-list",
}

#: Longest LIKE pattern accepted (SQLite refuses patterns over 50,000 bytes at run time).
MAX_PATTERN_CHARS = 1000
#: Longest non-integer numeric literal accepted.
MAX_NUMBER_CHARS = 40
#: Smallest magnitude of a non-zero decimal literal: PostgreSQL reads ``1e-400`` as a NUMERIC and
#: fails to convert it to a DOUBLE PRECISION (underflow) when it meets a float column.
MIN_DECIMAL_MAGNITUDE = Fraction(1, 10**300)
#: The characters ``LIKE ... ESCAPE`` accepts: one printable ASCII character that is not a letter.
#: DuckDB wants a one-byte escape and SQLite a non-empty one (each fails only when a row reaches
#: the predicate), and a letter's case is folded by ILIKE differently on each engine.
ESCAPE_CHARACTERS = frozenset(chr(c) for c in range(0x20, 0x7F) if not chr(c).isalpha())

_NONDETERMINISTIC = frozenset(
    {
        "rand", "random", "randn", "randomblob", "random_bytes", "setseed", "uuid", "gen_random_uuid",
        "uuid_generate_v4", "uuid_generate_v1", "generateuuid", "now", "today", "current_date", "currentdate",
        "current_time", "currenttime", "current_timestamp", "currenttimestamp", "currentdatetime",
        "current_datetime", "localtimestamp", "localtime", "clock_timestamp", "statement_timestamp",
        "transaction_timestamp", "timeofday", "get_current_time", "get_current_timestamp", "nextval",
        "currval", "lastval", "changes", "total_changes", "last_insert_rowid", "txid_current",
        "pg_backend_pid", "epoch_ms", "unixepoch", "currentschema", "current_schema", "current_user",
        "session_user", "currentuser",
    }
)
_WHY = {
    "error": "it raises an error carrying its argument",
    "current_setting": "it reads the server's settings",
    "getenv": "it reads the server's environment",
    "regexpmatches": "a regular expression can fail or be costly on the data",
    "regexplike": "a regular expression can fail or be costly on the data",
}
_DATE_PARTS = {"YEAR", "MONTH", "DAY"}
_TIME_PARTS = {"HOUR", "MINUTE", "SECOND"}
#: A plain decimal numeral, ASCII digits only (``\d`` alone also matches ``"٣"``, which no engine reads).
_NUMERAL = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$", re.ASCII)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?)?$")
_TIME = re.compile(r"^\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?$")
_TEMPORAL = frozenset({"date", "timestamp"})
#: Integer literals lie in the signed 64-bit range [-2^63, 2^63 - 1] that every engine reads.
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1


#: Raw type names whose values are not scalars of their family: nested types (``VARCHAR[]``,
#: ``STRUCT(a INT)``, ``MAP(VARCHAR, INT)``, PostgreSQL ``text[]``) and types whose name merely
#: contains a family's needle (``INTERVAL`` and ``POINT`` contain ``INT``).
_NOT_SCALAR = ("[", "STRUCT", "MAP(", "UNION(", "ARRAY", "INTERVAL", "POINT", "JSON", "ENUM", "RANGE", "VECTOR")


def column_family(type_family: str, raw_type: str) -> str:
    """The comparison family of a catalog column: its type family, with uuid told apart from text.

    >>> column_family("integer", "BIGINT"), column_family("text", "VARCHAR[]"), column_family("integer", "interval")
    ('number', 'other', 'other')
    """
    raw = (raw_type or "").upper()
    if any(marker in raw for marker in _NOT_SCALAR):
        return "other"
    if "UUID" in raw:
        return "uuid"
    if type_family in ("integer", "real"):
        # DuckDB compares a DECIMAL or HUGEINT with a decimal literal, or with another such
        # column, in a DECIMAL type that may not hold the row's value (and fails on the data):
        # those columns keep their raw type, so that only identical ones compare directly.
        if any(marker in raw for marker in ("DEC", "NUMERIC", "HUGEINT", "INT128")):
            return f"number:{' '.join(raw.split())}"
        return "number"
    return type_family


@dataclass(frozen=True)
class _Value:
    family: str  # number, text, boolean, date, timestamp, time, uuid, blob, other, string, null
    literal: exp.Expr | None = None  # the literal node for "string" / "number" literals


def check_selection(node: exp.Expr, family_of: Callable[[exp.Column], str]) -> exp.Expr:
    """Check a single-relation predicate against the allow-list; return it, numerals rewritten.

    Args:
        node: the predicate (a sqlglot tree; it is not modified).
        family_of: the comparison family of a column (:func:`column_family` of its catalog type).

    Raises:
        Refusal: the first construct outside the allow-list, with the node to highlight.
    """
    node = node.copy()
    _Checker(family_of).predicate(node)
    return node


#: Allowed constructs an engine's dialect cannot run at all (a failure whatever the data, but
#: after the charge if it is not refused here): SQLite has no EXTRACT and no YEAR()/HOUR()/...
_UNRUNNABLE_ON: dict[str, tuple[type[exp.Expr], ...]] = {
    "sqlite": (exp.Extract, exp.Year, exp.Month, exp.Day, exp.Hour, exp.Minute, exp.Second),
}


def check_runs_on(query: CountQuery, dialect: str) -> None:
    """Refuse, before anything is charged, an admitted query that the engine of ``dialect`` cannot run.

    The allow-list is shared by every engine; a few of its constructs do not exist in some
    dialects (date parts on SQLite). Their failure does not depend on the data, but it would come
    after the charge, so the release path asks here first.

    >>> from pimento.sql.ir import Count, CountQuery, Relation, Selection
    >>> q = CountQuery((Relation("t", "t"),), (), (Selection("t", "YEAR(t.d) = 2020"),), Count())
    >>> check_runs_on(q, "duckdb")
    >>> check_runs_on(q, "sqlite")
    Traceback (most recent call last):
    ...
    pimento.errors.UnsupportedQuery: date part YEAR(t.d) is not supported on a sqlite database
    """
    kinds = _UNRUNNABLE_ON.get(dialect)
    if not kinds:
        return
    for selection in query.selections:
        found = selection.expression().find(*kinds)
        if found is not None:
            raise UnsupportedQuery(
                "function",
                f"date part {found.sql()} is not supported on a {dialect} database",
                hint="compare the date column with date literals instead (d >= '2020-01-01' AND d < '2021-01-01')",
            )


def check_query(query: CountQuery, catalog: Catalog) -> CountQuery:
    """The query with its selections checked against the allow-list (numerals rewritten), or a refusal.

    For queries not read by the parser. Also refuses a cross product (relations not joined).

    Raises:
        UnsupportedQuery: a selection outside the allow-list (``construct`` from
            :data:`SELECTION_REASONS`, highlight into the predicate), or ``cross_product``.
    """
    if len(query.relations) > 1 and not query.is_connected:
        raise UnsupportedQuery(
            "cross_product",
            "outside the DP-compatible counting class: cross product (a relation joined to the others by no equality)",
            hint="join every relation to the others with an equality",
        )
    checked = []
    for selection in query.selections:
        table = catalog.table(query.relation(selection.alias).table)

        def family_of(column: exp.Column, table=table) -> str:
            col = table.column(column.name)
            return column_family(col.type, col.raw_type)

        tree = selection.expression()
        try:
            rewritten = check_selection(tree, family_of)
        except Refusal as refusal:
            text = selection.predicate
            shown = refusal.node.sql()
            start = text.find(shown)
            highlight = Highlight(text, start, start + len(shown)) if start >= 0 else None
            detail = f" ({refusal.detail})" if refusal.detail else ""
            raise UnsupportedQuery(
                refusal.construct,
                f"outside the DP-compatible counting class: {SELECTION_REASONS[refusal.construct]}{detail}",
                highlight=highlight,
                hint="Pimento releases COUNT queries over equi-joins with single-relation filters",
            ) from None
        checked.append(Selection(selection.alias, rewritten.sql()))
    return CountQuery(query.relations, query.joins, tuple(checked), query.count)


class _Checker:
    def __init__(self, family_of: Callable[[exp.Column], str]) -> None:
        self.family_of = family_of

    # ------------------------------------------------------------------ predicates
    def predicate(self, node: exp.Expr) -> None:
        if isinstance(node, exp.Paren):
            return self.predicate(node.this)
        if isinstance(node, (exp.And, exp.Or)):
            self.predicate(node.this)
            return self.predicate(node.expression)
        if isinstance(node, exp.Not):
            return self.predicate(node.this)
        if isinstance(node, exp.Boolean):
            return None
        if isinstance(node, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ)):
            left, right = self.value(node.this), self.value(node.expression)
            return self.compare(node, left, right)
        if isinstance(node, exp.Between):
            value = self.value(node.this)
            self.compare(node, value, self.value(node.args["low"]))
            return self.compare(node, self.value(node.this), self.value(node.args["high"]))
        if isinstance(node, exp.In):
            if node.args.get("query") is not None or node.args.get("unnest") is not None or node.args.get("field") is not None:
                raise Refusal("expression", node, "IN over something other than a list of literals")
            value = self.value(node.this)
            for item in node.expressions:
                if not _is_literal(item):
                    raise Refusal("expression", item, "IN lists hold literals only")
                self.compare(node, value, self.value(item))
                value = self.value(node.this)
            return None
        if isinstance(node, exp.Is):
            value = self.value(node.this)
            target = node.expression
            if isinstance(target, exp.Null):
                return None
            if isinstance(target, exp.Boolean) and value.family in ("boolean", "null"):
                return None
            raise Refusal("type_mismatch", node, "IS TRUE / IS FALSE apply to a boolean")
        if isinstance(node, exp.Escape):
            like = node.this
            escape = node.expression
            if not isinstance(like, (exp.Like, exp.ILike)):
                raise Refusal("expression", node, "ESCAPE outside LIKE")
            if not (isinstance(escape, exp.Literal) and escape.is_string and escape.this in ESCAPE_CHARACTERS):
                raise Refusal("like_pattern", escape, "ESCAPE takes one printable ASCII character other than a letter")
            return self.like(like, escape.this)
        if isinstance(node, (exp.Like, exp.ILike)):
            return self.like(node, None)
        if isinstance(node, exp.Column):
            if self.value(node).family != "boolean":
                raise Refusal("type_mismatch", node, "a column used as a condition must be boolean")
            return None
        # A value in a predicate position (e.g. a bare literal or function): refuse with its reason.
        value = self.value(node)
        if value.family not in ("boolean", "null"):
            raise Refusal("type_mismatch", node, "a condition must be boolean")
        return None

    def like(self, node: exp.Like | exp.ILike, escape: str | None) -> None:
        value = self.value(node.this)
        if value.family not in ("text", "string", "null"):
            raise Refusal("type_mismatch", node, f"LIKE applies to text, not {value.family}")
        pattern = node.expression
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            raise Refusal("like_pattern", pattern, "the pattern must be a string literal")
        text = pattern.this
        _check_string(pattern, text)
        if len(text) > MAX_PATTERN_CHARS:
            raise Refusal("like_pattern", pattern, f"longer than {MAX_PATTERN_CHARS} characters")
        if escape is None:
            if "\\" in text:
                raise Refusal("like_pattern", pattern, "a backslash needs an explicit ESCAPE (engines read it differently)")
            return
        i = 0
        while i < len(text):
            if text[i] == escape:
                if i + 1 >= len(text):
                    raise Refusal("like_pattern", pattern, "the pattern ends with its escape character")
                i += 2
            else:
                i += 1

    # ------------------------------------------------------------------ values
    def value(self, node: exp.Expr) -> _Value:
        if isinstance(node, exp.Paren):
            return self.value(node.this)
        if isinstance(node, exp.Column):
            if isinstance(node.this, exp.Star):
                raise Refusal("expression", node, "* in a selection")
            return _Value(self.family_of(node))
        if isinstance(node, exp.Null):
            return _Value("null")
        if isinstance(node, exp.Boolean):
            return _Value("boolean")
        if isinstance(node, exp.Literal):
            if node.is_string:
                _check_string(node, node.this)
                return _Value("string", node)
            _check_number(node, node.this)
            _as_double(node, integers=False)
            return _Value("number", node)
        if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
            _check_number(node, "-" + node.this.this)
            _as_double(node.this, integers=False)
            return _Value("number", node.this)
        if isinstance(node, (exp.Lower, exp.Upper, exp.Length)):
            arg = self.value(node.this)
            if arg.family not in ("text", "string", "null"):
                raise Refusal("type_mismatch", node, f"{node.sql_name()} applies to text, not {arg.family}")
            return _Value("number" if isinstance(node, exp.Length) else "text")
        if isinstance(node, (exp.Year, exp.Month, exp.Day)):
            return self.date_part(node, node.sql_name().upper(), node.this)
        if isinstance(node, exp.Extract):
            unit = node.this.name.upper() if isinstance(node.this, (exp.Var, exp.Identifier)) else ""
            return self.date_part(node, unit, node.expression)
        if isinstance(node, (exp.Cast, exp.TryCast)):
            typed = _typed_literal(node)
            if typed is not None:
                return typed
            to = node.args.get("to")
            raise Refusal("cast", node, f"{node.sql_name()} to {to.sql() if to is not None else '?'}")
        raise _refusal_for(node)

    def date_part(self, node: exp.Expr, unit: str, arg: exp.Expr) -> _Value:
        value = self.value(arg)
        if value.family not in _TEMPORAL or arg.find(exp.Column) is None:
            raise Refusal("type_mismatch", node, f"date parts apply to a date or timestamp column, not {value.family}")
        if unit in _DATE_PARTS or (unit in _TIME_PARTS and value.family == "timestamp"):
            return _Value("number")
        raise Refusal("function", node, f"date part {unit or '?'} of a {value.family} is not on the allow-list")

    # ------------------------------------------------------------------ comparisons
    def compare(self, node: exp.Expr, left: _Value, right: _Value) -> None:
        if "null" in (left.family, right.family):
            return
        a, b = left.family, right.family
        if _numeric(a) and _numeric(b):
            for value, other in ((left, b), (right, a)):
                if value.literal is not None and other != "number":
                    _as_double(value.literal, integers=True)  # a DECIMAL/HUGEINT column: compare as doubles
            if left.literal is None and right.literal is None and a != b:
                raise Refusal("type_mismatch", node, f"compares {_name(a)} with {_name(b)}")
            return
        if a == b and a not in ("blob", "other"):
            return
        if {a, b} <= _TEMPORAL:
            return
        if a == "string":
            a, b, left, right = b, a, right, left
        if b == "string" and right.literal is not None:
            return self.string_against(node, a, right.literal)
        raise Refusal("type_mismatch", node, f"compares {_name(a)} with {_name(b)}")

    def string_against(self, node: exp.Expr, family: str, literal: exp.Expr) -> None:
        text = literal.this
        if family == "text":
            return
        if _numeric(family):
            if _NUMERAL.match(text):
                _check_number(literal, text)
                number = _number_literal(text)
                literal.replace(number)
                digits = number.this if isinstance(number, exp.Neg) else number
                _as_double(digits, integers=family != "number")
                return
            raise Refusal("type_mismatch", literal, "compares a number column with a string that is not a number")
        if family in _TEMPORAL:
            if _valid_temporal(text, date_only=False):
                return
            raise Refusal("literal", literal, "not a valid ISO date or timestamp (YYYY-MM-DD[ HH:MM[:SS]])")
        if family == "time":
            if _TIME.match(text) and _valid_time(text):
                return
            raise Refusal("literal", literal, "not a valid time (HH:MM[:SS])")
        if family == "uuid":
            try:
                _uuid.UUID(text)
            except ValueError:
                raise Refusal("literal", literal, "not a valid uuid") from None
            return
        raise Refusal("type_mismatch", node, f"compares {_name(family)} with a string")


def _is_literal(node: exp.Expr) -> bool:
    if isinstance(node, exp.Paren):
        return _is_literal(node.this)
    if isinstance(node, (exp.Literal, exp.Null, exp.Boolean)):
        return True
    if isinstance(node, exp.Neg):
        return isinstance(node.this, exp.Literal) and not node.this.is_string
    return isinstance(node, exp.Cast) and _typed_literal(node) is not None


def _typed_literal(node: exp.Cast | exp.TryCast) -> _Value | None:
    """``DATE '2020-01-01'`` / ``TIMESTAMP '...'`` of a valid literal: a constant, not a cast of data."""
    inner, to = node.this, node.args.get("to")
    if not (isinstance(inner, exp.Literal) and inner.is_string and isinstance(to, exp.DataType)):
        return None
    if to.is_type(exp.DataType.Type.DATE) and _valid_temporal(inner.this, date_only=True):
        return _Value("date")
    if to.is_type(exp.DataType.Type.TIMESTAMP) and _valid_temporal(inner.this, date_only=False):
        return _Value("timestamp")
    return None


def _valid_temporal(text: str, *, date_only: bool) -> bool:
    pattern = _DATE if date_only else _TIMESTAMP
    if not pattern.match(text):
        return False
    try:
        if len(text) == 10:
            _dt.date.fromisoformat(text)
        else:
            _dt.datetime.fromisoformat(text.replace(" ", "T"))
    except ValueError:
        return False
    return True


def _valid_time(text: str) -> bool:
    try:
        _dt.time.fromisoformat(text)
    except ValueError:
        return False
    return True


def unrunnable_character(text: str) -> str | None:
    """Why no engine runs a statement holding ``text`` (in a string or a quoted name), or None.

    A NUL character: DuckDB and PostgreSQL end the text there and refuse the statement, SQLite
    refuses it. A lone surrogate: the statement cannot be encoded in UTF-8.

    >>> unrunnable_character("Ω 😀"), unrunnable_character("a\\x00b")
    (None, 'a NUL character, which no engine accepts')
    """
    if "\x00" in text:
        return "a NUL character, which no engine accepts"
    if any("\ud800" <= char <= "\udfff" for char in text):
        return "a lone surrogate, which is not UTF-8"
    return None


def _check_string(node: exp.Expr, text: str) -> None:
    """Refuse a string literal that no engine accepts in a statement (:func:`unrunnable_character`)."""
    reason = unrunnable_character(text)
    if reason is not None:
        raise Refusal("literal", node, f"a string holds {reason}")


def _check_number(node: exp.Expr, text: str) -> None:
    """Refuse a numeral (``text``, its sign included) that an engine may fail to read or convert."""
    stripped = text.lstrip("+-")
    if stripped.isascii() and stripped.isdigit() and len(text) - len(stripped) <= 1:
        if not _INT_MIN <= int(text) <= _INT_MAX:
            raise Refusal("literal", node, "integer literals must lie in the signed 64-bit range [-2^63, 2^63 - 1]")
        return
    if not _NUMERAL.match(text):
        raise Refusal("literal", node, "not a plain decimal numeral")
    try:
        value = float(text)
        exact = Decimal(text)
    except (ValueError, InvalidOperation):
        raise Refusal("literal", node, "not a number") from None
    if not exact.is_finite() or value in (float("inf"), float("-inf")) or len(text.removesuffix("e0")) > MAX_NUMBER_CHARS:
        raise Refusal("literal", node, f"numbers must be finite and at most {MAX_NUMBER_CHARS} characters")
    if exact != 0 and Fraction(abs(exact)) < MIN_DECIMAL_MAGNITUDE:
        raise Refusal("literal", node, "a non-zero number must be at least 1e-300 in magnitude")


def _number_literal(text: str) -> exp.Expr:
    text = text.lstrip("+")
    if text.startswith("-"):
        return exp.Neg(this=exp.Literal.number(text[1:]))
    return exp.Literal.number(text)


def _numeric(family: str) -> bool:
    return family == "number" or family.startswith("number:")


def _as_double(literal: exp.Expr, *, integers: bool) -> None:
    """Write a numeric literal in exponent form, which every engine reads as a double (DuckDB then
    casts the column to DOUBLE, which cannot fail): always for decimals, for integers on request."""
    if not isinstance(literal, exp.Literal) or literal.is_string:
        return
    text = literal.this
    if "e" in text.lower():
        return
    if integers or not text.lstrip("+-").isdigit():
        literal.set("this", text + "e0")


def _name(family: str) -> str:
    if family.startswith("number:"):
        return f"a {family.split(':', 1)[1]} column"
    return {"string": "a string", "number": "a number", "null": "NULL"}.get(family, f"a {family} column")


def _refusal_for(node: exp.Expr) -> Refusal:
    """The reason an operand outside the allow-list is refused."""
    if isinstance(node, (exp.Subquery, exp.Select, exp.Exists)):
        return Refusal("expression", node, "subquery")
    names = {type(node).__name__.lower()}
    if isinstance(node, exp.Func):
        names.add(node.sql_name().lower())
    if isinstance(node, exp.Anonymous):
        names.add(str(node.name).lower())
    if names & _NONDETERMINISTIC:
        shown = node.name if isinstance(node, exp.Anonymous) else node.sql_name() if isinstance(node, exp.Func) else type(node).__name__
        return Refusal("nondeterministic_function", node, f"{shown}()")
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv, exp.Pow, exp.Neg)) or (
        isinstance(node, exp.Binary) and type(node).__name__.startswith("Bitwise")
    ):
        return Refusal("arithmetic", node, type(node).__name__.upper())
    if isinstance(node, exp.Func):
        shown = node.name if isinstance(node, exp.Anonymous) else node.sql_name() if isinstance(node, exp.Func) else type(node).__name__
        why = next((_WHY[n] for n in names if n in _WHY), "it is not known to be total on every engine")
        return Refusal("function", node, f"{shown}(): {why}")
    return Refusal("expression", node, type(node).__name__.upper())
