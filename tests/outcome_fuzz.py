"""Generator of the differential fuzzer of the release outcome (issue 23), importable: tests/ is on sys.path.

A release's outcome (answered, or which error) must not depend on the private data. This module
generates, from a seeded ``random.Random``:

* counting queries over a small schema (``person <- visit <- rx``, keys and foreign keys: single
  relations, joins over the foreign keys, and ``IN (SELECT ...)`` semi-joins), each
  relation filtered by a random selection built from every construct the selection allow-list
  (:mod:`pimento.sql.allowlist`) accepts -- comparisons, ``IS [NOT] DISTINCT FROM``, ``BETWEEN``,
  ``[NOT] IN``, ``IS [NOT] NULL``, ``[NOT] LIKE`` / ``[NOT] ILIKE`` with and without ``ESCAPE``,
  ``LOWER`` / ``UPPER`` / ``LENGTH``, date parts, boolean columns, ``AND`` / ``OR`` / ``NOT`` --
  with adversarial literals (non-ASCII and multi-byte text, empty strings, quotes, backslashes,
  ``%`` and ``_``, NUL and lone surrogates, 64-bit boundaries and beyond, tiny and huge decimals,
  invalid dates), and some constructs it refuses (so that refusals are exercised too);
* for each query, databases: ``none`` (no row at all, so no predicate is ever evaluated),
  ``hit`` (rows built from the query's own literals, so that a row satisfies each relation's
  conjuncts and reaches every predicate, plus adversarial rows: NULLs, extremes, Unicode), and
  random single-tuple neighbours of ``hit`` (one tuple added or removed, foreign keys kept).

The test (``tests/system/test_outcome_fuzz.py``) runs each admitted query's private computation on
every database and engine and compares the outcomes.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

#: relation -> columns as (name, kind); the first column is the key. Kinds: int, bigint, double,
#: decimal, text, date, timestamp, bool; ``fk:<relation>`` references that relation's key.
TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "person": (("id", "int"), ("name", "text"), ("age", "int"), ("big", "bigint"), ("score", "double"),
               ("amount", "decimal"), ("born", "date"), ("seen", "timestamp"), ("active", "bool")),
    "visit": (("vid", "int"), ("pid", "fk:person"), ("dx", "text"), ("cost", "double"), ("day", "date"),
              ("urgent", "bool")),
    "rx": (("rid", "int"), ("vid", "fk:visit"), ("drug", "text"), ("dose", "int")),
}
ORDER = ("person", "visit", "rx")  # parents first
ALIAS = {"person": "p", "visit": "v", "rx": "r"}
#: the joins the generator uses: over foreign keys only
JOINS = {("person", "visit"): "p.id = v.pid", ("visit", "rx"): "v.vid = r.vid"}
SHAPES = (("person",), ("visit",), ("rx",), ("person", "visit"), ("visit", "rx"), ("person", "visit", "rx"))

_SQL_TYPES = {
    "duckdb": {"int": "INTEGER", "bigint": "BIGINT", "double": "DOUBLE", "decimal": "DECIMAL(12,2)", "text": "VARCHAR",
               "date": "DATE", "timestamp": "TIMESTAMP", "bool": "BOOLEAN"},
    "sqlite": {"int": "INTEGER", "bigint": "BIGINT", "double": "DOUBLE", "decimal": "DECIMAL(12,2)", "text": "TEXT",
               "date": "DATE", "timestamp": "TIMESTAMP", "bool": "BOOLEAN"},
    "postgres": {"int": "INTEGER", "bigint": "BIGINT", "double": "DOUBLE PRECISION", "decimal": "NUMERIC(12,2)",
                 "text": "TEXT", "date": "DATE", "timestamp": "TIMESTAMP", "bool": "BOOLEAN"},
}

# ------------------------------------------------------------------------------ adversarial literals

#: text values and pieces of strings: empty, quotes, backslashes, wildcards, multi-byte, combining
#: marks, case-folding oddities (ß, İ, ǅ), control characters, the last code point; NUL and a
#: lone surrogate (which the allow-list must refuse, as no engine runs them)
TEXTS = ("", "x", "Ana Baker", "a'b", "a\\b", "100%", "a_b", "%", "_", "é", "Ω\u0301", "😀", "ß", "İ", "ǅ",
         "\x01", "\u200b", "\U0010ffff", "ÜNÏ", "x" * 300)
RARE_TEXTS = ("\x00", "a\x00b", "\ud800")
PATTERN_PIECES = ("%", "_", "a", "x", "é", "😀", "\\", "'", "!", "Ω", "ß", "İ", "A", "X", "0", " ")
#: ESCAPE characters: the accepted ASCII ones, wildcards, letters (case-folded by ILIKE), and the
#: multi-byte, empty and two-character ones an engine refuses when a row reaches the predicate
ESCAPES = ("!", "\\", "%", "_", "0", " ", "'", "x", "X", "é", "😀", "", "ab", "ß")
#: numerals: 64-bit and 32-bit boundaries, decimals near the ends of the double range
NUMBERS = ("0", "1", "-1", "12", "2147483647", "-2147483648", "9223372036854775807", "-9223372036854775808",
           "1.5", "-0.0", "0.5", "1e308", "1e-300", "4.9e-324", "0.000001", "123456789012345678901234567890.5",
           "1e30", "9999999999.99", "-99999999999.999")
#: numerals just beyond what every engine reads (the allow-list must refuse them)
BEYOND = ("9223372036854775808", "-9223372036854775809", "99999999999999999999", "1e309", "1e-400")
#: numbers written as strings (rewritten to numbers when they are plain numerals, refused otherwise)
NUMBER_STRINGS = ("'12'", "'-9223372036854775808'", "'9223372036854775808'", "'1e3'", "' 1'", "'٣'", "'abc'", "''")
DATES = ("'2020-02-29'", "'2021-02-29'", "'0001-01-01'", "'9999-12-31'", "DATE '2020-01-01'", "'2020-13-01'", "'x'",
         "'2020-01-01 10:00:00'", "TIMESTAMP '2020-02-29 12:34:56'", "'2020-01-01T23:59:59.999999'")
_COMPARE = ("=", "<>", "<", "<=", ">", ">=", "IS DISTINCT FROM", "IS NOT DISTINCT FROM")
_LIKES = ("LIKE", "ILIKE", "NOT LIKE", "NOT ILIKE")


def sql_string(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


# ------------------------------------------------------------------------------ witnesses


def _number(text: str) -> Decimal | None:
    try:
        value = Decimal(text.strip("'"))
    except ArithmeticError:
        return None
    return value if value.is_finite() else None


def _fits(kind: str, value: Any) -> Any:
    """``value`` as a value of a column of ``kind``, or None when it does not fit (then no witness)."""
    if value is None:
        return None
    if kind in ("int", "bigint", "decimal", "double") or kind.startswith("fk:"):
        number = value if isinstance(value, Decimal) else _number(str(value))
        if number is None:
            return None
        if kind == "double":
            return float(number) if abs(number) < Decimal("1e300") and (number == 0 or abs(number) > Decimal("1e-300")) else None
        if kind == "decimal":
            return number.quantize(Decimal("0.01")) if abs(number) < Decimal("1e10") else None
        if number != number.to_integral_value():
            return None
        bound = 2**31 if kind == "int" else 2**63
        return int(number) if -bound <= number < bound else None
    if kind == "text":
        text = str(value)
        return text if "\x00" not in text and not any("\ud800" <= c <= "\udfff" for c in text) else None
    if kind in ("date", "timestamp"):
        text = str(value).strip("'").removeprefix("DATE '").removeprefix("TIMESTAMP '").strip("'")
        try:
            moment = dt.datetime.fromisoformat(text.replace(" ", "T")) if len(text) > 10 else dt.datetime.fromisoformat(text)
        except ValueError:
            return None
        return moment.date() if kind == "date" else moment
    if kind == "bool":
        return bool(value)
    return None


def _like_witness(pattern: str, escape: str | None) -> str:
    """A string the pattern matches (wildcards filled, escapes resolved)."""
    out, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        if escape and char == escape and i + 1 < len(pattern):
            out.append(pattern[i + 1])
            i += 2
            continue
        out.append("" if char == "%" else "a" if char == "_" else char)
        i += 1
    return "".join(out)


@dataclass
class Filter:
    """One relation's selection: its SQL and, per column, values that make its conjuncts true."""

    sql: str
    witnesses: dict[str, list[Any]] = field(default_factory=dict)


