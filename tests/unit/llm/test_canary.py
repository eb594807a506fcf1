"""No private data in prompts: canary values planted in the private database never reach an LLM."""

from __future__ import annotations

import json
import shutil

import duckdb
import pytest

from pimento.engines import open_engine
from pimento.errors import DataSourceError, InternalError
from pimento.llm import (
    SYNTH_META_TABLE,
    ChatRequest,
    ChatResponse,
    Completion,
    RecordingBackend,
    SyntheticValues,
    generate_zero_shot,
)
from pimento.llm.prompts import PROMPT_BUILDERS, ExpansionAnswer
from pimento.llm.structured import complete_structured

from .conftest import CANARIES, SYNTH_MARKER

QUESTION = "How many patients from CA had a flu visit?"
POLICY = "Nurses may see the ward of a visit for treatment. Diagnoses are never disclosed to marketing."


class Garbage:
    """A weak model: answers are never valid JSON, so every sample also goes through a repair round."""

    name = "garbage"

    def complete(self, request: ChatRequest) -> ChatResponse:
        return ChatResponse(tuple(Completion("SELECT COUNT(*) FROM Patient") for _ in range(request.n)))


def _everything_sent(recorder: RecordingBackend) -> str:
    sent = [json.dumps(r.to_dict(), ensure_ascii=False) for r in recorder.requests]
    files = [p.read_text(encoding="utf-8") for p in sorted(recorder.directory.glob("*.json"))]
    return "\n".join(sent + files)


def test_synthetic_values_refuse_the_private_database(private_engine):
    with pytest.raises(DataSourceError, match="not a synthetic database") as info:
        SyntheticValues.from_engine(private_engine)
    assert "pimento synth" in (info.value.hint or "")


def test_synthetic_values_cannot_be_built_directly():
    with pytest.raises(InternalError, match="cannot be built directly"):
        SyntheticValues({"Patient": {"name": (CANARIES[0],)}}, "forged")


def test_prompt_values_must_come_from_synthetic_values(catalog):
    from pimento.llm import zero_shot_messages

    with pytest.raises(InternalError, match="SyntheticValues"):
        zero_shot_messages(catalog, QUESTION, values={"Patient": {"name": [CANARIES[0]]}})  # type: ignore[arg-type]


def test_no_canary_in_any_prompt(tmp_path, catalog, synthetic_engine):
    values = SyntheticValues.from_engine(synthetic_engine)
    recorder = RecordingBackend(Garbage(), tmp_path / "recorded")
    built = {}
    for builder in PROMPT_BUILDERS:
        messages = builder.build(catalog, QUESTION, values, POLICY)
        built[builder.name] = messages
        recorder.complete(ChatRequest(messages, n=2))
    # The full flows, repair rounds included.
    zero = generate_zero_shot(recorder, catalog, QUESTION, k=3, values=values, policy=POLICY)
    assert dict(zero.dropped) == {"not_json": 3} and zero.usage.repairs == 3
    expansion = complete_structured(
        recorder,
        PROMPT_BUILDERS[2].build(catalog, QUESTION, values, POLICY),
        ExpansionAnswer,
        n=2,
    )
    assert not any(s.ok for s in expansion)

    sent = _everything_sent(recorder)
    assert len(recorder.requests) == len(PROMPT_BUILDERS) + 1 + 3 + 1 + 2
    for canary in CANARIES:
        assert canary not in sent
    # Positive controls: what may be there is there, so the check above has something to miss.
    assert set(built) == {"zero_shot", "sensitivity", "expansion_root", "expansion", "repair", "zero_shot_aggregate"}
    for name, messages in built.items():
        text = "\n".join(m.content for m in messages)
        assert SYNTH_MARKER in text, name
        assert "Patient" in text and "diagnosis" in text and QUESTION in text and POLICY in text, name


def test_the_canary_check_would_catch_a_leak(tmp_path, private_db, catalog):
    """Mark a copy of the private database as synthetic (a misuse): canaries then do reach prompts."""
    forged = tmp_path / "forged.duckdb"
    shutil.copy(private_db, forged)
    con = duckdb.connect(str(forged))
    con.execute(f"CREATE TABLE {SYNTH_META_TABLE} (key VARCHAR)")
    con.close()
    engine = open_engine(str(forged))
    try:
        values = SyntheticValues.from_engine(engine)
    finally:
        engine.close()
    text = "\n".join(m.content for m in PROMPT_BUILDERS[0].build(catalog, QUESTION, values, POLICY))
    assert any(canary in text for canary in CANARIES)


def test_catalog_carries_no_values(catalog):
    assert not any(canary in json.dumps(catalog.to_dict()) for canary in CANARIES)
