"""The recorded run of the LLM extractor on Gemma 3 270M (tests/fixtures/llm/ingest_gemma): replaying
the exchanges gives back the figures reported in docs/benchmarks.md (summary.json of the run)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.ingest_quality import measure_llm
from pimento.llm import ReplayBackend

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "llm" / "ingest_gemma"


def test_replaying_the_recorded_gemma_run_recomputes_its_figures(tmp_path) -> None:
    recorded = json.loads((FIXTURES / "summary.json").read_text(encoding="utf-8"))
    backend = ReplayBackend(FIXTURES)
    again = measure_llm(
        backend, patients=recorded["patients"], seed=recorded["seed"], per_kind=recorded["per_kind"],
        max_tokens=recorded["max_tokens"], folder=tmp_path,
    )
    assert again["sample"] == recorded["sample"]
    assert [f["doc_id"] for f in again["failed_documents"]] == [f["doc_id"] for f in recorded["failed_documents"]]
    assert again["overall"] == recorded["overall"]
    assert again["tables"] == recorded["tables"]
    assert (again["mentions"], again["unlocated_values"]) == (recorded["mentions"], recorded["unlocated_values"])
    # every recorded exchange was asked for again: the figures come from the recording, not from a default
    asked = {r.messages[-1].content for r in backend.requests}
    assert len(backend.requests) >= recorded["documents"] - len(recorded["failed_documents"])
    assert all("Document:" in text for text in asked)
