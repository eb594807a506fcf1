"""Replay fixtures, the recording wrapper, and the backend registry."""

from __future__ import annotations

import json

import pytest

from pimento.config import LLMSettings
from pimento.errors import LLMError
from pimento.llm import (
    ChatRequest,
    ChatResponse,
    Completion,
    Message,
    RecordingBackend,
    ReplayBackend,
    open_backend,
    register_backend,
    registered_backends,
    request_key,
)
from pimento.llm.base import _BACKENDS

from .conformance import CONFORMANCE_REQUEST, BackendConformance

REQUEST = ChatRequest((Message("user", "How many?"),), n=2, temperature=0.0, json_schema={"type": "object"})


class Echo:
    name = "echo"

    def __init__(self):
        self.calls = 0

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.calls += 1
        texts = tuple(Completion(f"answer {i} to {request.messages[-1].content}", "stop") for i in range(request.n))
        return ChatResponse(texts, prompt_tokens=11, completion_tokens=4 * request.n, model="echo-1")


class TestReplayConformance(BackendConformance):
    def make_backend(self):
        replay = ReplayBackend()
        for n in (1, 3):
            req = ChatRequest(CONFORMANCE_REQUEST.messages, n=n, temperature=0.7, max_tokens=64,
                              json_schema=CONFORMANCE_REQUEST.json_schema)
            replay.add(req, Echo().complete(req))
        return replay


def test_request_key_is_canonical_and_sensitive():
    same = ChatRequest((Message("user", "How many?"),), n=2, temperature=0, json_schema={"type": "object"})
    assert request_key(same) == request_key(REQUEST)
    for other in (
        ChatRequest((Message("user", "How many!"),), n=2, temperature=0.0, json_schema={"type": "object"}),
        ChatRequest(REQUEST.messages, n=3, temperature=0.0, json_schema={"type": "object"}),
        ChatRequest(REQUEST.messages, n=2, temperature=0.1, json_schema={"type": "object"}),
        ChatRequest(REQUEST.messages, n=2, temperature=0.0),
    ):
        assert request_key(other) != request_key(REQUEST)


def test_record_then_replay_round_trip(tmp_path):
    inner = Echo()
    recorder = RecordingBackend(inner, tmp_path / "fx")
    recorded = recorder.complete(REQUEST)
    files = list((tmp_path / "fx").glob("*.json"))
    assert len(files) == 1
    data = json.loads(files[0].read_text())
    assert data["key"] == request_key(REQUEST) and data["request"]["messages"][0]["content"] == "How many?"

    replay = open_backend(url=f"replay:{tmp_path / 'fx'}", environ={})
    assert isinstance(replay, ReplayBackend)
    again = replay.complete(REQUEST)
    assert again == recorded and inner.calls == 1
    assert replay.requests == [REQUEST]


def test_unknown_request_is_a_clear_error(tmp_path):
    (tmp_path / "fx").mkdir()
    replay = ReplayBackend(tmp_path / "fx")
    with pytest.raises(LLMError, match="no recorded LLM response") as info:
        replay.complete(REQUEST)
    assert "PIMENTO_LLM_RECORD" in (info.value.hint or "")


def test_missing_fixture_directory_is_a_clear_error(tmp_path):
    with pytest.raises(LLMError, match="fixture directory not found"):
        ReplayBackend(tmp_path / "absent")


def test_fixture_with_wrong_sample_count_is_refused():
    replay = ReplayBackend()
    replay.add(REQUEST, ChatResponse((Completion("only one"),)))
    with pytest.raises(LLMError, match="has 1 completions, the request asks for 2"):
        replay.complete(REQUEST)


def test_record_environment_variable_wraps_any_backend(tmp_path):
    backend = open_backend(
        LLMSettings(base_url="http://127.0.0.1:9/v1"), environ={"PIMENTO_LLM_RECORD": str(tmp_path / "rec")}
    )
    assert isinstance(backend, RecordingBackend) and backend.inner.name == "openai"


def test_third_party_backend_registers_like_the_built_ins():
    assert {"openai", "replay"} <= set(registered_backends())
    try:
        register_backend("echo", lambda url: url.startswith("echo:"), lambda url, settings, env: Echo())
        backend = open_backend(url="echo:anything", environ={})
        assert backend.complete(REQUEST).completions[0].text == "answer 0 to How many?"
        forced = open_backend(url="http://x.test/v1", backend="echo", environ={})
        assert isinstance(forced, Echo)
        with pytest.raises(LLMError, match="unknown LLM backend 'nope'"):
            open_backend(url="echo:x", backend="nope", environ={})
    finally:
        _BACKENDS.unregister("echo")


@pytest.mark.parametrize(
    "kwargs",
    [{"n": 0}, {"temperature": 2.5}, {"max_tokens": 0}, {"messages": ()}],
)
def test_chat_request_refuses_nonsense(kwargs):
    from pimento.errors import InternalError

    args = {"messages": (Message("user", "x"),), **kwargs}
    with pytest.raises(InternalError):
        ChatRequest(**args)


def test_message_refuses_unknown_roles():
    from pimento.errors import InternalError

    with pytest.raises(InternalError, match="unknown chat role"):
        Message("tool", "x")
