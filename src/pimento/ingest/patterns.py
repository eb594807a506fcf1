"""The pattern spec of the offline extractor: per table, regexes whose named groups are columns.

A spec is a small YAML file written by the custodian (or derived from the schema for form-like
documents by :func:`derive_spec`)::

    version: 1
    tables:
      Patient:
        match_on: [name, birth_year]        # entity resolution when the key is not stated
        rules:
          - when: 'registration'            # optional: only documents containing this regex
            flags: [ignorecase]             # ignorecase, multiline, dotall
            patterns:                       # several wordings; every match is one row
              - 'Patient (?P<name>[A-Z][a-z]+ [A-Z][a-z]+) \\(MRN (?P<pat_id>\\d+)\\)'
            values:                         # normalisers, per group
              sex: {map: {female: F, male: M}}
              visit_date: {date: ['%d %B %Y', '%Y-%m-%d']}
              dose_mg: {number: true}
            constants: {role: attending}    # a column every match of this rule sets
            lookup:                         # a column not stated, found through another table
              pat_id: {table: Patient, column: pat_id, by: {name: patient_name}}
            context:                        # a column taken from another row of the same document
              visit_id: Visit.visit_id

Named groups are column names of the table, or names used in a ``lookup``'s ``by``. A group that
did not take part in the match, or matched only blanks, states nothing. Every value has its
whitespace collapsed; ``values`` then applies, in this order, ``map`` (case-insensitive), ``date``
(``strptime`` formats, to ISO ``YYYY-MM-DD``), ``number`` (drops thousands separators) and ``case``
(``lower``/``upper``/``title``). Type conversion to the column's type happens at resolution, where
a value that does not convert is a rejected row, with the reason.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pimento.errors import CatalogError, ConfigError, DataSourceError
from pimento.schema import Catalog

__all__ = ["LookupSpec", "PatternSpec", "Rule", "TableSpec", "ValueSpec", "derive_spec", "load_spec", "parse_spec"]

_FLAGS = {"ignorecase": re.IGNORECASE, "multiline": re.MULTILINE, "dotall": re.DOTALL}
_CASES = ("lower", "upper", "title")
_WS = re.compile(r"\s+")


@dataclass(frozen=True)
class ValueSpec:
    """How one group's text becomes a value: ``map``, then ``date`` formats, ``number``, ``case``."""

    map: Mapping[str, str] = field(default_factory=dict)
    date: tuple[str, ...] = ()
    number: bool = False
    case: str | None = None

    def apply(self, text: str) -> str:
        value = _WS.sub(" ", text).strip()
        if self.map:
            value = self.map.get(value.casefold(), value)
        if self.date:
            for fmt in self.date:
                try:
                    value = dt.datetime.strptime(value, fmt).date().isoformat()
                    break
                except ValueError:
                    continue
        if self.number:
            value = value.replace(",", "").replace("_", "").replace(" ", "")
        if self.case == "lower":
            value = value.lower()
        elif self.case == "upper":
            value = value.upper()
        elif self.case == "title":
            value = value.title()
        return value


_PLAIN = ValueSpec()


@dataclass(frozen=True)
class LookupSpec:
    """``column`` := ``ref_table.ref_column`` of the row whose columns equal the groups in ``on``."""

    column: str
    ref_table: str
    ref_column: str
    on: Mapping[str, str]  # ref column -> group name (``by`` in YAML: ``on`` is a boolean there)


@dataclass(frozen=True)
class Rule:
    """One rule of a table: compiled patterns, and what to do with their matches."""

    patterns: tuple[re.Pattern[str], ...]
    when: re.Pattern[str] | None = None
    values: Mapping[str, ValueSpec] = field(default_factory=dict)
    constants: Mapping[str, Any] = field(default_factory=dict)
    lookups: tuple[LookupSpec, ...] = ()
    context: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # column -> (table, column)

    def value(self, group: str, text: str) -> str:
        return self.values.get(group, _PLAIN).apply(text)


@dataclass(frozen=True)
class TableSpec:
    """The rules of one table and the columns used to resolve entities whose key is not stated."""

    table: str
    rules: tuple[Rule, ...]
    match_on: tuple[str, ...] = ()


