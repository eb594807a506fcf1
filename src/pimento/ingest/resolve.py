"""Entity resolution and constraint checking: mentions in, rows and rejected rows out.

The rule, table by table in foreign-key order (referenced tables first):

1. **Lookups.** A column a mention does not state but names through another table (``pat_id`` of
   the patient called "Ada Lovelace" born 1956) takes the referenced column of the one row of that
   table whose columns equal the stated attributes (text compared case- and blank-insensitively).
   No such row, or several, rejects the mention.
2. **Types.** Every value is converted to its column's type; a value that does not convert
   rejects the mention.
3. **Same entity, by key.** Mentions that state the whole key (the primary key, else the first
   unique key) are one row per key value, whichever documents they come from.
4. **Same entity, by attributes.** A mention without the key is then matched on the table's
   ``match_on`` columns (from the pattern spec; none by default): if exactly one row agrees on all of
   them, it is that row; if several do, the mention is ambiguous and rejected; if none, it is a new
   row. Keyed mentions are placed first, so a note naming a patient without the MRN joins the row
   the registration form created, whatever the document order.
5. **Merging.** A mention joins a row cell by cell; a cell stated twice must agree (text up to
   case and blanks), and the spans of every agreeing statement are kept. A disagreement rejects the
   later mention whole (the earlier statement stands).
6. **Keys not stated.** A new row without its key gets the next integer when the key is one integer
   column (a surrogate, with no span); otherwise it is rejected.
7. **Constraints.** A row missing a NOT NULL column, or repeating a unique key of an earlier row,
   is rejected; then, until nothing changes, a row whose foreign key points at no row is rejected
   (so rejecting a patient rejects their visits, with the reason).

Every rejection carries the row's values, the reason, the documents and the mentions themselves,
so that a later run (with more documents) can try them again.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pimento.ingest.model import Cell, Mention, Span
from pimento.ingest.target import key_of, table_order
from pimento.schema import Catalog, Column, Table

__all__ = ["Rejected", "Resolution", "Row", "coerce", "resolve", "row_key_text", "same_value"]

_WS = re.compile(r"\s+")
_TRUE = {"true", "t", "yes", "y", "1"}
_FALSE = {"false", "f", "no", "n", "0"}


@dataclass(eq=False)
class Row:
    """An accepted row: typed cells with their spans, and the mentions that made it."""

    table: str
    cells: dict[str, Cell]
    mentions: list[Mention] = field(default_factory=list)

    def value(self, column: str) -> Any:
        cell = self.cells.get(column)
        return None if cell is None else cell.value


@dataclass(frozen=True)
class Rejected:
    """A row (or a mention) kept aside, with the reason and what it was made from."""

    table: str
    values: Mapping[str, Any]
    reason: str
    mentions: tuple[Mention, ...]

    @property
    def doc_ids(self) -> tuple[str, ...]:
        return tuple(sorted({m.doc_id for m in self.mentions}))

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "values": {k: _plain(v) for k, v in self.values.items()},
            "reason": self.reason,
            "documents": list(self.doc_ids),
        }


@dataclass
class Resolution:
    """Accepted rows per table (in table order) and everything rejected."""

    rows: dict[str, list[Row]]
    rejected: list[Rejected]


def coerce(value: Any, column: Column) -> Any:
    """``value`` as a Python value of ``column``'s type; ValueError says why it does not convert."""
    if value is None:
        return None
    kind = column.type
    if kind == "integer":
        if isinstance(value, bool):
            raise ValueError("is a boolean, not an integer")
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            if value.is_integer():
                return int(value)
            raise ValueError("is not an integer")
        text = str(value).strip().replace(",", "")
        try:
            return int(text)
        except ValueError:
            number = float(text)  # raises ValueError with a message of its own
            if not number.is_integer():
                raise ValueError("is not an integer") from None
            return int(number)
    if kind == "real":
        if isinstance(value, bool):
            raise ValueError("is a boolean, not a number")
        return float(str(value).strip().replace(",", "")) if not isinstance(value, (int, float)) else float(value)
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        text = str(value).strip().casefold()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ValueError("is not a boolean (true/false, yes/no)")
    if kind == "date":
        if isinstance(value, dt.datetime):
            return value.date()
        if isinstance(value, dt.date):
            return value
        return dt.date.fromisoformat(str(value).strip()[:10])
    if kind == "timestamp":
        if isinstance(value, dt.datetime):
            return value
        return dt.datetime.fromisoformat(str(value).strip())
    if isinstance(value, bool):
        return "true" if value else "false"
    return _WS.sub(" ", str(value)).strip()


