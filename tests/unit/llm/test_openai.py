"""The OpenAI-compatible backend against fake servers: retries, backoff, n fallback, errors."""

from __future__ import annotations

import json
import socket
import threading

import httpx
import pytest

from pimento.config import LLMSettings
from pimento.errors import LLMError
from pimento.llm import ChatRequest, Message, OpenAIBackend, open_backend

from .conformance import BackendConformance

REQUEST = ChatRequest((Message("user", "How many?"),), n=3, temperature=0.5, max_tokens=32)


def _ok(n: int, text: str = '{"sql": "SELECT COUNT(*) FROM Patient"}', prompt: int = 7, completion: int = 5) -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "model": "fake",
            "choices": [{"index": i, "message": {"role": "assistant", "content": f"{text}"}, "finish_reason": "stop"} for i in range(n)],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
        },
    )


class Recorder:
    """A fake OpenAI server as an httpx handler: replies from a script, records the payloads."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.payloads: list[dict] = []
        self.headers: list[httpx.Headers] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.payloads.append(json.loads(request.content))
        self.headers.append(request.headers)
        assert request.url.path.endswith("/v1/chat/completions")
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            return reply(self.payloads[-1])
        return reply


def _backend(handler, **kwargs) -> tuple[OpenAIBackend, list[float]]:
    sleeps: list[float] = []
    backend = OpenAIBackend(
        "http://fake.test/v1", model="m", transport=httpx.MockTransport(handler), sleep=sleeps.append, **kwargs
    )
    return backend, sleeps


class TestOpenAIConformance(BackendConformance):
    def make_backend(self):
        return _backend(Recorder(lambda payload: _ok(payload["n"])))[0]


def test_n_samples_in_one_call_when_the_server_honours_n():
    server = Recorder(lambda payload: _ok(payload["n"]))
    backend, _ = _backend(server)
    response = backend.complete(REQUEST)
    assert len(response.completions) == 3
    assert response.calls == 1 and len(server.payloads) == 1
    assert server.payloads[0]["n"] == 3 and server.payloads[0]["temperature"] == 0.5
    assert server.payloads[0]["model"] == "m" and server.payloads[0]["max_tokens"] == 32
    assert (response.prompt_tokens, response.completion_tokens) == (7, 5)
    assert backend.server_honours_n is True


def test_falls_back_to_sequential_calls_when_the_server_ignores_n():
    server = Recorder(lambda payload: _ok(1))  # llama.cpp: one choice whatever n says
    backend, _ = _backend(server)
    response = backend.complete(ChatRequest(REQUEST.messages, n=3, seed=40))
    assert len(response.completions) == 3
    assert response.calls == 3
    assert [p["n"] for p in server.payloads] == [3, 2, 1]
    assert [p["seed"] for p in server.payloads] == [40, 41, 42]  # distinct samples where seeds matter
    assert (response.prompt_tokens, response.completion_tokens) == (21, 15)
    assert backend.server_honours_n is False


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_retries_transient_http_errors_with_exponential_backoff(status):
    server = Recorder(httpx.Response(status, text="busy"), httpx.Response(status, text="busy"), _ok(3))
    backend, sleeps = _backend(server, max_retries=2, backoff_s=0.5)
    response = backend.complete(REQUEST)
    assert len(response.completions) == 3
    assert response.retries == 2 and len(server.payloads) == 3
    assert sleeps == [0.5, 1.0]


def test_backoff_is_capped_and_honours_retry_after():
    server = Recorder(
        httpx.Response(429, headers={"Retry-After": "3"}), httpx.Response(503), httpx.Response(503), _ok(3)
    )
    backend, sleeps = _backend(server, max_retries=3, backoff_s=1.0, max_backoff_s=3.5)
    backend.complete(REQUEST)
    assert sleeps == [3.0, 2.0, 3.5]


def test_gives_up_after_max_retries_with_a_clear_error():
    server = Recorder(httpx.Response(503, text="model loading"))
    backend, sleeps = _backend(server, max_retries=2)
    with pytest.raises(LLMError, match=r"HTTP 503 after 3 attempt\(s\): model loading") as info:
        backend.complete(REQUEST)
    assert "overloaded" in (info.value.hint or "")
    assert len(server.payloads) == 3 and len(sleeps) == 2


def test_retries_connection_errors_then_reports_unreachable():
    server = Recorder(httpx.ConnectError("connection refused"))
    backend, sleeps = _backend(server, max_retries=1)
    with pytest.raises(LLMError, match="cannot reach LLM endpoint http://fake.test/v1 after 2 attempt") as info:
        backend.complete(REQUEST)
    assert "PIMENTO_LLM_URL" in (info.value.hint or "")
    assert sleeps == [0.5]


def test_connection_error_then_success_counts_the_retry():
    server = Recorder(httpx.ConnectError("refused"), _ok(3))
    backend, _ = _backend(server)
    assert backend.complete(REQUEST).retries == 1


def test_read_timeout_is_an_llm_error_and_not_retried():
    server = Recorder(httpx.ReadTimeout("slow"))
    backend, sleeps = _backend(server, timeout_s=2.5)
    with pytest.raises(LLMError, match=r"timed out after 2.5 s \(ReadTimeout") as info:
        backend.complete(REQUEST)
    assert "timeout_s" in (info.value.hint or "")
    assert len(server.payloads) == 1 and sleeps == []


def test_client_errors_are_not_retried_and_carry_a_hint():
    server = Recorder(httpx.Response(401, json={"error": "bad key"}))
    backend, sleeps = _backend(server)
    with pytest.raises(LLMError, match="HTTP 401") as info:
        backend.complete(REQUEST)
    assert "PIMENTO_LLM_KEY" in (info.value.hint or "") and sleeps == []


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (httpx.Response(200, text="<html>hello</html>"), "not JSON"),
        (httpx.Response(200, json={"object": "list"}), "no 'choices' list"),
        (httpx.Response(200, json={"choices": []}), "no choices"),
        (httpx.Response(200, json=[1, 2]), "not an object"),
    ],
)
def test_garbage_bodies_are_llm_errors(reply, message):
    backend, _ = _backend(Recorder(reply))
    with pytest.raises(LLMError, match=message):
        backend.complete(REQUEST)


def test_null_content_becomes_an_empty_completion():
    reply = httpx.Response(200, json={"choices": [{"message": {"role": "assistant", "content": None}}]})
    backend, _ = _backend(Recorder(reply))
    response = backend.complete(ChatRequest(REQUEST.messages, n=1))
    assert response.completions[0].text == ""


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("json_schema", {"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}}}),
        ("json_object", {"type": "json_object", "schema": {"type": "object"}}),
        ("none", None),
    ],
)
def test_json_schema_is_sent_in_the_configured_mode(mode, expected):
    server = Recorder(lambda payload: _ok(payload["n"]))
    backend, _ = _backend(server, json_mode=mode)
    backend.complete(ChatRequest(REQUEST.messages, json_schema={"type": "object"}))
    assert server.payloads[0].get("response_format") == expected


def test_settings_and_environment(monkeypatch):
    server = Recorder(lambda payload: _ok(payload["n"]))
    settings = LLMSettings(base_url="http://file.test/v1", model="from-file", api_key_env="MY_KEY", timeout_s=3)
    env = {"PIMENTO_LLM_MODEL": "from-env", "MY_KEY": "sk-123"}
    backend = OpenAIBackend.from_settings(settings, environ=env, transport=httpx.MockTransport(server))
    assert backend.base_url == "http://file.test/v1" and backend.model == "from-env" and backend.timeout_s == 3
    backend.complete(ChatRequest(REQUEST.messages))
    assert server.headers[0]["authorization"] == "Bearer sk-123"
    env_url = OpenAIBackend.from_settings(settings, environ={"PIMENTO_LLM_URL": "http://env.test/v1"})
    assert env_url.base_url == "http://env.test/v1" and env_url.model == "from-file"


def test_open_backend_requires_an_endpoint():
    with pytest.raises(LLMError, match="no LLM endpoint is configured"):
        open_backend(LLMSettings(), environ={})
    assert isinstance(open_backend(url="http://x.test/v1", environ={}), OpenAIBackend)
    with pytest.raises(LLMError, match="no LLM backend understands"):
        open_backend(url="ftp://x", environ={})


# ------------------------------------------------------------------ real sockets on loopback
def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_loopback_endpoint():
    backend = OpenAIBackend(f"http://127.0.0.1:{_closed_port()}/v1", max_retries=1, backoff_s=0.01)
    with pytest.raises(LLMError, match="cannot reach LLM endpoint .* after 2 attempt"):
        backend.complete(REQUEST)


def test_server_that_never_answers_times_out():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
                accepted.append(conn)  # read nothing, answer nothing
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        port = listener.getsockname()[1]
        backend = OpenAIBackend(f"http://127.0.0.1:{port}/v1", timeout_s=0.3, max_retries=2)
        with pytest.raises(LLMError, match=r"timed out after 0.3 s \(ReadTimeout"):
            backend.complete(REQUEST)
        backend.close()
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()
        listener.close()


def test_fold_system_moves_system_messages_into_the_first_user_turn():
    server = Recorder(lambda payload: _ok(payload["n"]))
    backend, _ = _backend(server, fold_system=True)
    messages = (Message("system", "Rules."), Message("user", "Q1"), Message("assistant", "A1"), Message("user", "Q2"))
    backend.complete(ChatRequest(messages))
    assert server.payloads[0]["messages"] == [
        {"role": "user", "content": "Rules.\n\nQ1"},
        {"role": "assistant", "content": "A1"},
        {"role": "user", "content": "Q2"},
    ]
    from_env = OpenAIBackend.from_settings(LLMSettings(base_url="http://x.test/v1"), environ={"PIMENTO_LLM_FOLD_SYSTEM": "1"})
    assert from_env.fold_system