# ------------------------------------------------------------------------------ selections


class QueryGenerator:
    """Random counting queries over :data:`TABLES`, reproducible from ``seed``."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def query(self) -> tuple[str, dict[str, Filter]]:
        """A counting query over one of :data:`SHAPES` and the selection of each relation."""
        rng = self.rng
        if rng.random() < 0.08:
            return self.semi_join()
        shape = rng.choice(SHAPES)
        selections = {t: self.selection(t) for t in shape if rng.random() < 0.85}
        if not selections:
            selections = {shape[-1]: self.selection(shape[-1])}
        tables = " JOIN ".join(
            f"{t} {ALIAS[t]}" + (f" ON {JOINS[(shape[i - 1], t)]}" if i else "") for i, t in enumerate(shape)
        )
        where = " AND ".join(f"({s.sql})" for s in selections.values())
        count = rng.choice(["COUNT(*)", f"COUNT(DISTINCT {ALIAS[shape[0]]}.{TABLES[shape[0]][0][0]})"])
        return f"SELECT {count} FROM {tables} WHERE {where}", selections

    def semi_join(self) -> tuple[str, dict[str, Filter]]:
        """``person`` filtered by a semi-join on ``visit`` (the parser rewrites it to a join)."""
        selections = {"person": self.selection("person"), "visit": self.selection("visit")}
        count = self.rng.choice(["COUNT(*)", "COUNT(DISTINCT p.id)"])
        sql = (f"SELECT {count} FROM person p WHERE ({selections['person'].sql}) "
               f"AND p.id IN (SELECT v.pid FROM visit v WHERE {selections['visit'].sql})")
        return sql, selections

    def selection(self, table: str) -> Filter:
        """One to three conjuncts, sometimes under OR / NOT, over ``table``'s columns."""
        rng = self.rng
        columns = [c for c in TABLES[table] if not c[1].startswith("fk:")]  # the key included
        conjuncts: list[str] = []
        witnesses: dict[str, list[Any]] = {}
        for _ in range(rng.randint(1, 3)):
            name, kind = rng.choice(columns)
            sql, values = self.atom(f"{ALIAS[table]}.{name}", kind)
            shape = rng.random()
            if shape < 0.12:
                other_name, other_kind = rng.choice(columns)
                other, _ = self.atom(f"{ALIAS[table]}.{other_name}", other_kind)
                sql = f"({sql} OR {other})"
            elif shape < 0.2:
                sql, values = f"NOT ({sql})", []
            conjuncts.append(sql)
            for value in values:
                fitted = _fits(kind, value)
                if fitted is not None or value is None:
                    witnesses.setdefault(name, []).append(fitted)
        return Filter(" AND ".join(conjuncts), witnesses)

    def atom(self, column: str, kind: str) -> tuple[str, list[Any]]:
        """One predicate on ``column`` and values of the column that make it true."""
        rng = self.rng
        if rng.random() < 0.06:
            negate = rng.random() < 0.5
            return f"{column} IS {'NOT ' if negate else ''}NULL", [] if negate else [None]
        if kind in ("int", "bigint", "double", "decimal"):
            return self._number_atom(column)
        if kind == "text":
            return self._text_atom(column)
        if kind in ("date", "timestamp"):
            return self._date_atom(column, kind)
        return self._bool_atom(column)

    def _literal_number(self) -> str:
        rng = self.rng
        roll = rng.random()
        if roll < 0.1:
            return rng.choice(NUMBER_STRINGS)
        if roll < 0.16:
            return rng.choice(BEYOND)
        text = rng.choice(NUMBERS)
        return text if rng.random() < 0.9 else str(rng.randint(-1000, 1000))

    def _number_atom(self, column: str) -> tuple[str, list[Any]]:
        rng = self.rng
        roll = rng.random()
        if roll < 0.15:
            low, high = sorted((self._literal_number(), self._literal_number()), key=lambda t: _number(t) or 0)
            return f"{column} BETWEEN {low} AND {high}", [_number(low)]
        if roll < 0.3:
            items = [self._literal_number() for _ in range(rng.randint(1, 3))]
            negate = rng.random() < 0.3
            return f"{column} {'NOT ' if negate else ''}IN ({', '.join(items)})", [] if negate else [_number(items[0])]
        if roll < 0.37:
            return f"LENGTH({column}) > 1", []  # refused: LENGTH of a number
        op = rng.choice(_COMPARE)
        literal = self._literal_number()
        value = _number(literal)
        if value is not None and op in ("<", "<="):
            value -= 1
        elif value is not None and op in (">", ">="):
            value += 1
        return f"{column} {op} {literal}", [value] if op not in ("<>", "IS DISTINCT FROM") else []

    def _pattern(self, escape: str | None) -> str:
        rng = self.rng
        pieces = [rng.choice(PATTERN_PIECES) for _ in range(rng.randint(0, 5))]
        if escape and rng.random() < 0.6:
            pieces.insert(rng.randint(0, len(pieces)), escape + rng.choice(("%", "_", "a", "é", escape)))
        if rng.random() < 0.15:
            pieces.append(rng.choice(RARE_TEXTS + TEXTS))
        return "".join(pieces)

    def _text_atom(self, column: str) -> tuple[str, list[Any]]:
        rng = self.rng
        roll = rng.random()
        if roll < 0.45:
            op = rng.choice(_LIKES)
            escape = rng.choice(ESCAPES) if rng.random() < 0.6 else None
            pattern = self._pattern(escape)
            sql = f"{column} {op} {sql_string(pattern)}" + (f" ESCAPE {sql_string(escape)}" if escape is not None else "")
            return sql, [] if op.startswith("NOT") else [_like_witness(pattern, escape)]
        text = rng.choice(TEXTS) if rng.random() < 0.93 else rng.choice(RARE_TEXTS)
        if roll < 0.6:
            items = [text] + [rng.choice(TEXTS) for _ in range(rng.randint(0, 2))]
            return f"{column} IN ({', '.join(sql_string(t) for t in items)})", [text]
        if roll < 0.7:
            fn = rng.choice(("LOWER", "UPPER"))
            wanted = text.lower() if fn == "LOWER" else text.upper()
            return f"{fn}({column}) = {sql_string(wanted)}", [wanted]
        if roll < 0.78:
            n = rng.choice(("0", "1", "3", "300", "9223372036854775807", "9223372036854775808", "-1"))
            return f"LENGTH({column}) {rng.choice(('>', '<=', '='))} {n}", ["x" * 4]
        if roll < 0.82:
            return f"{column} = {self._literal_number()}", []  # a number against text: refused
        op = rng.choice(_COMPARE)
        return f"{column} {op} {sql_string(text)}", [text] if op in ("=", "<=", ">=", "IS NOT DISTINCT FROM") else []

    def _date_atom(self, column: str, kind: str) -> tuple[str, list[Any]]:
        rng = self.rng
        roll = rng.random()
        if roll < 0.3:
            parts = ["YEAR", "MONTH", "DAY"] + (["HOUR", "MINUTE", "SECOND"] if kind == "timestamp" else ["HOUR"])
            part = rng.choice(parts)
            number = rng.choice(("2020", "2", "29", "0", "12", "9223372036854775808", "1.5"))
            if rng.random() < 0.5:
                return f"EXTRACT({part} FROM {column}) = {number}", []
            return f"{part}({column}) = {number}", []
        if roll < 0.45:
            low, high = sorted((rng.choice(DATES), rng.choice(DATES)))
            return f"{column} BETWEEN {low} AND {high}", [low]
        literal = rng.choice(DATES)
        op = rng.choice(_COMPARE)
        return f"{column} {op} {literal}", [literal] if op in ("=", "<=", ">=", "IS NOT DISTINCT FROM") else []

    def _bool_atom(self, column: str) -> tuple[str, list[Any]]:
        choice = self.rng.choice((
            (column, [True]), (f"NOT {column}", [False]), (f"{column} IS TRUE", [True]),
            (f"{column} IS NOT FALSE", [True]), (f"{column} = FALSE", [False]), (f"{column} = 'yes'", []),
        ))
        return choice[0], list(choice[1])