def _norm(value: Any) -> Any:
    return _WS.sub(" ", value).strip().casefold() if isinstance(value, str) else value


def same_value(a: Any, b: Any) -> bool:
    """Equality of two typed values as resolution sees it (text up to case and blanks)."""
    return _norm(a) == _norm(b)


def row_key_text(values: Sequence[Any]) -> str:
    """How a row's key is written in the provenance and rejected tables: a JSON array."""
    return json.dumps([_plain(v) for v in values], ensure_ascii=False)


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def resolve(catalog: Catalog, mentions: Iterable[Mention], *, match_on: Mapping[str, Sequence[str]] | None = None) -> Resolution:
    """Rows and rejections for ``mentions`` under ``catalog``'s keys (see the module docstring)."""
    match_on = match_on or {}
    by_table: dict[str, list[Mention]] = {}
    for mention in mentions:
        by_table.setdefault(catalog.table(mention.table).name, []).append(mention)
    rows: dict[str, list[Row]] = {}
    rejected: list[Rejected] = []
    for name in table_order(catalog):
        table = catalog.table(name)
        rows[name] = _resolve_table(catalog, table, by_table.get(name, []), rows, rejected, tuple(match_on.get(name, ())))
    _check_foreign_keys(catalog, rows, rejected)
    return Resolution(rows, rejected)


def _resolve_table(
    catalog: Catalog,
    table: Table,
    mentions: list[Mention],
    done: Mapping[str, list[Row]],
    rejected: list[Rejected],
    match_on: tuple[str, ...],
) -> list[Row]:
    key = key_of(table)
    prepared: list[Mention] = []
    indexes: dict[tuple[str, tuple[str, ...]], dict[tuple, list[Row]]] = {}
    for mention in mentions:
        ready = _prepare(catalog, table, mention, done, rejected, indexes)
        if ready is not None:
            prepared.append(ready)
    keyed = [m for m in prepared if key and all(m.cells.get(c) is not None and m.cells[c].value is not None for c in key)]
    keyless = [m for m in prepared if not (key and all(m.cells.get(c) is not None and m.cells[c].value is not None for c in key))]

    rows: list[Row] = []
    by_key: dict[tuple, Row] = {}
    by_match: dict[tuple, list[Row]] = {}
    indexed: set[int] = set()

    def index(row: Row) -> None:
        if match_on and id(row) not in indexed and all(row.value(c) is not None for c in match_on):
            by_match.setdefault(tuple(_norm(row.value(c)) for c in match_on), []).append(row)
            indexed.add(id(row))

    for mention in keyed:
        k = tuple(_norm(mention.cells[c].value) for c in key)
        row = by_key.get(k)
        if row is None:
            row = Row(table.name, dict(mention.cells), [mention])
            by_key[k] = row
            rows.append(row)
        elif not _merge(row, mention, table, key, rejected):
            continue
        index(row)
    for mention in keyless:
        if match_on and all(mention.cells.get(c) is not None for c in match_on):
            found = by_match.get(tuple(_norm(mention.cells[c].value) for c in match_on), [])
            if len(found) > 1:
                rejected.append(Rejected(
                    table.name, _values(mention.cells),
                    f"ambiguous: {len(found)} {table.name} rows have the same {', '.join(match_on)}", (mention,),
                ))
                continue
            if found:
                _merge(found[0], mention, table, key, rejected)
                continue
        elif not key:
            # A table without any key: identical rows are one row.
            same = by_key.get(tuple(sorted((c, _norm(v.value)) for c, v in mention.cells.items())))
            if same is not None:
                _merge(same, mention, table, key, rejected)
                continue
        row = Row(table.name, dict(mention.cells), [mention])
        if not key:
            by_key[tuple(sorted((c, _norm(v.value)) for c, v in row.cells.items()))] = row
        rows.append(row)
        index(row)
    rows = _fill_surrogates(table, key, rows, rejected)
    rows = _check_not_null(table, rows, rejected)
    return _check_unique(table, key, rows, rejected)


