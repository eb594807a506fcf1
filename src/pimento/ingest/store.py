"""The output database: the target tables, the provenance, the rejected rows and what was ingested.

Besides the target tables, an ingested database holds:

* ``_pimento_provenance(table_name, row_key, column_name, doc_id, char_start, char_end)``: one row
  per span a cell was read from (a cell stated in ten documents has ten); ``row_key`` is the row's
  key as a JSON array; a generated (surrogate) key has no span;
* ``_pimento_rejected(table_name, row_key, row_values, reason, doc_ids, mentions)``: rows kept aside,
  with the reason; ``mentions`` (JSON) lets the next run try them again;
* ``_pimento_documents(doc_id, sha256, chars, extractor)``: every document ingested;
* ``_pimento_ingest_meta(key, value)``: the fingerprint of the target schema.

:func:`write_database` writes all of it to a temporary file beside ``out`` and renames it over
``out`` only when everything is written, so a failed run leaves the previous database as it was.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from pimento.errors import DataSourceError, UserError
from pimento.ingest.model import Cell, Mention, Span
from pimento.ingest.resolve import Rejected, Resolution, Row, row_key_text
from pimento.ingest.target import Target, key_of
from pimento.sql.quote import quote_identifier as _q

__all__ = [
    "DOCUMENTS_TABLE",
    "META_TABLE",
    "PROVENANCE_TABLE",
    "REJECTED_TABLE",
    "IngestedDocument",
    "PreviousState",
    "read_previous",
    "write_database",
]

PROVENANCE_TABLE = "_pimento_provenance"
REJECTED_TABLE = "_pimento_rejected"
DOCUMENTS_TABLE = "_pimento_documents"
META_TABLE = "_pimento_ingest_meta"

_INTERNAL_DDL = (
    f"CREATE TABLE {PROVENANCE_TABLE} (table_name VARCHAR NOT NULL, row_key VARCHAR NOT NULL, "
    "column_name VARCHAR NOT NULL, doc_id VARCHAR NOT NULL, char_start INTEGER NOT NULL, char_end INTEGER NOT NULL)",
    f"CREATE TABLE {REJECTED_TABLE} (table_name VARCHAR NOT NULL, row_key VARCHAR, row_values VARCHAR NOT NULL, "
    "reason VARCHAR NOT NULL, doc_ids VARCHAR NOT NULL, mentions VARCHAR NOT NULL)",
    f"CREATE TABLE {DOCUMENTS_TABLE} (doc_id VARCHAR PRIMARY KEY, sha256 VARCHAR NOT NULL, chars INTEGER NOT NULL, "
    "extractor VARCHAR NOT NULL)",
    f"CREATE TABLE {META_TABLE} (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)",
)


@dataclass(frozen=True)
class IngestedDocument:
    """A document recorded in ``_pimento_documents``."""

    doc_id: str
    sha256: str
    chars: int
    extractor: str


@dataclass
class PreviousState:
    """What an earlier run left: its documents, its rows (as mentions) and its rejected mentions."""

    documents: dict[str, IngestedDocument] = field(default_factory=dict)
    row_mentions: list[Mention] = field(default_factory=list)
    rejected_mentions: list[Mention] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)


def read_previous(out: Path, target: Target) -> PreviousState:
    """The state of an earlier ``pimento ingest`` into ``out``; empty when ``out`` does not exist.

    Raises:
        UserError: ``out`` exists but was not written by ``pimento ingest``, or for another schema.
    """
    if not out.exists():
        return PreviousState()
    try:
        con = duckdb.connect(str(out), read_only=True)
    except duckdb.Error as exc:
        raise DataSourceError(f"cannot open the existing output {out}: {exc}") from exc
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if not {META_TABLE, DOCUMENTS_TABLE, PROVENANCE_TABLE, REJECTED_TABLE} <= tables:
            raise UserError(
                f"{out} exists and was not written by `pimento ingest`; refusing to overwrite it",
                hint="choose another --out, or remove the file",
            )
        meta = dict(con.execute(f"SELECT key, value FROM {META_TABLE}").fetchall())
        if meta.get("schema_fingerprint") != target.fingerprint:
            raise UserError(
                f"{out} was ingested with another target schema",
                hint="ingest into a new --out, or give the schema it was built with",
            )
        state = PreviousState()
        for doc_id, sha, chars, extractor in con.execute(
            f"SELECT doc_id, sha256, chars, extractor FROM {DOCUMENTS_TABLE} ORDER BY doc_id"
        ).fetchall():
            state.documents[doc_id] = IngestedDocument(doc_id, sha, chars, extractor)
        spans: dict[tuple[str, str, str], list[Span]] = {}
        for table_name, row_key, column, doc_id, start, end in con.execute(
            f"SELECT table_name, row_key, column_name, doc_id, char_start, char_end FROM {PROVENANCE_TABLE} "
            "ORDER BY rowid"
        ).fetchall():
            spans.setdefault((table_name, row_key, column), []).append(Span(doc_id, start, end))
        for name in target.order:
            table = target.catalog.table(name)
            key = key_of(table)
            cursor = con.execute(f"SELECT * FROM {_q(name)} ORDER BY rowid")
            columns = [d[0] for d in cursor.description]
            fetched = cursor.fetchall()
            state.rows[name] = len(fetched)
            for ordinal, values in enumerate(fetched):
                record = dict(zip(columns, values))
                row_key = row_key_text([record[c] for c in key]) if key else f"#{ordinal}"
                cells = {}
                for column, value in record.items():
                    if value is None:
                        continue
                    cells[column] = Cell(value, tuple(spans.get((name, row_key, column), ())))
                first = next((s.doc_id for c in cells.values() for s in c.spans), "")
                state.row_mentions.append(Mention(name, cells, first))
        for (text,) in con.execute(f"SELECT mentions FROM {REJECTED_TABLE} ORDER BY rowid").fetchall():
            state.rejected_mentions.extend(Mention.from_dict(m) for m in json.loads(text))
        return state
    finally:
        con.close()


def write_database(
    out: Path,
    target: Target,
    resolution: Resolution,
    documents: Sequence[IngestedDocument],
    *,
    progress: Callable[[str], None] | None = None,
) -> Resolution:
    """Write ``resolution`` into a fresh DuckDB file and rename it over ``out``.

    The engine checks every key, unique key, foreign key and CHECK constraint again as the rows go
    in; a row it refuses is moved to the rejected rows with the engine's reason (and so are the rows
    that then lose their referenced row). Returns the resolution as written.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    os.close(handle)
    tmp = Path(tmp_name)
    tmp.unlink()
    rows = {name: list(found) for name, found in resolution.rows.items()}
    rejected = list(resolution.rejected)
    try:
        con = duckdb.connect(str(tmp))
        try:
            for statement in (*target.ddl, *_INTERNAL_DDL):
                con.execute(statement)
            for name in target.order:
                if progress is not None:
                    progress(name)
                rows[name] = _insert(con, target, name, rows.get(name, []), rejected, tmp.parent)
            _write_internal(con, target, rows, rejected, documents, tmp.parent)
            con.execute("CHECKPOINT")
        finally:
            con.close()
        os.replace(tmp, out)
    except duckdb.Error as exc:
        raise DataSourceError(f"cannot write {out}: {exc}") from exc
    except OSError as exc:
        raise DataSourceError(f"cannot write {out}: {exc}") from exc
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            if leftover.exists():
                leftover.unlink()
    return Resolution(rows, rejected)