# ------------------------------------------------------------------------------ databases

#: adversarial values per kind, cycled through the extra rows of ``hit``
_ADVERSARIAL: dict[str, tuple[Any, ...]] = {
    "int": (None, 2147483647, -2147483648, 0),
    "bigint": (None, 2**63 - 1, -(2**63), 0),
    "double": (None, 1e308, -1e308, 5e-324),
    "decimal": (None, Decimal("9999999999.99"), Decimal("-9999999999.99"), Decimal("0.01")),
    "text": (None, "", "Ω\u0301 😀 ünïcödé", "100%_\\'"),
    "date": (None, dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(2020, 2, 29)),
    "timestamp": (None, dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999), dt.datetime(2020, 2, 29, 12, 34, 56)),
    "bool": (None, True, False, True),
}
_DEFAULT = {"int": 1, "bigint": 1, "double": 1.0, "decimal": Decimal("1.00"), "text": "x", "date": dt.date(2020, 1, 1),
            "timestamp": dt.datetime(2020, 1, 1), "bool": True}

Rows = dict[str, list[tuple[Any, ...]]]


def hit_database(selections: dict[str, Filter], rng: random.Random) -> Rows:
    """Rows that reach every predicate: per relation, two rows built from the witnesses of its
    selection (each conjunct true where a witness exists), then adversarial rows; children
    reference the witness rows of their parents."""
    rows: Rows = {}
    for table in ORDER:
        witnesses = selections[table].witnesses if table in selections else {}
        out: list[tuple[Any, ...]] = []
        for i in range(2):
            key = _pick(witnesses.get(TABLES[table][0][0]), i, None)  # the key too, when a predicate names it
            if not isinstance(key, int) or key in {r[0] for r in out}:
                key = 1_000 + i
            out.append(_row(table, key, lambda name, kind, i=i: _pick(witnesses.get(name), i, _DEFAULT[kind]), rows, 0))
        for j in range(3):
            out.append(_row(table, _free_key(out), lambda name, kind, j=j: _ADVERSARIAL[kind][(j + rng.randrange(4)) % 4], rows, j))
        rows[table] = out
    return rows


