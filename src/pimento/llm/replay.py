"""Recorded LLM exchanges: a replay backend for tests and a recording wrapper that writes fixtures.

A fixture is one JSON file ``<key[:32]>.json`` in a directory, where ``key`` is
:func:`~pimento.llm.base.request_key` of the request::

    {"key": "<sha256>", "request": {...ChatRequest.to_dict()...}, "response": {...ChatResponse.to_dict()...}}

Record once against a real server (``PIMENTO_LLM_RECORD=DIR``, or wrap a backend in
:class:`RecordingBackend`), then replay offline with ``PIMENTO_LLM_URL=replay:DIR``.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from pimento.errors import LLMError
from pimento.llm.base import Backend, ChatRequest, ChatResponse, request_key

__all__ = ["RecordingBackend", "ReplayBackend", "fixture_path"]


def fixture_path(directory: str | Path, request: ChatRequest) -> Path:
    """Where the fixture of ``request`` lives in ``directory``."""
    return Path(directory) / f"{request_key(request)[:32]}.json"


class ReplayBackend:
    """Answers each request with the response recorded for it; an unknown request is an LLMError.

    ``requests`` lists every request received, in order (tests read the prompts from it).
    """

    name = "replay"

    def __init__(self, directory: str | Path | None = None, *, responses: dict[str, ChatResponse] | None = None):
        self.directory = Path(directory) if directory is not None else None
        if self.directory is not None and not self.directory.is_dir():
            raise LLMError(f"replay fixture directory not found: {self.directory}")
        self._memory: dict[str, ChatResponse] = dict(responses or {})
        self.requests: list[ChatRequest] = []
        self._lock = threading.Lock()

    def add(self, request: ChatRequest, response: ChatResponse) -> None:
        """Record an answer in memory (for tests that build fixtures in code)."""
        self._memory[request_key(request)] = response

    def complete(self, request: ChatRequest) -> ChatResponse:
        with self._lock:
            self.requests.append(request)
        key = request_key(request)
        if key in self._memory:
            return self._check(self._memory[key], request, key)
        if self.directory is not None:
            path = fixture_path(self.directory, request)
            if path.is_file():
                try:
                    data = json.loads(path.read_text(encoding="utf-8"))
                except (OSError, json.JSONDecodeError) as exc:
                    raise LLMError(f"replay fixture {path} is unreadable: {exc}") from exc
                if data.get("key") != key:
                    raise LLMError(f"replay fixture {path} was recorded for another request (hash prefix collision)")
                return self._check(ChatResponse.from_dict(data.get("response", {})), request, key)
        where = f" in {self.directory}" if self.directory is not None else ""
        raise LLMError(
            f"no recorded LLM response for this request (key {key[:32]}){where}",
            hint="the prompt changed since the fixtures were recorded: re-record them with PIMENTO_LLM_RECORD=DIR "
            "against a real server",
        )

    @staticmethod
    def _check(response: ChatResponse, request: ChatRequest, key: str) -> ChatResponse:
        if len(response.completions) != request.n:
            raise LLMError(
                f"recorded response {key[:32]} has {len(response.completions)} completions, the request asks for {request.n}"
            )
        return response


class RecordingBackend:
    """Wraps a backend and writes every exchange as a replay fixture in ``directory``.

    ``requests`` lists every request passed through, in order.
    """

    def __init__(self, inner: Backend, directory: str | Path):
        self.inner = inner
        self.name = getattr(inner, "name", "backend")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.requests: list[ChatRequest] = []
        self._lock = threading.Lock()

    def complete(self, request: ChatRequest) -> ChatResponse:
        with self._lock:
            self.requests.append(request)
        response = self.inner.complete(request)
        record: dict[str, Any] = {
            "key": request_key(request),
            "request": request.to_dict(),
            "response": response.to_dict(),
        }
        path = fixture_path(self.directory, request)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(record, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)
        return response

    def close(self) -> None:
        """Close the wrapped backend, if it can be closed."""
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()
