"""LLM backends: the Backend protocol, an OpenAI-compatible HTTP backend, replay fixtures,
prompts that only ever see the schema and synthetic values, structured JSON answers with
one repair round, per-question call and token accounting, and zero-shot SQL generation.

See docs/llm.md.
"""

from __future__ import annotations

from pimento.llm.base import (
    Backend,
    ChatRequest,
    ChatResponse,
    Completion,
    Message,
    open_backend,
    register_backend,
    registered_backends,
    request_key,
)
from pimento.llm.openai import OpenAIBackend
from pimento.llm.prompts import (
    SYNTH_META_TABLE,
    ExpansionAnswer,
    SqlAnswer,
    SyntheticValues,
    expansion_messages,
    render_schema,
    zero_shot_messages,
)
from pimento.llm.replay import RecordingBackend, ReplayBackend
from pimento.llm.structured import StructuredSample, complete_structured, complete_structured_one
from pimento.llm.usage import Usage
from pimento.llm.zero_shot import Candidate, Rejected, ZeroShotResult, generate_zero_shot

__all__ = [
    "SYNTH_META_TABLE",
    "Backend",
    "Candidate",
    "ChatRequest",
    "ChatResponse",
    "Completion",
    "ExpansionAnswer",
    "Message",
    "OpenAIBackend",
    "RecordingBackend",
    "Rejected",
    "ReplayBackend",
    "SqlAnswer",
    "StructuredSample",
    "SyntheticValues",
    "Usage",
    "ZeroShotResult",
    "complete_structured",
    "complete_structured_one",
    "expansion_messages",
    "generate_zero_shot",
    "open_backend",
    "register_backend",
    "registered_backends",
    "render_schema",
    "request_key",
    "zero_shot_messages",
]
