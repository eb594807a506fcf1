"""The public API of pimento.ingest is what __all__ says, and every name in it exists."""

from __future__ import annotations

import pimento.ingest as ingest


def test_all_is_pinned_and_importable() -> None:
    assert sorted(ingest.__all__) == sorted([
        "DEFAULT_LLM_URL", "DOCUMENTS_TABLE", "EXTRACTOR_NAMES", "PROVENANCE_TABLE", "REJECTED_TABLE", "Cell",
        "Document", "Extractor", "IngestReport", "LLMExtractor", "Lookup", "Mention", "OfflineExtractor",
        "PatternSpec", "Rejected", "Resolution", "Row", "Span", "Target", "derive_spec", "ingest", "load_corpus",
        "load_spec", "load_target", "locate", "open_extractor", "parse_spec", "resolve",
    ])
    assert all(hasattr(ingest, name) for name in ingest.__all__)


def test_both_extractors_satisfy_the_protocol() -> None:
    from pimento.ingest import Extractor, LLMExtractor, OfflineExtractor, derive_spec
    from pimento.schema import Catalog, Column, Table

    catalog = Catalog((Table("T", (Column("a", "integer"),), ("a",)),))
    assert isinstance(OfflineExtractor(derive_spec(catalog), catalog), Extractor)
    assert isinstance(LLMExtractor(object(), catalog), Extractor)
