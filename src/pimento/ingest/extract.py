"""Extractors: a document in, mentions (rows with spans) out, behind one small protocol.

* :class:`OfflineExtractor` (the embedded default) applies a :class:`~pimento.ingest.patterns.PatternSpec`:
  regexes with named groups per table, value normalisers, lookups and same-document context.
* :class:`LLMExtractor` asks any OpenAI-compatible endpoint (or a replay fixture) for the rows of
  one document as schema-constrained JSON, then locates each value in the text for provenance.

The LLM extractor sends the document's text to the endpoint: which endpoint receives the corpus is
the custodian's decision (the default is a local server, ``http://127.0.0.1:8080/v1``). This is
the one place in Pimento where private text goes into a prompt, and it happens before the
database Pimento protects exists; the analyst-side prompts of :mod:`pimento.llm.prompts` are not
involved.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, create_model

from pimento.ingest.documents import Document
from pimento.ingest.model import Cell, Lookup, Mention, Span
from pimento.ingest.patterns import PatternSpec
from pimento.schema import Catalog

if TYPE_CHECKING:
    from pimento.llm.base import Backend
    from pimento.llm.usage import Usage

__all__ = [
    "DEFAULT_LLM_URL",
    "Extractor",
    "LLMExtractor",
    "OfflineExtractor",
    "locate",
]

#: The endpoint the LLM extractor uses when none is configured: a local OpenAI-compatible server.
DEFAULT_LLM_URL = "http://127.0.0.1:8080/v1"


@runtime_checkable
class Extractor(Protocol):
    """Anything that reads mentions out of one document."""

    #: Registry name ("offline", "llm"), recorded with the ingested documents.
    name: str

    def extract(self, document: Document) -> list[Mention]:
        """The mentions ``document`` states, in text order; spans index into ``document.text``."""
        ...


# --------------------------------------------------------------------------------- offline


class OfflineExtractor:
    """Pattern-based extraction: every match of a rule's regexes is one mention of its table."""

    name = "offline"

    def __init__(self, spec: PatternSpec, catalog: Catalog):
        self.spec = spec
        self.catalog = catalog

    def extract(self, document: Document) -> list[Mention]:
        text = document.text
        found: list[tuple[Mention, Mapping[str, tuple[str, str]]]] = []
        for table_spec in self.spec.tables:
            table = self.catalog.table(table_spec.table)
            for rule in table_spec.rules:
                if rule.when is not None and rule.when.search(text) is None:
                    continue
                for match in _matches(rule.patterns, text):
                    cells: dict[str, Cell] = {}
                    groups: dict[str, Cell] = {}
                    for group, value in match.groupdict().items():
                        if value is None or not value.strip():
                            continue
                        start, end = match.span(group)
                        # The span is the group's text without surrounding blanks.
                        lead = len(value) - len(value.lstrip())
                        trail = len(value) - len(value.rstrip())
                        normalised = rule.value(group, value)
                        if normalised == "":
                            continue  # a normaliser mapped it to nothing (``none`` -> ''): not stated
                        cell = Cell(normalised, (Span(document.id, start + lead, end - trail),))
                        groups[group] = cell
                        if table.has_column(group):
                            cells[table.column(group).name] = cell
                    whole = (Span(document.id, match.start(), match.end()),)
                    for column, value in rule.constants.items():
                        cells.setdefault(column, Cell(value, whole))
                    lookups = tuple(
                        Lookup(lk.column, lk.ref_table, lk.ref_column, {c: groups[g] for c, g in lk.on.items()})
                        for lk in rule.lookups
                        if lk.column not in cells and all(g in groups for g in lk.on.values())
                    )
                    if cells or lookups:
                        found.append((Mention(table.name, cells, document.id, lookups), rule.context))
        found.sort(key=lambda item: _first_offset(item[0]))
        return _with_context(found)


def _matches(patterns: tuple[re.Pattern[str], ...], text: str) -> list[re.Match[str]]:
    """Non-overlapping matches of any of ``patterns``: earliest first, the longest on a tie."""
    candidates = [m for p in patterns for m in p.finditer(text) if m.end() > m.start()]
    candidates.sort(key=lambda m: (m.start(), -(m.end() - m.start())))
    chosen: list[re.Match[str]] = []
    end = -1
    for match in candidates:
        if match.start() >= end:
            chosen.append(match)
            end = match.end()
    return chosen


def _first_offset(mention: Mention) -> int:
    starts = [s.start for c in mention.cells.values() for s in c.spans]
    starts += [s.start for lk in mention.lookups for c in lk.on.values() for s in c.spans]
    return min(starts) if starts else 0


