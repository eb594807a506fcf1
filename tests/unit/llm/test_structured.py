"""Structured JSON answers: tolerant parsing, one repair round, then a clear LLMError."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from pimento.errors import LLMError
from pimento.llm import ChatRequest, ChatResponse, Completion, Message, Usage
from pimento.llm.structured import complete_structured, complete_structured_one, parse_structured


class Answer(BaseModel):
    sql: str


MESSAGES = (Message("user", "How many patients?"),)


class Scripted:
    """A backend answering each request with the next scripted texts; keeps the requests."""

    name = "scripted"

    def __init__(self, *answers: list[str]):
        self.answers = list(answers)
        self.requests: list[ChatRequest] = []

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        texts = self.answers.pop(0)
        assert len(texts) == request.n
        return ChatResponse(tuple(Completion(t) for t in texts), prompt_tokens=10, completion_tokens=len(texts))


@pytest.mark.parametrize(
    "text",
    [
        '{"sql": "SELECT 1"}',
        '```json\n{"sql": "SELECT 1"}\n```',
        'Here you go: {"sql": "SELECT 1"} Hope it helps!',
        '{"sql": "SELECT 1", "explanation": "extra keys are ignored"}',
    ],
)
def test_parse_tolerates_fences_and_chatter(text):
    assert parse_structured(text, Answer).sql == "SELECT 1"


def test_parse_tolerates_raw_newlines_inside_strings():
    # Seen from Gemma 3 270M under llama.cpp's JSON grammar: a literal newline inside the SQL string.
    assert parse_structured('{ "sql": "SELECT COUNT(*)\n FROM t" }', Answer).sql == "SELECT COUNT(*)\n FROM t"


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "empty"), ("SELECT 1", "no JSON object"), ('{"sql": ', "not valid JSON"),
     ('{"sql": 1,}', "not valid JSON"), ('{"query": "x"}', "sql: Field required")],
)
def test_parse_says_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message):
        parse_structured(text, Answer)


def test_valid_samples_need_no_repair():
    backend = Scripted(['{"sql": "a"}', '{"sql": "b"}'])
    usage = Usage()
    samples = complete_structured(backend, MESSAGES, Answer, n=2, usage=usage)
    assert [s.value.sql for s in samples] == ["a", "b"]
    assert usage.requests == 1 and usage.repairs == 0
    assert backend.requests[0].json_schema["required"] == ["sql"]  # the pydantic schema is sent


def test_invalid_sample_is_repaired_with_the_error_sent_back():
    backend = Scripted(['{"sql": "a"}', "SELECT COUNT(*) FROM t"], ['{"sql": "SELECT COUNT(*) FROM t"}'])
    usage = Usage()
    samples = complete_structured(backend, MESSAGES, Answer, n=2, usage=usage, temperature=0.3)
    assert [s.ok for s in samples] == [True, True]
    assert samples[1].repaired and not samples[0].repaired
    assert samples[1].value.sql == "SELECT COUNT(*) FROM t"
    repair = backend.requests[1]
    assert repair.n == 1 and repair.temperature == 0.3
    assert [m.role for m in repair.messages] == ["user", "assistant", "user"]
    assert repair.messages[1].content == "SELECT COUNT(*) FROM t"
    assert "no JSON object" in repair.messages[2].content
    assert usage.requests == 2 and usage.repairs == 1 and usage.prompt_tokens == 20


def test_only_one_repair_round():
    backend = Scripted(["nope"], ["still nope"])
    samples = complete_structured(backend, MESSAGES, Answer, n=1)
    assert not samples[0].ok and samples[0].repaired and samples[0].error_kind == "not_json"
    assert len(backend.requests) == 2


def test_repair_can_be_turned_off():
    backend = Scripted(["nope"])
    samples = complete_structured(backend, MESSAGES, Answer, n=1, repair=False)
    assert not samples[0].ok and not samples[0].repaired and len(backend.requests) == 1


def test_single_answer_raises_a_clear_llm_error_after_the_failed_repair():
    backend = Scripted(['{"query": 1}'], ['{"query": 2}'])
    with pytest.raises(LLMError, match=r"unusable after one repair round: .*sql: Field required.*query") as info:
        complete_structured_one(backend, MESSAGES, Answer)
    assert "larger model" in (info.value.hint or "")


def test_single_answer_repaired():
    backend = Scripted(["garbage"], ['{"sql": "ok"}'])
    usage = Usage()
    assert complete_structured_one(backend, MESSAGES, Answer, usage=usage).sql == "ok"
    assert usage.repairs == 1 and usage.calls == 2
