"""Provenance in CI answers: an authorized cell traced to the text it was read from.

A database written by ``pimento ingest`` keeps, per cell, the document spans it was read from
(``_pimento_provenance``). In CI mode (:mod:`pimento.release.modes`) the custodian may let that
text flow with the answer, under the same policy and context, with ``[provenance]`` in the
``pimento.toml`` beside the database::

    [provenance]
    release = "span"          # "none" (default) | "span" | "sentence"
    corpus = "corpus/documents"

What the analyst receives (``Answer.provenance``), per output cell that is a plain column of a
base table (``SELECT name, v.diagnosis FROM ...``; an expression, an aggregate or a column of a
subquery is not traced) and is not NULL:

* ``matches``: how many authorized cells of that column, in rows whose authorized cells agree with
  every traced column of the same table in the output row, hold that value. The answer row does
  not say which base row it came from, so the trace is by value: a function of the authorized cells
  A_c only.
* ``texts``: for up to :data:`MAX_TEXTS` of those cells, the text: with ``span``, the exact
  characters the value was read from (the value as the document writes it); with ``sentence``, the
  sentence around it, but only when every value read from that sentence (every span of every cell,
  of any table, and of every row ingest kept aside) is a cell authorized in this context, else the
  span. No document id, no character offset (offsets count the characters before the value, which
  may be denied values) and nothing about a cell that is not authorized.

What is safe, and what is the custodian's decision:

* ``span`` is a function of the authorized cells and their own spans: on neighbouring databases
  that keep the authorized cells (and their spans), the analyst's output is the same
  (tests/unit/release/test_provenance.py runs the neighbour harness).
* ``sentence`` also releases the document's own words between the values, which the database does
  not hold and the policy does not govern, and whether a sentence came back whole depends on the
  other values read from it. A value the extractor did not read (an LLM that reworded it, text the
  schema has no column for) is not a span and does not block the sentence. The custodian enables it
  for corpora whose words outside the values are not private (forms, template notes); it is off by
  default.
* A document whose text changed since it was ingested (SHA-256 in ``_pimento_documents``) or is
  missing from ``corpus`` gives no text (fail closed).

The custodian's audit log records, for every CI answer on an ingested database, which documents
the traced cells came from (``ci_provenance``): the analyst never sees document ids.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import traverse_scope

from pimento.errors import DataSourceError, UserError
from pimento.ingest.documents import load_corpus
from pimento.ingest.extract import locate
from pimento.ingest.resolve import row_key_text
from pimento.ingest.target import key_of
from pimento.policy.compiler import quote
from pimento.policy.lineage import analyze_query, qualify_query

if TYPE_CHECKING:
    from pimento.engines.database import Database
    from pimento.policy import Authorization, Context, Enforcer
    from pimento.release.modes.base import Private
    from pimento.release.request import Context as RequestContext

__all__ = ["MAX_TEXTS", "RELEASE_LEVELS", "CellSource", "Trace", "audit_trace", "sentence_bounds", "trace_answer"]

#: ``[provenance] release`` values.
RELEASE_LEVELS = ("none", "span", "sentence")
#: At most this many texts per traced cell (the trace is by value: a common value matches many cells).
MAX_TEXTS = 3

_PROVENANCE = "_pimento_provenance"
_REJECTED = "_pimento_rejected"
_DOCUMENTS = "_pimento_documents"

#: A sentence ends at ., ! or ? followed by blanks, or at a line break.
_BOUNDARY = re.compile(r"(?<=[.!?])(?<!\b[Nn]o\.)(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)\s+|\n+")


@dataclass(frozen=True)
class CellSource:
    """Analyst-facing: the text an authorized output cell traces to (see the module docstring)."""

    row: int
    column: str
    matches: int
    texts: tuple[dict[str, str], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"row": self.row, "column": self.column, "matches": self.matches, "texts": [dict(t) for t in self.texts]}


@dataclass
class Trace:
    """The analyst's part (``sources``) and the custodian's (``documents``: ids the traced cells came from)."""

    release: str
    sources: list[CellSource] = field(default_factory=list)
    documents: set[str] = field(default_factory=set)

    def to_dict(self) -> dict[str, Any]:
        """What the analyst receives (no document ids)."""
        return {"release": self.release, "cells": [s.to_dict() for s in self.sources]}


def sentence_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """``[s, e)``: the sentence of ``text`` holding characters ``[start, end)``."""
    s = 0
    for match in _BOUNDARY.finditer(text, 0, start):
        s = match.end()
    after = _BOUNDARY.search(text, end)
    e = after.start() if after else len(text)
    return s, max(e, end)


def trace_answer(
    enforcer: Enforcer, context: Context, sql: str, columns: tuple[str, ...], rows: tuple[tuple[Any, ...], ...], *,
    database: Database,
) -> Trace | None:
    """The provenance of a CI answer, or None when ``database`` was not written by ``pimento ingest``.

    ``enforcer``/``context`` are the ones that answered ``sql`` with ``columns``/``rows``;
    ``database`` is the opened :class:`~pimento.engines.database.Database` (its settings decide
    the release level). Custodian-side: reads the provenance, the data and the corpus.
    """
    catalog = database.catalog
    if not (catalog.has_table(_PROVENANCE) and catalog.has_table(_DOCUMENTS)):
        return None
    settings = database.settings.provenance
    tracer = _Tracer(enforcer, context, database)
    trace = Trace(settings.release)
    plain = tracer.plain_columns(sql, len(columns))
    by_alias: dict[str, list[tuple[int, str, str]]] = {}
    for index, alias, relation, column in plain:
        by_alias.setdefault(alias, []).append((index, relation, column))
    for i, row in enumerate(rows):
        for alias, cols in by_alias.items():
            relation = cols[0][1]
            wanted = {column: row[index] for index, _r, column in cols if row[index] is not None}
            if not wanted:
                continue
            keys = tracer.matching_rows(relation, wanted)
            for index, _r, column in cols:
                if row[index] is None:
                    continue
                spans = [s for k in keys for s in tracer.spans(relation, k, column)]
                trace.documents.update(d for d, _s, _e in spans)
                if settings.release == "none":
                    continue
                # a span that does not write the value itself (a lookup's name and year of birth, a
                # rule's whole match) would show other cells' values: it is not released
                spans = [s for s in spans if tracer.writes_value(s, relation, column, row[index])]
                texts: list[dict[str, str]] = []
                for doc_id, start, end in spans:
                    if len(texts) >= MAX_TEXTS:
                        break
                    found = tracer.text(doc_id, start, end, sentence=settings.release == "sentence")
                    if found is not None and found not in texts:
                        texts.append(found)
                trace.sources.append(CellSource(i, columns[index], len(keys), tuple(texts)))
    return trace


def audit_trace(session: Private, enforcer: Enforcer, context: Context, sql: str, auth: Authorization, *, analyst: str,
                spec: RequestContext) -> dict[str, Any] | None:
    """Trace a CI answer (``auth``) of ``session`` (a :class:`~pimento.release.session.Session`): the documents go to the custodian's audit log, the
    analyst's part (None when the release level is ``none`` or the database was not ingested) is returned.

    A failure never fails the answer: its reason goes to the audit log (engine text may hold private
    values) and the analyst gets no texts.
    """
    release = session.database.settings.provenance.release
    try:
        trace = trace_answer(enforcer, context, sql, auth.columns, auth.rows, database=session.database)
    except Exception as exc:  # noqa: BLE001 - a bug here must not cost the answer, and its text is private
        session.ledger.record_custodian_action(
            session.location, "ci_provenance_failed", {"analyst": analyst, "sql": sql, "error": f"{type(exc).__name__}: {exc}"}
        )
        return None if release == "none" else {"release": release, "cells": []}
    if trace is None:
        return None
    session.ledger.record_custodian_action(
        session.location, "ci_provenance",
        {"analyst": analyst, "sql": sql, "context": spec.to_dict(), "release": release,
         "documents": sorted(trace.documents), "texts": sum(len(s.texts) for s in trace.sources)},
    )
    return trace.to_dict() if release != "none" else None


class _Tracer:
    """Custodian-side look-ups, cached for one answer."""

    def __init__(self, enforcer: Enforcer, context: Context, database: Database) -> None:
        self.enforcer = enforcer
        self.context = context
        self.engine = database.engine
        self.catalog = database.catalog
        self.settings = database.settings
        self._authorized: dict[tuple[str, str], set[str]] = {}
        self._rows: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
        self._ingest_to_policy: dict[str, dict[str, str]] = {}
        self._values: dict[str, dict[str, dict[str, Any]]] = {}
        self._index: dict[tuple[str, tuple[str, ...]], dict[tuple[Any, ...], list[str]]] = {}
        self._writes: dict[tuple[Any, ...], bool] = {}
        self._spans: dict[tuple[str, str], dict[str, list[tuple[str, int, int]]]] = {}
        self._documents: dict[str, str] | None = None
        self._doc_spans: dict[str, list[tuple[str, str, str, int, int]]] | None = None
        self._rejected: dict[str, list[tuple[int, int]]] | None = None

    # ---- lineage --------------------------------------------------------------------

    def plain_columns(self, sql: str, width: int) -> list[tuple[int, str, str, str]]:
        """``(output index, alias, relation, column)`` for output columns that are a base table's column."""
        analyzed = analyze_query(sql, self.catalog, dialect=self.enforcer.dialect)
        names = {t.name.lower(): t for t in self.catalog.tables}
        try:
            qualified = qualify_query(analyzed.tree, self.catalog, self.enforcer.dialect)
            scopes = traverse_scope(qualified)
        except SqlglotError:
            return []
        if not isinstance(qualified, exp.Select) or len(qualified.selects) != width or not scopes:
            return []
        root = scopes[-1]
        out = []
        for index, sel in enumerate(qualified.selects):
            inner = sel.this if isinstance(sel, exp.Alias) else sel
            if not isinstance(inner, exp.Column):
                continue
            source = root.sources.get(inner.table)
            if isinstance(source, exp.Table) and source.name.lower() in names:
                table = names[source.name.lower()]
                if table.name.startswith("_pimento") or not table.has_column(inner.name):
                    continue
                out.append((index, inner.table, table.name, table.column(inner.name).name))
        return out

    # ---- authorization (A_c) --------------------------------------------------------

    def _key(self, relation: str) -> tuple[str, ...]:
        return key_of(self.catalog.table(relation))

    def _row_key_sql(self, relation: str) -> str | None:
        for loc in self.enforcer.compiled.locations.values():
            if loc.relation == relation:
                return str(loc.row_key_sql)
        return None

    def authorized(self, relation: str, column: str) -> set[str]:
        """Policy row keys of the cells of ``relation.column`` authorized in the context."""
        key = (relation, column)
        if key not in self._authorized:
            cells = self.enforcer.authorized_cells(self.context, f"SELECT {quote(column)} FROM {quote(relation)}")
            self._authorized[key] = {k for r, k, a in cells if r == relation and a == column}
        return self._authorized[key]

    def rows(self, relation: str) -> list[tuple[str, str, dict[str, Any]]]:
        """``(policy row key, ingest row key, values)`` of every row of ``relation`` (custodian read)."""
        if relation not in self._rows:
            key = self._key(relation)
            key_sql = self._row_key_sql(relation)
            if not key or key_sql is None:
                self._rows[relation] = []  # no key or no norm on it: nothing of it is authorized
            else:
                columns = self.catalog.table(relation).column_names
                res = self.engine.execute(
                    f"SELECT {key_sql} AS k, {', '.join('t.' + quote(c) for c in columns)} FROM {quote(relation)} AS t"
                )
                found = []
                for values in res.rows:
                    record = dict(zip(columns, values[1:]))
                    found.append((str(values[0]), row_key_text([record[c] for c in key]), record))
                self._rows[relation] = found
                self._values[relation] = {ingest: values for _p, ingest, values in found}
            self._ingest_to_policy[relation] = {ingest: policy for policy, ingest, _v in self._rows[relation]}
        return self._rows[relation]

    def matching_rows(self, relation: str, wanted: dict[str, Any]) -> list[str]:
        """Ingest row keys of rows whose cells of ``wanted``'s columns are authorized and equal to it."""
        columns = tuple(sorted(wanted))
        index = self._index.get((relation, columns))
        if index is None:
            # rows whose cells of these columns are all authorized, by their values (A_c only)
            allowed = {c: self.authorized(relation, c) for c in columns}
            index = {}
            for policy, ingest, values in self.rows(relation):
                if all(policy in allowed[c] for c in columns):
                    index.setdefault(tuple(_hashable(values.get(c)) for c in columns), []).append(ingest)
            self._index[(relation, columns)] = index
        return list(index.get(tuple(_hashable(wanted[c]) for c in columns), ()))

    def is_authorized(self, relation: str, ingest_key: str, column: str, span: tuple[str, int, int]) -> bool:
        """The cell is authorized in the context and ``span`` writes its own value (not a lookup's text)."""
        if not self.catalog.has_table(relation) or not self.catalog.table(relation).has_column(column):
            return False
        self.rows(relation)
        policy = self._ingest_to_policy.get(relation, {}).get(ingest_key)
        if policy is None or policy not in self.authorized(relation, column):
            return False
        value = self._values.get(relation, {}).get(ingest_key, {}).get(column)
        return value is not None and self.writes_value(span, relation, column, value)

    def writes_value(self, span: tuple[str, int, int], relation: str, column: str, value: Any) -> bool:
        """Whether the text of ``span`` is ``value`` as written (a date in words counts; a name for an id does not)."""
        memo = (span, relation, column, _hashable(value))
        if memo not in self._writes:
            doc_id, start, end = span
            text = self.documents().get(doc_id)
            if text is None or not 0 <= start < end <= len(text):
                self._writes[memo] = False
            else:
                written = text[start:end].strip()
                self._writes[memo] = locate(written, value, self.catalog.table(relation).column(column).type) == (0, len(written))
        return self._writes[memo]

    # ---- provenance -----------------------------------------------------------------

    def spans(self, relation: str, ingest_key: str, column: str) -> list[tuple[str, int, int]]:
        key = (relation, column)
        if key not in self._spans:
            found: dict[str, list[tuple[str, int, int]]] = {}
            res = self.engine.execute(
                f"SELECT row_key, doc_id, char_start, char_end FROM {_PROVENANCE} WHERE table_name = ? AND column_name = ? "
                "ORDER BY doc_id, char_start",
                [relation, column],
            )
            for row_key, doc_id, start, end in res.rows:
                found.setdefault(row_key, []).append((str(doc_id), int(start), int(end)))
            self._spans[key] = found
        return self._spans[key].get(ingest_key, [])

    def documents(self) -> dict[str, str]:
        """Document id -> text, for the documents of the configured corpus whose text is the ingested one."""
        if self._documents is None:
            self._documents = {}
            corpus = self.settings.provenance.corpus
            if corpus:
                ingested = dict(self.engine.execute(f"SELECT doc_id, sha256 FROM {_DOCUMENTS}").rows)
                try:
                    loaded = load_corpus(self.settings.resolve(corpus))
                except (DataSourceError, UserError):
                    loaded = []  # fail closed: no text
                self._documents = {d.id: d.text for d in loaded if ingested.get(d.id) == d.sha256}
        return self._documents

    def text(self, doc_id: str, start: int, end: int, *, sentence: bool) -> dict[str, str] | None:
        text = self.documents().get(doc_id)
        if text is None or not 0 <= start < end <= len(text):
            return None
        if sentence:
            s, e = sentence_bounds(text, start, end)
            if self._sentence_authorized(doc_id, s, e):
                return {"scope": "sentence", "text": text[s:e].strip()}
        return {"scope": "span", "text": text[start:end]}

    def _sentence_authorized(self, doc_id: str, s: int, e: int) -> bool:
        """Every span read from ``[s, e)`` of the document is an authorized cell; no rejected row's span is there."""
        if self._doc_spans is None:  # every span, by document, read once per answer
            self._doc_spans = {}
            res = self.engine.execute(f"SELECT doc_id, table_name, row_key, column_name, char_start, char_end FROM {_PROVENANCE}")
            for d, t, k, c, a, b in res.rows:
                self._doc_spans.setdefault(str(d), []).append((str(t), str(k), str(c), int(a), int(b)))
        for table, key, column, a, b in self._doc_spans.get(doc_id, ()):
            if a < e and b > s and not self.is_authorized(table, key, column, (doc_id, a, b)):
                return False
        return not any(a < e and b > s for a, b in self._rejected_spans().get(doc_id, ()))

    def _rejected_spans(self) -> dict[str, list[tuple[int, int]]]:
        if self._rejected is None:
            self._rejected = {}
            if self.catalog.has_table(_REJECTED):
                for (text,) in self.engine.execute(f"SELECT mentions FROM {_REJECTED}").rows:
                    for mention in json.loads(text):
                        cells = list(mention.get("cells", {}).values())
                        cells += [c for lk in mention.get("lookups", ()) for c in lk.get("on", {}).values()]
                        for cell in cells:
                            for doc_id, a, b in cell.get("spans", ()):
                                self._rejected.setdefault(str(doc_id), []).append((int(a), int(b)))
        return self._rejected


def _hashable(value: Any) -> Any:
    """``value``, or its repr when it cannot be hashed (a LIST or STRUCT cell)."""
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value
