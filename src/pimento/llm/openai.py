"""An OpenAI-compatible chat-completions backend over HTTP (vLLM, Ollama, llama.cpp server, hosted APIs).

Retries connection errors, HTTP 5xx and 429 with exponential backoff (honouring
``Retry-After``); a timeout is not retried (a slow model does not get faster) and becomes an
:class:`~pimento.errors.LLMError` at once. When the server returns fewer than ``n`` choices
(llama.cpp ignores ``n``), the missing samples are drawn with further sequential requests.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from pimento.config import LLMSettings
from pimento.errors import LLMError
from pimento.extras import missing_extra
from pimento.llm.base import ChatRequest, ChatResponse, Completion

try:  # the `llm` extra: without it pimento.llm still imports, and OpenAIBackend() names the extra
    import httpx
except ImportError:
    httpx = None  # type: ignore[assignment]

__all__ = ["JSON_MODES", "OpenAIBackend"]

#: How a JSON schema is passed to the server:
#: ``json_schema``: OpenAI's ``{"type": "json_schema", "json_schema": {...}}`` (OpenAI, vLLM, llama-server);
#: ``json_object``: ``{"type": "json_object", "schema": {...}}`` (llama-cpp-python's server, Ollama);
#: ``none``: the schema is not sent (the prompt alone asks for JSON).
JSON_MODES = ("json_schema", "json_object", "none")

_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


class OpenAIBackend:
    """Chat completions from ``{base_url}/chat/completions``.

    Args:
        base_url: e.g. ``http://127.0.0.1:8080/v1``.
        model: model name sent with each request (omitted when None; llama.cpp ignores it).
        api_key: sent as ``Authorization: Bearer ...`` when given.
        timeout_s: per HTTP request.
        max_retries: further attempts after a retryable failure.
        backoff_s: first backoff delay; doubled at each retry, capped at ``max_backoff_s``.
        json_mode: one of :data:`JSON_MODES`.
        fold_system: send system messages as the start of the first user message (for chat
            templates without a system role, such as Gemma's, which would drop them).
        transport: an httpx transport (tests pass ``httpx.MockTransport``).
        sleep: the sleep function (tests pass a recorder).
    """

    name = "openai"

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        json_mode: str = "json_schema",
        fold_system: bool = False,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if httpx is None:
            raise missing_extra("llm", "the OpenAI-compatible LLM backend")
        if not base_url.startswith(("http://", "https://")):
            raise LLMError(f"LLM endpoint {base_url!r} is not an http(s) URL", hint="e.g. http://127.0.0.1:8080/v1")
        if json_mode not in JSON_MODES:
            raise LLMError(f"unknown JSON mode {json_mode!r}", hint=f"use one of {', '.join(JSON_MODES)}")
        if timeout_s <= 0 or max_retries < 0:
            raise LLMError("timeout_s must be positive and max_retries at least 0")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.json_mode = json_mode
        self.fold_system = bool(fold_system)
        self._sleep = sleep
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s)),
            transport=transport,
        )
        #: False once the server has answered a request for n > 1 with a single choice.
        self.server_honours_n: bool | None = None

    @classmethod
    def from_settings(
        cls, settings: LLMSettings, *, url: str | None = None, environ: Mapping[str, str] | None = None, **kwargs: Any
    ) -> OpenAIBackend:
        """Build from ``[llm]`` settings; environment variables override the file.

        ``PIMENTO_LLM_URL``, ``PIMENTO_LLM_MODEL``, the key from the variable named by
        ``settings.api_key_env``, ``PIMENTO_LLM_JSON_MODE`` (one of :data:`JSON_MODES`) and
        ``PIMENTO_LLM_FOLD_SYSTEM`` (``1`` to fold system messages into the first user message).
        """
        environ = os.environ if environ is None else environ
        base_url = url or environ.get("PIMENTO_LLM_URL") or settings.base_url
        if not base_url:
            raise LLMError("no LLM endpoint is configured", hint="set PIMENTO_LLM_URL or [llm] base_url")
        return cls(
            base_url,
            model=environ.get("PIMENTO_LLM_MODEL") or settings.model,
            api_key=environ.get(settings.api_key_env) or None,
            timeout_s=settings.timeout_s,
            max_retries=settings.max_retries,
            json_mode=environ.get("PIMENTO_LLM_JSON_MODE", kwargs.pop("json_mode", "json_schema")),
            fold_system=environ.get("PIMENTO_LLM_FOLD_SYSTEM", "") in ("1", "true", "yes")
            or kwargs.pop("fold_system", False),
            **kwargs,
        )

    def close(self) -> None:
        """Close the HTTP connections (also done by ``with OpenAIBackend(...) as backend:``)."""
        self._client.close()

    def __enter__(self) -> OpenAIBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------ requests
    def complete(self, request: ChatRequest) -> ChatResponse:
        completions: list[Completion] = []
        prompt_tokens = completion_tokens = calls = retries = 0
        model = None
        # A server that ignores n answers one choice per request: draw the rest one by one.
        # Bounded: each round adds at least one completion or raises.
        round_index = 0
        while len(completions) < request.n:
            wanted = request.n - len(completions)
            seed = None if request.seed is None else request.seed + round_index
            data, tries = self._post(self._payload(request, wanted, seed))
            calls += 1
            retries += tries
            choices = self._choices(data)
            if not choices:
                raise LLMError(
                    f"LLM endpoint {self.base_url} answered with no choices",
                    hint="check that the server serves chat completions for this model",
                )
            if round_index == 0 and wanted > 1:
                self.server_honours_n = len(choices) >= wanted
            completions.extend(choices[:wanted])
            usage = data.get("usage") or {}
            prompt_tokens += _as_int(usage.get("prompt_tokens"))
            completion_tokens += _as_int(usage.get("completion_tokens"))
            model = data.get("model") or model
            round_index += 1
        return ChatResponse(
            tuple(completions),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            calls=calls,
            retries=retries,
            model=model,
        )

    def _payload(self, request: ChatRequest, n: int, seed: int | None) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "messages": _fold_system(request) if self.fold_system else [m.to_dict() for m in request.messages],
            "n": n,
            "temperature": float(request.temperature),
            "max_tokens": request.max_tokens,
        }
        if self.model:
            payload["model"] = self.model
        if seed is not None:
            payload["seed"] = seed
        if request.json_schema is not None and self.json_mode != "none":
            schema = request.to_dict()["json_schema"]
            if self.json_mode == "json_schema":
                payload["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": request.schema_name, "schema": schema},
                }
            else:
                payload["response_format"] = {"type": "json_object", "schema": schema}
        return payload

    def _post(self, payload: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """POST with retries; the decoded JSON body and the number of retries it took."""
        url = f"{self.base_url}/chat/completions"
        attempt = 0
        while True:
            try:
                response = self._client.post(url, json=payload)
            except httpx.TimeoutException as exc:
                if isinstance(exc, httpx.ConnectTimeout) and attempt < self.max_retries:
                    self._sleep(self._delay(attempt, None))
                    attempt += 1
                    continue
                raise LLMError(
                    f"LLM endpoint {self.base_url} timed out after {self.timeout_s:g} s "
                    f"({type(exc).__name__}, {attempt + 1} attempt(s))",
                    hint="raise [llm] timeout_s, lower max_tokens, or use a faster model",
                ) from exc
            except httpx.TransportError as exc:
                if attempt < self.max_retries:
                    self._sleep(self._delay(attempt, None))
                    attempt += 1
                    continue
                raise LLMError(
                    f"cannot reach LLM endpoint {self.base_url} after {attempt + 1} attempt(s): "
                    f"{type(exc).__name__}: {exc}",
                    hint="start the server or fix PIMENTO_LLM_URL / [llm] base_url",
                ) from exc
            if response.status_code in _RETRY_STATUS and attempt < self.max_retries:
                self._sleep(self._delay(attempt, response.headers.get("retry-after")))
                attempt += 1
                continue
            if response.status_code >= 400:
                raise self._http_error(response, attempt)
            try:
                data = response.json()
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise LLMError(
                    f"LLM endpoint {self.base_url} returned a body that is not JSON: {_snippet(response.text)}",
                    hint="is the URL an OpenAI-compatible API (ending in /v1)?",
                ) from exc
            if not isinstance(data, dict):
                raise LLMError(f"LLM endpoint {self.base_url} returned JSON that is not an object: {_snippet(response.text)}")
            return data, attempt

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        delay = min(self.max_backoff_s, self.backoff_s * (2**attempt))
        if retry_after:
            try:
                delay = min(self.max_backoff_s, max(delay, float(retry_after)))
            except ValueError:
                pass
        return delay

    def _http_error(self, response: httpx.Response, attempt: int) -> LLMError:
        status = response.status_code
        detail = _snippet(response.text)
        tries = f" after {attempt + 1} attempt(s)" if attempt else ""
        if status in (401, 403):
            hint = "set the API key in the environment variable named by [llm] api_key_env (default PIMENTO_LLM_KEY)"
        elif status == 404:
            hint = "the base URL should end in /v1 (e.g. http://127.0.0.1:8080/v1), and the model must exist"
        elif status in _RETRY_STATUS:
            hint = "the server is overloaded or failing; try again later or raise [llm] max_retries"
        elif status in (400, 422) and "response_format" in detail:
            hint = "the server rejects structured output: set PIMENTO_LLM_JSON_MODE=json_object or none"
        else:
            hint = "check the model name and the server's log"
        return LLMError(f"LLM endpoint {self.base_url} answered HTTP {status}{tries}: {detail}", hint=hint)

    def _choices(self, data: dict[str, Any]) -> list[Completion]:
        raw = data.get("choices")
        if not isinstance(raw, list):
            raise LLMError(
                f"LLM endpoint {self.base_url} returned no 'choices' list: {_snippet(json.dumps(data))}",
                hint="is the URL an OpenAI-compatible chat-completions API?",
            )
        choices = []
        for choice in raw:
            message = choice.get("message") if isinstance(choice, dict) else None
            content = message.get("content") if isinstance(message, dict) else None
            if content is None:
                content = ""  # a refusal or tool call: an empty completion, judged by the caller
            choices.append(Completion(str(content), choice.get("finish_reason") if isinstance(choice, dict) else None))
        return choices


def _fold_system(request: ChatRequest) -> list[dict[str, str]]:
    """The messages with every system message moved to the start of the first user message."""
    system = "\n\n".join(m.content for m in request.messages if m.role == "system")
    rest = [m.to_dict() for m in request.messages if m.role != "system"]
    if system:
        for message in rest:
            if message["role"] == "user":
                message["content"] = f"{system}\n\n{message['content']}"
                break
        else:
            rest.insert(0, {"role": "user", "content": system})
    return rest


def _as_int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _snippet(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."
