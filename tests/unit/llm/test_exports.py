"""The public API of pimento.llm is pinned: a change here is a deliberate API change."""

from __future__ import annotations

import pimento.llm


def test_public_api_is_pinned():
    assert sorted(pimento.llm.__all__) == sorted([
        "SYNTH_META_TABLE", "Backend", "Candidate", "ChatRequest", "ChatResponse", "Completion",
        "ExpansionAnswer", "Message", "OpenAIBackend", "RecordingBackend", "Rejected", "ReplayBackend",
        "SqlAnswer", "StructuredSample", "SyntheticValues", "Usage", "ZeroShotResult", "complete_structured",
        "complete_structured_one", "expansion_messages", "generate_zero_shot", "open_backend",
        "register_backend", "registered_backends", "render_schema", "request_key", "zero_shot_messages",
    ])
    for name in pimento.llm.__all__:
        assert hasattr(pimento.llm, name), name