@dataclass(frozen=True)
class PatternSpec:
    """Every table's rules, in spec order; ``source`` names where it came from, for messages."""

    tables: tuple[TableSpec, ...]
    source: str = "<spec>"

    def match_on(self) -> dict[str, tuple[str, ...]]:
        return {t.table: t.match_on for t in self.tables if t.match_on}


def load_spec(path: str | Path, catalog: Catalog) -> PatternSpec:
    """Read and check a YAML pattern spec against ``catalog``.

    Raises:
        DataSourceError: the file is missing or unreadable. ConfigError: the YAML or a regex is
            malformed. CatalogError: it names an unknown table, column or group.
    """
    file = Path(path)
    if not file.is_file():
        raise DataSourceError(f"pattern spec not found: {file}")
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise DataSourceError(f"cannot read the pattern spec {file}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{file}: not valid YAML: {' '.join(str(exc).split())}") from exc
    return parse_spec(data, catalog, source=str(file))


def parse_spec(data: Any, catalog: Catalog, *, source: str = "<spec>") -> PatternSpec:
    """Check a spec already read as Python data (see the module docstring for the format)."""
    if not isinstance(data, dict) or not isinstance(data.get("tables"), dict):
        raise ConfigError(f"{source}: a pattern spec is a mapping with a 'tables' mapping (see docs/ingest.md)")
    if data.get("version", 1) != 1:
        raise ConfigError(f"{source}: unsupported pattern spec version {data.get('version')!r}; use version: 1")
    unknown = set(data) - {"version", "tables"}
    if unknown:
        raise ConfigError(f"{source}: unknown top-level key(s) {sorted(unknown)}; use version and tables")
    tables = []
    for name, body in data["tables"].items():
        table = catalog.table(str(name))
        where = f"{source}: table {table.name}"
        if not isinstance(body, dict) or not isinstance(body.get("rules"), list) or not body["rules"]:
            raise ConfigError(f"{where}: needs a non-empty 'rules' list")
        _only(body, {"rules", "match_on"}, where)
        match_on = tuple(table.column(str(c)).name for c in body.get("match_on") or ())
        rules = tuple(_rule(rule, catalog, table.name, f"{where}, rule {i + 1}") for i, rule in enumerate(body["rules"]))
        tables.append(TableSpec(table.name, rules, match_on))
    return PatternSpec(tuple(tables), source)


