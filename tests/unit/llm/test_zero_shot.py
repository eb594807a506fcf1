"""Zero-shot generation driven by the replay backend: valid samples parsed, invalid ones counted."""

from __future__ import annotations

import json

import pytest

from pimento.errors import LLMError
from pimento.llm import (
    ChatRequest,
    ChatResponse,
    Completion,
    ReplayBackend,
    SqlAnswer,
    Usage,
    generate_zero_shot,
    zero_shot_messages,
)
from pimento.llm.prompts import repair_messages
from pimento.sql.ir import CountQuery

QUESTION = "How many patients had a flu visit?"


def _request(catalog, k: int, **kwargs) -> ChatRequest:
    return ChatRequest(
        zero_shot_messages(catalog, QUESTION),
        n=k,
        temperature=kwargs.get("temperature", 0.7),
        max_tokens=256,
        json_schema=SqlAnswer.model_json_schema(),
        schema_name="SqlAnswer",
    )


def _repair_request(catalog, bad: str, error: str) -> ChatRequest:
    return ChatRequest(
        repair_messages(zero_shot_messages(catalog, QUESTION), bad, error),
        n=1,
        temperature=0.7,
        max_tokens=256,
        json_schema=SqlAnswer.model_json_schema(),
        schema_name="SqlAnswer",
    )


GOOD = "SELECT COUNT(DISTINCT p.patient_id) FROM Patient p JOIN Visit v ON p.patient_id = v.patient_id WHERE v.diagnosis = 'flu'"
SAMPLES = [
    json.dumps({"sql": GOOD}),                                                         # 0 valid
    "```json\n" + json.dumps({"sql": "SELECT COUNT(*) FROM Visit WHERE diagnosis = 'flu';"}) + "\n```",  # 1 valid
    json.dumps({"sql": "SELECT ward, COUNT(*) FROM Visit GROUP BY ward"}),            # 2 group by
    json.dumps({"sql": "SELECT COUNT(*) FROM Doctor"}),                               # 3 unknown table
    json.dumps({"sql": "SELEC COUNT(*) FROM"}),                                        # 4 syntax
    "I think the answer is 42.",                                                       # 5 not JSON -> repaired
    "",                                                                                # 6 empty -> repair fails
    json.dumps({"query": "SELECT 1"}),                                                 # 7 wrong schema -> repair fails
]


@pytest.fixture()
def replay(catalog) -> ReplayBackend:
    backend = ReplayBackend()
    backend.add(
        _request(catalog, len(SAMPLES)),
        ChatResponse(tuple(Completion(s, "stop") for s in SAMPLES), prompt_tokens=300, completion_tokens=200),
    )
    fixes = {
        5: (SAMPLES[5], "the answer contains no JSON object", json.dumps({"sql": "SELECT COUNT(*) FROM Patient"})),
        6: (SAMPLES[6], "the answer is empty", "  "),
        7: (SAMPLES[7], "the JSON does not match the schema: sql: Field required", '{"query": "again"}'),
    }
    for bad, error, fixed in fixes.values():
        backend.add(_repair_request(catalog, bad, error), ChatResponse((Completion(fixed),), prompt_tokens=350, completion_tokens=10))
    return backend


def test_replay_drives_zero_shot_and_counts_every_dropped_sample(catalog, replay):
    usage = Usage()
    result = generate_zero_shot(replay, catalog, QUESTION, k=len(SAMPLES), usage=usage)

    assert [c.index for c in result.candidates] == [0, 1, 5]
    assert all(isinstance(c.query, CountQuery) for c in result.candidates)
    assert result.candidates[1].sql == "SELECT COUNT(*) FROM Visit WHERE diagnosis = 'flu'"
    assert result.candidates[2].repaired and not result.candidates[0].repaired
    assert {c.query.relations[0].table for c in result.candidates[1:]} == {"Visit", "Patient"}

    assert dict(result.dropped) == {
        "unsupported:group_by": 1,
        "catalog": 1,
        "sql_syntax": 1,
        "empty": 1,
        "schema": 1,
    }
    assert len(result.candidates) + len(result.rejected) == len(SAMPLES)
    assert {r.index: r.reason for r in result.rejected} == {
        2: "unsupported:group_by", 3: "catalog", 4: "sql_syntax", 6: "empty", 7: "schema"
    }
    # Accounting: 1 request for the 8 samples + 3 repair rounds.
    assert usage.to_dict() == {
        "calls": 4, "requests": 4, "prompt_tokens": 300 + 3 * 350, "completion_tokens": 200 + 30,
        "total_tokens": 300 + 3 * 350 + 230, "retries": 0, "repairs": 3,
    }
    assert result.usage is usage
    summary = result.to_dict()
    assert summary["valid"] == 3 and summary["invalid"] == 5 and summary["k"] == 8


def test_distinct_queries_drop_repeats(catalog):
    backend = ReplayBackend()
    same = json.dumps({"sql": "SELECT COUNT(*) FROM Patient"})
    spaced = json.dumps({"sql": "select count(*)  from patient"})
    backend.add(_request(catalog, 2), ChatResponse((Completion(same), Completion(spaced))))
    result = generate_zero_shot(backend, catalog, QUESTION, k=2)
    assert len(result.candidates) == 2 and len(result.distinct_queries) == 1


def test_unrecorded_prompt_is_an_llm_error_not_a_silent_empty_result(catalog):
    with pytest.raises(LLMError, match="no recorded LLM response"):
        generate_zero_shot(ReplayBackend(), catalog, "Another question?", k=2)