def _with_context(found: list[tuple[Mention, Mapping[str, tuple[str, str]]]]) -> list[Mention]:
    """Fill ``context`` columns from the first mention of the named table in the same document.

    When that mention does not state the column but finds it by a lookup, the lookup is copied.
    """
    out = []
    for mention, context in found:
        if context:
            cells = dict(mention.cells)
            lookups = list(mention.lookups)
            for column, (ref_table, ref_column) in context.items():
                if column in cells or any(lk.column == column for lk in lookups):
                    continue
                for other, _ in found:
                    if other.table != ref_table:
                        continue
                    if ref_column in other.cells:
                        cells[column] = other.cells[ref_column]
                        break
                    copied = next((lk for lk in other.lookups if lk.column == ref_column), None)
                    if copied is not None:
                        lookups.append(Lookup(column, copied.ref_table, copied.ref_column, copied.on))
                        break
            mention = Mention(mention.table, cells, mention.doc_id, tuple(lookups))
        out.append(mention)
    return out


# --------------------------------------------------------------------------------- LLM

_PY_TYPES: dict[str, Any] = {"integer": int, "real": float, "boolean": bool}

_SYSTEM = (
    "You extract database rows from one document. Return only rows whose values the document states; "
    "leave a column null when the document does not state it; never invent keys. Copy names and codes as "
    "written; write dates as YYYY-MM-DD. Answer with one JSON object that follows the schema."
)


class LLMExtractor:
    """Schema-constrained JSON extraction by an LLM backend (one request per document, temperature 0)."""

    name = "llm"

    def __init__(self, backend: Backend, catalog: Catalog, *, max_tokens: int = 2048, usage: Usage | None = None):
        from pimento.llm.usage import Usage

        self.backend = backend
        self.catalog = catalog
        self.max_tokens = max_tokens
        self.usage = usage if usage is not None else Usage()
        self.model = _answer_model(catalog)

    def messages(self, document: Document) -> tuple[Any, ...]:
        """The chat messages for one document (the schema, then the document's text)."""
        from pimento.llm.base import Message
        from pimento.llm.prompts import render_schema

        user = (
            "Schema:\n" + render_schema(self.catalog) + "\n\nDocument:\n" + document.text +
            "\n\nFor each table, list the rows this document states."
        )
        return (Message("system", _SYSTEM), Message("user", user))

    def extract(self, document: Document) -> list[Mention]:
        from pimento.llm.structured import complete_structured_one

        answer = complete_structured_one(
            self.backend, self.messages(document), self.model, temperature=0.0,
            max_tokens=self.max_tokens, usage=self.usage,
        )
        mentions = []
        for table in self.catalog.tables:
            for row in getattr(answer, _field(table.name)) or ():
                cells = {}
                for column in table.columns:
                    value = getattr(row, _field(column.name), None)
                    if value is None or (isinstance(value, str) and not value.strip()):
                        continue
                    span = locate(document.text, value, column.type)
                    spans = (Span(document.id, *span),) if span else ()
                    cells[column.name] = Cell(value, spans)
                if cells:
                    mentions.append(Mention(table.name, cells, document.id))
        return mentions


def _field(name: str) -> str:
    """A pydantic field name for a table or column (aliases keep the schema's spelling in JSON)."""
    return "f_" + re.sub(r"\W", "_", name)


def _answer_model(catalog: Catalog) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for table in catalog.tables:
        columns: dict[str, Any] = {  # pydantic field definitions: (a type built at run time, a Field)
            _field(c.name): (Optional[_PY_TYPES.get(c.type, str)], Field(None, alias=c.name))  # noqa: UP045
            for c in table.columns
        }
        row = create_model(
            f"Row_{re.sub(r'[^0-9A-Za-z_]', '_', table.name)}",
            __config__=ConfigDict(extra="ignore", populate_by_name=True),
            **columns,
        )
        fields[_field(table.name)] = (list[row], Field(default_factory=list, alias=table.name))
    return create_model(
        "ExtractedRows", __config__=ConfigDict(extra="ignore", populate_by_name=True), **fields
    )


_DATE_FORMATS = ("%Y-%m-%d", "%d %B %Y", "%B %d, %Y", "%d/%m/%Y", "%m/%d/%Y", "%d %b %Y", "%b %d, %Y")


def locate(text: str, value: Any, kind: str = "text", *, start: int = 0) -> tuple[int, int] | None:
    """Where ``value`` is written in ``text`` (first occurrence at or after ``start``), or None.

    Text is matched case-insensitively with any run of blanks; numbers as whole numbers; dates in
    the ISO form or a few common written forms.

    >>> locate("Seen on 3 March 2021 for asthma.", "2021-03-03", "date")
    (8, 20)
    """
    forms: list[str] = []
    if isinstance(value, bool):
        forms = ["true" if value else "false", "yes" if value else "no"]
    elif kind == "date" or isinstance(value, (dt.date,)):
        try:
            day = value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value).strip())
            forms = [day.strftime(f) for f in _DATE_FORMATS]
            forms += [f"{day.day} {day.strftime('%B %Y')}", f"{day.strftime('%B')} {day.day}, {day.year}"]
        except ValueError:
            forms = [str(value)]
    else:
        forms = [str(value)]
    for form in forms:
        words = form.split()
        if not words:
            continue
        body = r"\s+".join(re.escape(w) for w in words)
        pattern = re.compile(rf"(?<![\w.]){body}(?![\w])" if form[:1].isalnum() else body, re.IGNORECASE)
        match = pattern.search(text, start)
        if match:
            return match.start(), match.end()
    return None
