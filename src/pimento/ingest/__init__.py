"""From text to database: ``pimento ingest`` turns a corpus of documents into a checked relational
database with cell-level provenance (see docs/ingest.md).

Documents (:mod:`~pimento.ingest.documents`) go through an extractor
(:mod:`~pimento.ingest.extract`: offline patterns of :mod:`~pimento.ingest.patterns`, or an LLM)
into mentions (:mod:`~pimento.ingest.model`); resolution (:mod:`~pimento.ingest.resolve`) merges
them into rows and checks every key and foreign key; :mod:`~pimento.ingest.store` writes the target
tables, the provenance and the rejected rows.
"""

from __future__ import annotations

from pimento.ingest.api import EXTRACTOR_NAMES, IngestReport, ingest, open_extractor
from pimento.ingest.documents import Document, load_corpus
from pimento.ingest.extract import DEFAULT_LLM_URL, Extractor, LLMExtractor, OfflineExtractor, locate
from pimento.ingest.model import Cell, Lookup, Mention, Span
from pimento.ingest.patterns import PatternSpec, derive_spec, load_spec, parse_spec
from pimento.ingest.resolve import Rejected, Resolution, Row, resolve
from pimento.ingest.store import DOCUMENTS_TABLE, PROVENANCE_TABLE, REJECTED_TABLE
from pimento.ingest.target import Target, load_target

__all__ = [
    "DEFAULT_LLM_URL",
    "DOCUMENTS_TABLE",
    "EXTRACTOR_NAMES",
    "PROVENANCE_TABLE",
    "REJECTED_TABLE",
    "Cell",
    "Document",
    "Extractor",
    "IngestReport",
    "LLMExtractor",
    "Lookup",
    "Mention",
    "OfflineExtractor",
    "PatternSpec",
    "Rejected",
    "Resolution",
    "Row",
    "Span",
    "Target",
    "derive_spec",
    "ingest",
    "load_corpus",
    "load_spec",
    "load_target",
    "locate",
    "open_extractor",
    "parse_spec",
    "resolve",
]