def _free_key(rows: list[tuple[Any, ...]]) -> int:
    """The smallest positive key no row of ``rows`` holds."""
    used = {r[0] for r in rows}
    return next(k for k in range(1, len(used) + 2) if k not in used)


def _pick(values: list[Any] | None, i: int, default: Any) -> Any:
    if not values:
        return default
    return values[min(i, len(values) - 1)]


def _row(table: str, key: int, value, rows: Rows, parent: int) -> tuple[Any, ...]:
    out: list[Any] = []
    for index, (name, kind) in enumerate(TABLES[table]):
        if index == 0:
            out.append(key)
        elif kind.startswith("fk:"):
            parents = rows[kind[3:]]
            out.append(parents[parent % len(parents)][0])
        else:
            out.append(value(name, kind))
    return tuple(out)


def empty_database() -> Rows:
    """No row at all: no predicate is ever evaluated."""
    return {table: [] for table in ORDER}


def single_tuple_neighbour(rows: Rows, rng: random.Random) -> tuple[str, Rows]:
    """``rows`` with one tuple added (random adversarial values, an existing parent) or removed
    (one that no other tuple references). Returns a description and the neighbour."""
    referenced: dict[str, set[Any]] = {t: set() for t in ORDER}
    for table in ORDER:
        for index, (_, kind) in enumerate(TABLES[table]):
            if kind.startswith("fk:"):
                referenced[kind[3:]].update(r[index] for r in rows[table])
    moves = [("add", t) for t in ORDER] + [("remove", t) for t in ORDER if any(r[0] not in referenced[t] for r in rows[t])]
    kind, table = rng.choice(moves)
    copy = {t: list(r) for t, r in rows.items()}
    if kind == "remove":
        row = rng.choice([r for r in rows[table] if r[0] not in referenced[table]])
        copy[table].remove(row)
        return f"remove {table}{row!r}", copy
    row = _row(table, _free_key(rows[table]), lambda name, k: rng.choice(_ADVERSARIAL[k] + (_DEFAULT[k],)), rows, rng.randrange(100))
    copy[table].append(row)
    return f"add {table}{row!r}", copy