def _rule(body: Any, catalog: Catalog, table_name: str, where: str) -> Rule:
    table = catalog.table(table_name)
    if not isinstance(body, dict):
        raise ConfigError(f"{where}: a rule is a mapping with 'patterns'")
    _only(body, {"when", "flags", "patterns", "values", "constants", "lookup", "context"}, where)
    flags = 0
    for flag in body.get("flags") or ():
        if flag not in _FLAGS:
            raise ConfigError(f"{where}: unknown flag {flag!r}; use {', '.join(_FLAGS)}")
        flags |= _FLAGS[flag]
    raw_patterns = body.get("patterns")
    if isinstance(raw_patterns, str):
        raw_patterns = [raw_patterns]
    if not isinstance(raw_patterns, list) or not raw_patterns:
        raise ConfigError(f"{where}: needs a non-empty 'patterns' list of regexes")
    patterns = tuple(_compile(p, flags, f"{where}, pattern {j + 1}") for j, p in enumerate(raw_patterns))
    when = _compile(body["when"], flags, f"{where}, when") if body.get("when") is not None else None

    lookups = []
    lookup_groups: set[str] = set()
    for column, spec in (body.get("lookup") or {}).items():
        if not isinstance(spec, dict) or "table" not in spec or not isinstance(spec.get("by"), dict) or not spec["by"]:
            raise ConfigError(f"{where}: lookup {column!r} needs 'table' and a non-empty 'by' mapping (column: group)")
        _only(spec, {"table", "column", "by"}, f"{where}, lookup {column}")
        ref = catalog.table(str(spec["table"]))
        ref_column = spec.get("column")
        if ref_column is None:
            if len(ref.primary_key) != 1:
                raise ConfigError(f"{where}: lookup {column!r}: {ref.name} has no one-column primary key; name 'column'")
            ref_column = ref.primary_key[0]
        on = {ref.column(str(c)).name: str(g) for c, g in spec["by"].items()}
        lookup_groups.update(on.values())
        lookups.append(LookupSpec(table.column(str(column)).name, ref.name, ref.column(str(ref_column)).name, on))

    context = {}
    for column, ref in (body.get("context") or {}).items():
        if not isinstance(ref, str) or ref.count(".") != 1:
            raise ConfigError(f"{where}: context {column!r} must be 'Table.column'")
        ref_table, ref_column = ref.split(".")
        context[table.column(str(column)).name] = (
            catalog.table(ref_table).name, catalog.table(ref_table).column(ref_column).name
        )
    constants = {table.column(str(c)).name: v for c, v in (body.get("constants") or {}).items()}
    values = {}
    for group, spec in (body.get("values") or {}).items():
        values[str(group)] = _value_spec(spec, f"{where}, values.{group}")

    columns = {c.lower(): c for c in table.column_names}
    for pattern in patterns:
        groups = set(pattern.groupindex)
        if not groups:
            raise ConfigError(f"{where}: pattern {pattern.pattern!r} has no named group, so it states nothing")
        stray = sorted(g for g in groups if g.lower() not in columns and g not in lookup_groups)
        if stray:
            raise CatalogError(
                f"{where}: group(s) {stray} are neither columns of {table.name} nor used by a lookup",
                hint=f"columns: {', '.join(table.column_names)}",
            )
    stray_values = sorted(
        g for g in values if g.lower() not in columns and g not in lookup_groups
    )
    if stray_values:
        raise CatalogError(f"{where}: 'values' names unknown group(s) {stray_values}")
    return Rule(patterns, when, values, constants, tuple(lookups), context)


def _value_spec(spec: Any, where: str) -> ValueSpec:
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: a value spec is a mapping of map/date/number/case")
    _only(spec, {"map", "date", "number", "case"}, where)
    mapping = spec.get("map") or {}
    if not isinstance(mapping, dict):
        raise ConfigError(f"{where}: 'map' must be a mapping from text to value")
    dates = spec.get("date") or ()
    if isinstance(dates, str):
        dates = (dates,)
    case = spec.get("case")
    if case is not None and case not in _CASES:
        raise ConfigError(f"{where}: case must be one of {', '.join(_CASES)}")
    return ValueSpec(
        {str(k).casefold(): _text(v) for k, v in mapping.items()}, tuple(str(d) for d in dates), bool(spec.get("number")), case
    )


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _compile(pattern: Any, flags: int, where: str) -> re.Pattern[str]:
    if not isinstance(pattern, str) or not pattern:
        raise ConfigError(f"{where}: a regex must be a non-empty string")
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise ConfigError(f"{where}: bad regex {pattern!r}: {exc}") from exc


def _only(body: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {', '.join(sorted(allowed))}")


def derive_spec(catalog: Catalog) -> PatternSpec:
    """A spec for form-like documents, derived from the schema alone.

    A record is a line naming the table (``Patient`` or ``Patient:``), then one ``column: value``
    line per stated column, in the schema's column order, any of them left out; a column's label
    may use spaces for underscores and any letter case::

        Patient
        pat id: 17
        name: Ada Lovelace
    """
    tables = []
    for table in catalog.tables:
        # A column whose name is not a Python identifier cannot be a group name: it is not stated.
        lines = "".join(
            rf"(?:^[ \t]*{_label(c)}[ \t]*:[ \t]*(?P<{c}>[^\n]*?)[ \t]*(?:\n|\Z))?"
            for c in table.column_names
            if c.isidentifier()
        )
        pattern = re.compile(rf"^[ \t]*{_label(table.name)}[ \t]*:?[ \t]*\n{lines}", re.IGNORECASE | re.MULTILINE)
        tables.append(TableSpec(table.name, (Rule((pattern,)),)))
    return PatternSpec(tuple(tables), "<derived from the schema>")


def _label(name: str) -> str:
    return "[ _]".join(re.escape(part) for part in name.split("_"))