def _prepare(
    catalog: Catalog,
    table: Table,
    mention: Mention,
    done: Mapping[str, list[Row]],
    rejected: list[Rejected],
    indexes: dict[tuple[str, tuple[str, ...]], dict[tuple, list[Row]]],
) -> Mention | None:
    """The mention with lookups filled and every value converted, or None (rejected, with the reason)."""
    cells = dict(mention.cells)
    for lookup in mention.lookups:
        if cells.get(lookup.column) is not None:
            continue
        ref = catalog.table(lookup.ref_table)
        try:
            wanted = {c: _norm(coerce(cell.value, ref.column(c))) for c, cell in lookup.on.items()}
        except ValueError as exc:
            rejected.append(Rejected(table.name, _values(cells), f"lookup of {lookup.column} in {ref.name}: {exc}", (mention,)))
            return None
        columns = tuple(sorted(wanted))
        index = indexes.get((ref.name, columns))
        if index is None:
            index = indexes[(ref.name, columns)] = {}
            for candidate in done.get(ref.name, []):
                index.setdefault(tuple(_norm(candidate.value(c)) for c in columns), []).append(candidate)
        hits = index.get(tuple(wanted[c] for c in columns), [])
        described = ", ".join(f"{c} = {_plain(v.value)!r}" for c, v in lookup.on.items())
        if len(hits) != 1:
            why = "no" if not hits else f"{len(hits)}"
            rejected.append(Rejected(
                table.name, {**_values(cells), **{f"{ref.name}.{c}": v.value for c, v in lookup.on.items()}},
                f"lookup of {lookup.column}: {why} {ref.name} row(s) with {described}", (mention,),
            ))
            return None
        spans = tuple(s for cell in lookup.on.values() for s in cell.spans)
        cells[lookup.column] = Cell(hits[0].value(lookup.ref_column), spans)
    typed = {}
    for column_name, cell in cells.items():
        if not table.has_column(column_name):
            rejected.append(Rejected(table.name, _values(cells), f"{table.name} has no column {column_name!r}", (mention,)))
            return None
        column = table.column(column_name)
        try:
            value = coerce(cell.value, column)
        except (ValueError, TypeError) as exc:
            reason = str(exc) if str(exc).startswith("is ") else f"does not convert ({exc})"
            rejected.append(Rejected(
                table.name, _values(cells),
                f"value {_plain(cell.value)!r} of {table.name}.{column.name} {reason} ({column.raw_type or column.type})",
                (mention,),
            ))
            return None
        if value is None or (isinstance(value, str) and value == ""):
            continue
        typed[column.name] = Cell(value, cell.spans)
    return Mention(table.name, typed, mention.doc_id, ())


def _merge(row: Row, mention: Mention, table: Table, key: tuple[str, ...], rejected: list[Rejected]) -> bool:
    for column, cell in mention.cells.items():
        old = row.cells.get(column)
        if old is not None and not same_value(old.value, cell.value):
            where = row_key_text([row.value(c) for c in key]) if key else "an earlier row"
            first = old.spans[0].doc_id if old.spans else "the database"
            rejected.append(Rejected(
                table.name, _values(mention.cells),
                f"conflicts with {table.name} row {where}: {column} is {_plain(old.value)!r} (document {first}), "
                f"this mention says {_plain(cell.value)!r}",
                (mention,),
            ))
            return False
    for column, cell in mention.cells.items():
        old = row.cells.get(column)
        if old is None:
            row.cells[column] = cell
        else:
            spans = old.spans + tuple(s for s in cell.spans if s not in old.spans)
            row.cells[column] = Cell(old.value, spans)
    row.mentions.append(mention)
    return True


