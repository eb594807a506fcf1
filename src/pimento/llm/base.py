"""The Backend protocol, the request/response values it speaks, and the backend registry.

A backend turns one :class:`ChatRequest` (messages, ``n`` samples, temperature, token
limit, optional JSON schema) into one :class:`ChatResponse` (``n`` completions and what they
cost). Built-in backends (OpenAI-compatible HTTP, replay) register through
:func:`register_backend`, the same extension point a third-party backend uses.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pimento.config import LLMSettings
from pimento.errors import InternalError, LLMError
from pimento.registry import Registry

__all__ = [
    "Backend",
    "ChatRequest",
    "ChatResponse",
    "Completion",
    "Message",
    "open_backend",
    "register_backend",
    "registered_backends",
    "request_key",
]

_ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class Message:
    """One chat message: ``role`` is system, user or assistant."""

    role: str
    content: str

    def __post_init__(self) -> None:
        if self.role not in _ROLES:
            raise InternalError(f"unknown chat role {self.role!r}; use one of {_ROLES}")
        if not isinstance(self.content, str):
            raise InternalError("message content must be text")

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class ChatRequest:
    """What is asked of a backend. Values only, so that a request can be hashed and replayed.

    ``json_schema`` asks for structured output matching that JSON schema (a backend that
    cannot enforce it still receives it and may ignore it: callers validate every answer).
    ``seed`` is passed to servers that honour it (sequential samples use ``seed + i``).
    """

    messages: tuple[Message, ...]
    n: int = 1
    temperature: float = 0.7
    max_tokens: int = 512
    json_schema: Mapping[str, Any] | None = None
    schema_name: str = "answer"
    seed: int | None = None

    def __post_init__(self) -> None:
        if not self.messages:
            raise InternalError("a chat request needs at least one message")
        object.__setattr__(self, "messages", tuple(self.messages))
        if not isinstance(self.n, int) or self.n < 1:
            raise InternalError(f"n must be a positive integer, got {self.n!r}")
        if not (0.0 <= float(self.temperature) <= 2.0):
            raise InternalError(f"temperature must lie in [0, 2], got {self.temperature!r}")
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise InternalError(f"max_tokens must be a positive integer, got {self.max_tokens!r}")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready, canonical description (the replay key is the hash of it)."""
        return {
            "messages": [m.to_dict() for m in self.messages],
            "n": self.n,
            "temperature": float(self.temperature),
            "max_tokens": self.max_tokens,
            "json_schema": _plain(self.json_schema),
            "schema_name": self.schema_name,
            "seed": self.seed,
        }

    @property
    def text(self) -> str:
        """Every message's content, concatenated (what a reader of the prompt would see)."""
        return "\n".join(m.content for m in self.messages)


@dataclass(frozen=True)
class Completion:
    """One sampled answer: its text and why generation stopped (``stop``, ``length``, ...)."""

    text: str
    finish_reason: str | None = None


@dataclass(frozen=True)
class ChatResponse:
    """The completions of one request and what they cost.

    ``calls`` counts HTTP requests that reached the model (more than one when the server
    ignored ``n`` and samples were drawn one by one); ``retries`` counts failed attempts
    that were retried.
    """

    completions: tuple[Completion, ...]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 1
    retries: int = 0
    model: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "completions": [{"text": c.text, "finish_reason": c.finish_reason} for c in self.completions],
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "calls": self.calls,
            "retries": self.retries,
            "model": self.model,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChatResponse:
        try:
            return cls(
                completions=tuple(
                    Completion(str(c["text"]), c.get("finish_reason")) for c in data["completions"]
                ),
                prompt_tokens=int(data.get("prompt_tokens", 0)),
                completion_tokens=int(data.get("completion_tokens", 0)),
                calls=int(data.get("calls", 1)),
                retries=int(data.get("retries", 0)),
                model=data.get("model"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise LLMError(f"recorded response is malformed: {exc!r}") from exc


@runtime_checkable
class Backend(Protocol):
    """Anything that answers chat requests."""

    #: Registry name ("openai", "replay", ...), for messages and accounting.
    name: str

    def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer ``request`` with exactly ``request.n`` completions, or raise :class:`LLMError`."""
        ...


def request_key(request: ChatRequest) -> str:
    """A canonical hash of a request: equal requests, equal keys (SHA-256 hex).

    >>> r = ChatRequest((Message("user", "hi"),), n=2, temperature=0.0)
    >>> request_key(r) == request_key(ChatRequest((Message("user", "hi"),), n=2, temperature=0))
    True
    """
    text = json.dumps(request.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _plain(value: Any) -> Any:
    """Mappings and sequences as plain dicts and lists (so a schema hashes the same however built)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    raise InternalError(f"value of type {type(value).__name__} cannot go into a chat request")


# ---------------------------------------------------------------------------------- registry
#: ``factory(url, settings, environ) -> Backend``
BackendFactory = Callable[[str, LLMSettings, Mapping[str, str]], Backend]


_BACKENDS: Registry[BackendFactory] = Registry(lambda: _load_builtins())


def register_backend(name: str, matches: Callable[[str], bool], factory: BackendFactory) -> None:
    """Make :func:`open_backend` use ``factory(url, settings, environ)`` for URLs ``matches`` accepts.

    Later registrations are tried first, so a plug-in can claim URLs a built-in would take
    (:class:`pimento.registry.Registry`).
    """
    _BACKENDS.register(name, factory, matches=matches)


def registered_backends() -> tuple[str, ...]:
    return _BACKENDS.names()


def open_backend(
    settings: LLMSettings | None = None,
    *,
    url: str | None = None,
    backend: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Backend:
    """The backend for an endpoint URL: ``url``, else env ``PIMENTO_LLM_URL``, else ``settings.base_url``.

    ``http(s)://`` URLs go to the OpenAI-compatible backend, ``replay:DIR`` to the replay
    backend. ``backend`` forces a registered backend by name. If env ``PIMENTO_LLM_RECORD``
    names a directory, every exchange is also recorded there as a replay fixture.
    """
    settings = settings or LLMSettings()
    environ = os.environ if environ is None else environ
    target = url or environ.get("PIMENTO_LLM_URL") or settings.base_url
    if not target:
        raise LLMError(
            "no LLM endpoint is configured",
            hint="set PIMENTO_LLM_URL (e.g. http://127.0.0.1:8080/v1) or [llm] base_url in pimento.toml",
        )
    if backend is not None:
        chosen = _BACKENDS.get(backend)
        if chosen is None:
            raise LLMError(f"unknown LLM backend {backend!r}", hint=f"use one of {', '.join(sorted(_BACKENDS.names()))}")
    else:
        chosen = _BACKENDS.find(target)
        if chosen is None:
            raise LLMError(
                f"no LLM backend understands the endpoint {target!r}",
                hint="use an http(s):// URL of an OpenAI-compatible server or replay:<fixture dir>",
            )
    opened = chosen(target, settings, environ)
    record_dir = environ.get("PIMENTO_LLM_RECORD")
    if record_dir:
        from pimento.llm.replay import RecordingBackend

        opened = RecordingBackend(opened, record_dir)
    return opened


def _load_builtins() -> None:
    from pimento.llm import _builtin  # noqa: F401  (registers the built-in backends)
