"""``ingest``: a corpus of documents and a target schema in, a checked database with provenance out."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pimento.errors import LLMError, UserError
from pimento.ingest.documents import Document, load_corpus
from pimento.ingest.extract import DEFAULT_LLM_URL, Extractor, LLMExtractor, OfflineExtractor
from pimento.ingest.model import Mention
from pimento.ingest.patterns import PatternSpec, derive_spec, load_spec
from pimento.ingest.resolve import Rejected, resolve
from pimento.ingest.store import IngestedDocument, read_previous, write_database
from pimento.ingest.target import Target, load_target

if TYPE_CHECKING:
    from pimento.config import LLMSettings
    from pimento.llm import Backend

__all__ = ["EXTRACTOR_NAMES", "IngestReport", "ingest", "open_extractor"]

#: The extractors ``--extractor`` accepts.
EXTRACTOR_NAMES: tuple[str, ...] = ("offline", "llm")

#: ``progress(step, done, total)``: step is ``extract`` (per document) or ``write`` (per table).
ProgressCallback = Callable[[str, int, int], None]


@dataclass
class IngestReport:
    """What a run did: documents read, skipped and failed, rows per table, rejections."""

    out: Path
    extractor: str
    documents: int
    new_documents: int
    skipped_documents: int
    failed_documents: list[tuple[str, str]]
    mentions: int
    rows: dict[str, int]
    rows_added: dict[str, int]
    rejected: list[Rejected]
    provenance_spans: int
    unlocated_values: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    #: New documents the extractor read but found no row in: not recorded, so a re-run reads them again.
    empty_documents: list[str] = field(default_factory=list)

    def rejected_by_table(self) -> dict[str, int]:
        return dict(Counter(r.table for r in self.rejected))

    def to_dict(self, *, examples: int = 20) -> dict[str, Any]:
        return {
            "out": str(self.out),
            "extractor": self.extractor,
            "documents": self.documents,
            "new_documents": self.new_documents,
            "skipped_documents": self.skipped_documents,
            "failed_documents": [{"doc_id": d, "reason": r} for d, r in self.failed_documents],
            "empty_documents": list(self.empty_documents),
            "mentions": self.mentions,
            "rows": dict(self.rows),
            "rows_added": dict(self.rows_added),
            "rejected": len(self.rejected),
            "rejected_by_table": self.rejected_by_table(),
            "rejected_examples": [r.to_dict() for r in self.rejected[:examples]],
            "provenance_spans": self.provenance_spans,
            "unlocated_values": self.unlocated_values,
            "seconds": round(self.seconds, 3),
            "notes": list(self.notes),
        }


def open_extractor(
    name: str,
    target: Target,
    *,
    patterns: str | Path | PatternSpec | None = None,
    llm_url: str | None = None,
    backend: Backend | None = None,
    settings: LLMSettings | None = None,
) -> Extractor:
    """The extractor called ``name`` for ``target``.

    ``offline`` uses ``patterns`` (a YAML spec file) or, without it, the form spec derived from the
    schema. ``llm`` uses ``backend`` if given, else the endpoint ``llm_url``, else ``PIMENTO_LLM_URL``,
    else ``[llm] base_url``, else :data:`~pimento.ingest.extract.DEFAULT_LLM_URL` (local).

    Raises:
        UserError: an unknown extractor name, or a bad pattern spec.
    """
    if name not in EXTRACTOR_NAMES:
        raise UserError(f"unknown extractor {name!r}", hint=f"use one of: {', '.join(EXTRACTOR_NAMES)}")
    if name == "offline":
        if isinstance(patterns, PatternSpec):
            spec = patterns
        elif patterns is not None:
            spec = load_spec(patterns, target.catalog)
        else:
            spec = derive_spec(target.catalog)
        return OfflineExtractor(spec, target.catalog)
    if patterns is not None:
        raise UserError("--patterns is for the offline extractor; the llm extractor reads the schema only")
    if backend is None:
        import os

        from pimento.config import LLMSettings
        from pimento.llm import open_backend

        llm = settings if settings is not None else LLMSettings()
        url = llm_url or os.environ.get("PIMENTO_LLM_URL") or llm.base_url or DEFAULT_LLM_URL
        backend = open_backend(llm, url=url)
    return LLMExtractor(backend, target.catalog)


def ingest(
    corpus: str | Path,
    schema: str | Path,
    out: str | Path,
    *,
    extractor: str | Extractor = "offline",
    patterns: str | Path | PatternSpec | None = None,
    llm_url: str | None = None,
    backend: Backend | None = None,
    progress: ProgressCallback | None = None,
) -> IngestReport:
    """Extract rows from the documents of ``corpus`` into a new (or grown) DuckDB database ``out``.

    A re-run into the same ``out`` extracts only documents it has not recorded; a document in which
    the extractor found no row is not recorded (nor is one it failed on), so a re-run with a
    corrected spec reads it again. A document whose id it has seen but whose text changed is an
    error (nothing is written). The previous rows, and the rows it rejected, are resolved again
    together with the new mentions, so a row rejected for a missing referenced row is accepted once
    a later document states that row.

    ``extractor`` is a name of :data:`EXTRACTOR_NAMES` or an :class:`~pimento.ingest.extract.Extractor`
    built by the caller for this schema.

    Raises:
        DataSourceError: missing corpus folder or schema, unreadable files.
        CatalogError: the DDL does not run, or the pattern spec names unknown tables or columns.
        UserError: unknown extractor, changed documents, an ``out`` not written by ingest, or new
            documents none of which gave a row (nothing is written then, and none is recorded).
    """
    started = time.perf_counter()
    out_path = Path(out)
    target = load_target(schema)
    if isinstance(extractor, str):
        chosen = open_extractor(extractor, target, patterns=patterns, llm_url=llm_url, backend=backend)
    else:  # an extractor built by the caller (for its options: an LLM's max_tokens, its usage counter)
        chosen = extractor
    documents = load_corpus(corpus)
    if not documents:
        raise UserError(f"no documents under {corpus}", hint="documents are .txt/.md files or .jsonl lines with id and text")
    previous = read_previous(out_path, target)
    changed = [d.id for d in documents if d.id in previous.documents and previous.documents[d.id].sha256 != d.sha256]
    if changed:
        raise UserError(
            f"{len(changed)} document(s) changed since they were ingested into {out_path}: {_shown(changed)}",
            hint="an ingested document is immutable: give the new text a new id, or rebuild into a new --out",
        )
    new = [d for d in documents if d.id not in previous.documents]
    mentions: list[Mention] = []
    failed: list[tuple[str, str]] = []
    empty: list[str] = []
    ingested = list(previous.documents.values())
    for index, document in enumerate(new):
        if progress is not None and index == 0:
            progress("extract", 0, len(new))
        try:
            found = chosen.extract(document)
        except LLMError as exc:
            failed.append((document.id, exc.one_line()))
        else:
            mentions.extend(found)
            if found:
                ingested.append(IngestedDocument(document.id, document.sha256, len(document.text), chosen.name))
            else:  # not recorded: a re-run with a corrected spec (or a better model) reads it again
                empty.append(document.id)
        if progress is not None:
            progress("extract", index + 1, len(new))
    if new and not mentions:
        raise _nothing_extracted(len(new), failed, chosen.name, derived=isinstance(extractor, str) and patterns is None)
    match_on: Mapping[str, tuple[str, ...]] = chosen.spec.match_on() if isinstance(chosen, OfflineExtractor) else {}
    resolution = resolve(
        target.catalog, [*previous.row_mentions, *previous.rejected_mentions, *mentions], match_on=match_on
    )
    order = target.order

    def wrote(table: str) -> None:
        if progress is not None:
            progress("write", order.index(table), len(order))

    written = write_database(out_path, target, resolution, sorted(ingested, key=lambda d: d.doc_id), progress=wrote)
    if progress is not None:
        progress("write", len(order), len(order))
    rows = {name: len(written.rows.get(name, [])) for name in order}
    spans = sum(len(c.spans) for found in written.rows.values() for r in found for c in r.cells.values())
    report = IngestReport(
        out=out_path,
        extractor=chosen.name,
        documents=len(documents),
        new_documents=len(new) - len(failed) - len(empty),
        skipped_documents=len(documents) - len(new),
        failed_documents=failed,
        mentions=len(mentions),
        rows=rows,
        rows_added={name: rows[name] - previous.rows.get(name, 0) for name in order},
        rejected=written.rejected,
        provenance_spans=spans,
        unlocated_values=sum(1 for m in mentions for c in m.cells.values() if not c.spans),
        seconds=time.perf_counter() - started,
        empty_documents=empty,
    )
    if report.unlocated_values:
        report.notes.append(
            f"{report.unlocated_values} extracted value(s) were not found written in their document, so they have "
            "no span (an LLM that reworded, or invented, a value): check them in the rows"
        )
    if failed:
        report.notes.append(f"{len(failed)} document(s) failed and were not recorded: a re-run tries them again")
    if empty:
        report.notes.append(
            f"{len(empty)} document(s) stated no row the extractor could read ({_shown(empty)}) and were not "
            "recorded: a re-run (with a corrected pattern spec) reads them again"
        )
    return report


def _nothing_extracted(new: int, failed: list[tuple[str, str]], extractor: str, *, derived: bool) -> UserError:
    """The error of a run whose ``new`` documents gave no row at all (``failed`` of them could not be read).

    Nothing is written and no document is recorded, so the corrected re-run reads them all.
    """
    message = f"nothing extracted: the {extractor} extractor found no row in any of the {new} new document(s)"
    if failed:
        message += f" ({len(failed)} failed: {failed[0][1]})"
    message += "; nothing was written and no document is marked ingested"
    if extractor == "offline" and derived:
        hint = (
            "without --patterns only forms derived from the schema are read (a line naming the table, then "
            "`column: value` lines): pass the corpus's pattern spec with --patterns SPEC.yaml"
        )
    elif extractor == "offline":
        hint = "the pattern spec matches none of the documents: check its regexes (and `when`) against their text"
    else:
        hint = "check the endpoint and the model (--llm), or use the offline extractor with --patterns"
    return UserError(message, hint=hint)


def _shown(ids: list[str]) -> str:
    """The first three of ``ids``, and how many more."""
    return ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