def _fill_surrogates(table: Table, key: tuple[str, ...], rows: list[Row], rejected: list[Rejected]) -> list[Row]:
    missing = [r for r in rows if key and any(r.value(c) is None for c in key)]
    if not missing:
        return rows
    if len(key) == 1 and table.column(key[0]).type == "integer":
        taken = [r.value(key[0]) for r in rows if r.value(key[0]) is not None]
        following = max(taken, default=0) + 1
        for row in missing:
            row.cells[key[0]] = Cell(following, ())
            following += 1
        return rows
    for row in missing:
        rejected.append(_reject_row(row, f"no value for the key ({', '.join(key)}) and none can be generated"))
    gone = {id(r) for r in missing}
    return [r for r in rows if id(r) not in gone]


def _check_not_null(table: Table, rows: list[Row], rejected: list[Rejected]) -> list[Row]:
    required = [c.name for c in table.columns if not c.nullable or c.name in table.primary_key]
    kept = []
    for row in rows:
        absent = [c for c in required if row.value(c) is None]
        if absent:
            rejected.append(_reject_row(row, f"no value for required column(s) {', '.join(absent)}"))
        else:
            kept.append(row)
    return kept


def _check_unique(table: Table, key: tuple[str, ...], rows: list[Row], rejected: list[Rejected]) -> list[Row]:
    others = [u for u in (table.primary_key, *table.unique) if u and tuple(u) != tuple(key)]
    if not others:
        return rows
    seen: list[dict[tuple, Row]] = [{} for _ in others]
    kept = []
    for row in rows:
        clash = None
        for unique, index in zip(others, seen):
            values = tuple(row.value(c) for c in unique)
            if any(v is None for v in values):
                continue
            normal = tuple(_norm(v) for v in values)
            if normal in index:
                clash = (unique, index[normal])
                break
        if clash is not None:
            unique, first = clash
            rejected.append(_reject_row(
                row, f"repeats the unique key ({', '.join(unique)}) of {table.name} row "
                f"{row_key_text([first.value(c) for c in key]) if key else ''}".rstrip(),
            ))
            continue
        for unique, index in zip(others, seen):
            values = tuple(row.value(c) for c in unique)
            if all(v is not None for v in values):
                index[tuple(_norm(v) for v in values)] = row
        kept.append(row)
    return kept


def _check_foreign_keys(catalog: Catalog, rows: dict[str, list[Row]], rejected: list[Rejected]) -> None:
    changed = True
    while changed:
        changed = False
        for name in list(rows):
            for fk in catalog.foreign_keys_of(name):
                ref = catalog.table(fk.ref_table).name
                present = {tuple(r.value(c) for c in fk.ref_columns) for r in rows.get(ref, [])}
                kept = []
                for row in rows[name]:
                    values = tuple(row.value(c) for c in fk.columns)
                    if any(v is None for v in values) or values in present:
                        kept.append(row)
                        continue
                    described = ", ".join(f"{c} = {_plain(v)!r}" for c, v in zip(fk.ref_columns, values))
                    rejected.append(_reject_row(row, f"foreign key {fk}: no {ref} row with {described}"))
                    changed = True
                rows[name] = kept


def _reject_row(row: Row, reason: str) -> Rejected:
    return Rejected(row.table, _values(row.cells), reason, tuple(row.mentions))


def _values(cells: Mapping[str, Cell]) -> dict[str, Any]:
    return {c: cell.value for c, cell in cells.items()}


def spans_of(row: Row) -> Iterable[tuple[str, Span]]:
    """(column, span) for every span of every cell of ``row``."""
    for column, cell in row.cells.items():
        for span in cell.spans:
            yield column, span