def _insert(con: duckdb.DuckDBPyConnection, target: Target, name: str, rows: list[Row], rejected: list[Rejected], folder: Path) -> list[Row]:
    """Bulk-insert ``rows``; if the engine refuses, insert one by one and reject the refused ones."""
    table = target.catalog.table(name)
    columns = table.column_names
    if not rows:
        return rows
    # Rows whose foreign key pointed at a row the engine refused are refused in turn.
    try:
        _bulk(con, table, rows, folder)
        return rows
    except duckdb.Error:
        pass
    kept = []
    placeholders = ", ".join("?" for _ in columns)
    insert = f"INSERT INTO {_q(name)} ({', '.join(_q(c) for c in columns)}) VALUES ({placeholders})"
    for row in rows:
        try:
            con.execute(insert, [row.value(c) for c in columns])
            kept.append(row)
        except duckdb.Error as exc:
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            rejected.append(Rejected(name, {c: cell.value for c, cell in row.cells.items()}, f"refused by the database: {message}", tuple(row.mentions)))
    return kept


def _bulk(con: duckdb.DuckDBPyConnection, table: Any, rows: list[Row], folder: Path) -> None:
    columns = table.column_names
    types = {c.name: (c.raw_type or "VARCHAR") for c in table.columns}
    handle, path = tempfile.mkstemp(prefix=".ingest-", suffix=".jsonl", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            for row in rows:
                stream.write(json.dumps({c: _json(row.value(c)) for c in columns}, ensure_ascii=False) + "\n")
        spec = "{" + ", ".join(f"'{_lit(c)}': '{_lit(types[c])}'" for c in columns) + "}"
        con.execute(
            f"INSERT INTO {_q(table.name)} ({', '.join(_q(c) for c in columns)}) "
            f"SELECT {', '.join(_q(c) for c in columns)} FROM read_json('{_lit(path)}', format = 'newline_delimited', "
            f"columns = {spec})"
        )
    finally:
        os.unlink(path)


def _write_internal(
    con: duckdb.DuckDBPyConnection,
    target: Target,
    rows: dict[str, list[Row]],
    rejected: list[Rejected],
    documents: Sequence[IngestedDocument],
    folder: Path,
) -> None:
    provenance = []
    for name in target.order:
        key = key_of(target.catalog.table(name))
        for ordinal, row in enumerate(rows.get(name, [])):
            row_key = row_key_text([row.value(c) for c in key]) if key else f"#{ordinal}"
            for column, cell in row.cells.items():
                for span in cell.spans:
                    provenance.append((name, row_key, column, span.doc_id, span.start, span.end))
    _many(con, PROVENANCE_TABLE, provenance, folder)
    reject_rows = []
    for item in rejected:
        table = target.catalog.table(item.table)
        key = key_of(table)
        rejected_key = row_key_text([item.values.get(c) for c in key]) if key and all(item.values.get(c) is not None for c in key) else None
        reject_rows.append((
            item.table, rejected_key, json.dumps(item.to_dict()["values"], ensure_ascii=False), item.reason,
            json.dumps(list(item.doc_ids)), json.dumps([m.to_dict() for m in item.mentions], ensure_ascii=False),
        ))
    _many(con, REJECTED_TABLE, reject_rows, folder)
    _many(con, DOCUMENTS_TABLE, [(d.doc_id, d.sha256, d.chars, d.extractor) for d in documents], folder)
    _many(con, META_TABLE, [("schema_fingerprint", target.fingerprint), ("schema_source", target.source)], folder)


def _many(con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple], folder: Path) -> None:
    if not rows:
        return
    columns = [d[0] for d in con.execute(f"SELECT * FROM {table} LIMIT 0").description]
    types = dict(con.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ?", [table]
    ).fetchall())
    handle, path = tempfile.mkstemp(prefix=".ingest-", suffix=".jsonl", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            for row in rows:
                stream.write(json.dumps(dict(zip(columns, row)), ensure_ascii=False) + "\n")
        spec = "{" + ", ".join(f"'{c}': '{types[c]}'" for c in columns) + "}"
        con.execute(f"INSERT INTO {table} SELECT * FROM read_json('{_lit(path)}', format = 'newline_delimited', columns = {spec})")
    finally:
        os.unlink(path)


def _json(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def _lit(text: str) -> str:
    return text.replace("'", "''")