def ddl(dialect: str) -> list[str]:
    """CREATE TABLE statements of :data:`TABLES` in ``dialect`` (duckdb, sqlite, postgres)."""
    types = _SQL_TYPES[dialect]
    out = []
    for table in ORDER:
        columns = []
        for index, (name, kind) in enumerate(TABLES[table]):
            if kind.startswith("fk:"):
                parent = kind[3:]
                columns.append(f"{name} INTEGER REFERENCES {parent}({TABLES[parent][0][0]})")
            else:
                columns.append(f"{name} {types[kind]}" + (" PRIMARY KEY" if index == 0 else ""))
        out.append(f"CREATE TABLE {table} ({', '.join(columns)})")
    return out


def load(engine: Any, rows: Rows) -> None:
    """Replace the contents of the fuzzer's tables in ``engine`` (a writable Pimento engine) by
    ``rows``, in one script on its connection (one statement at a time is most of the fuzzer's time)."""
    statements = [f"DELETE FROM {table}" for table in reversed(ORDER)]
    for table in ORDER:
        if rows[table]:
            values = ", ".join("(" + ", ".join(_literal(engine.dialect, v) for v in row) + ")" for row in rows[table])
            statements.append(f"INSERT INTO {table} VALUES {values}")
    script = ";\n".join(statements) + ";"
    con = engine.connection
    if engine.dialect == "sqlite":
        con.executescript(script)
    else:
        con.execute(script)


def _literal(dialect: str, value: Any) -> str:
    """``value`` as a SQL literal (DuckDB's Python parameters import modules on every call: slow).
    SQLite stores dates and timestamps as ISO text and booleans as 0 / 1."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return ("1" if value else "0") if dialect == "sqlite" else ("TRUE" if value else "FALSE")
    if isinstance(value, (int, Decimal)):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dt.datetime):
        text = sql_string(value.isoformat(sep=" "))
        return text if dialect == "sqlite" else f"TIMESTAMP {text}"
    if isinstance(value, dt.date):
        text = sql_string(value.isoformat())
        return text if dialect == "sqlite" else f"DATE {text}"
    return sql_string(str(value))
