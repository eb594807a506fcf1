"""Structured (JSON) answers validated with pydantic, with one repair round.

Every completion is parsed (code fences and chatter around the JSON object are tolerated)
and validated against a pydantic model. An invalid completion gets exactly one repair
round: the conversation plus the bad answer plus the validation error is sent back with
``n = 1``. What is still invalid after that is reported, never guessed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from pimento.errors import LLMError
from pimento.llm.base import Backend, ChatRequest, Message
from pimento.llm.prompts import repair_messages
from pimento.llm.usage import Usage

__all__ = ["StructuredSample", "complete_structured", "complete_structured_one", "parse_structured"]

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class StructuredSample(Generic[T]):
    """One sample: its index among the ``n`` drawn, the raw text, and the value or the error.

    ``repaired`` is True when the value (or the final error) comes from the repair round.
    ``error_kind`` is ``"not_json"``, ``"schema"`` or ``"empty"`` when ``value`` is None.
    """

    index: int
    text: str
    value: T | None
    error: str | None = None
    error_kind: str | None = None
    repaired: bool = False

    @property
    def ok(self) -> bool:
        return self.value is not None


def parse_structured(text: str, model: type[T]) -> T:
    """The JSON object in ``text`` validated as ``model``; ValueError says what is wrong.

    >>> from pydantic import BaseModel
    >>> class A(BaseModel):
    ...     sql: str
    >>> parse_structured('Sure! ```json\\n{"sql": "SELECT 1"}\\n```', A).sql
    'SELECT 1'
    """
    candidates = _json_candidates(text)
    if not candidates:
        raise _NotJson("the answer is empty" if not text.strip() else "the answer contains no JSON object")
    first_error: Exception | None = None
    for candidate in candidates:
        try:
            data = json.loads(candidate, strict=False)  # tolerate raw newlines inside strings
        except json.JSONDecodeError as exc:
            first_error = first_error or _NotJson(f"the answer is not valid JSON: {exc.msg} at position {exc.pos}")
            continue
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            first_error = first_error if isinstance(first_error, _SchemaError) else _SchemaError(_explain(exc))
    assert first_error is not None
    raise first_error


def complete_structured(
    backend: Backend,
    messages: tuple[Message, ...] | list[Message],
    model: type[T],
    *,
    n: int = 1,
    temperature: float = 0.7,
    max_tokens: int = 512,
    usage: Usage | None = None,
    repair: bool = True,
    seed: int | None = None,
) -> list[StructuredSample[T]]:
    """Draw ``n`` samples and validate each as ``model``; each invalid one gets one repair round.

    Returns one :class:`StructuredSample` per sample, valid or not, in sample order.
    Transport failures (unreachable endpoint, timeout) raise :class:`LLMError`.
    """
    usage = usage if usage is not None else Usage()
    schema = model.model_json_schema()
    request = ChatRequest(
        tuple(messages), n=n, temperature=temperature, max_tokens=max_tokens,
        json_schema=schema, schema_name=model.__name__, seed=seed,
    )
    response = backend.complete(request)
    usage.add(response)
    if len(response.completions) != n:
        raise LLMError(f"LLM backend {getattr(backend, 'name', '?')} returned {len(response.completions)} samples, asked {n}")
    samples: list[StructuredSample[T]] = []
    for index, completion in enumerate(response.completions):
        sample = _judge(index, completion.text, model, repaired=False)
        if not sample.ok and repair:
            fix = ChatRequest(
                repair_messages(tuple(messages), completion.text, sample.error or ""),
                n=1, temperature=temperature, max_tokens=max_tokens,
                json_schema=schema, schema_name=model.__name__, seed=None if seed is None else seed + 1000 + index,
            )
            usage.add_repair()
            fixed = backend.complete(fix)
            usage.add(fixed)
            text = fixed.completions[0].text if fixed.completions else ""
            sample = _judge(index, text, model, repaired=True)
        samples.append(sample)
    return samples


def complete_structured_one(
    backend: Backend,
    messages: tuple[Message, ...] | list[Message],
    model: type[T],
    *,
    temperature: float = 0.0,
    max_tokens: int = 512,
    usage: Usage | None = None,
) -> T:
    """One validated answer, or an LLMError after the repair round also failed."""
    sample = complete_structured(
        backend, messages, model, n=1, temperature=temperature, max_tokens=max_tokens, usage=usage
    )[0]
    if sample.value is None:
        raise LLMError(
            f"the LLM's answer is unusable after one repair round: {sample.error}; answer was: {_snippet(sample.text)}",
            hint="the model may be too weak for structured output; try a larger model or lower the temperature",
        )
    return sample.value


class _NotJson(ValueError):
    kind = "not_json"


class _SchemaError(ValueError):
    kind = "schema"


def _judge(index: int, text: str, model: type[T], *, repaired: bool) -> StructuredSample[T]:
    try:
        return StructuredSample(index, text, parse_structured(text, model), repaired=repaired)
    except (_NotJson, _SchemaError) as exc:
        kind = "empty" if not text.strip() else exc.kind
        return StructuredSample(index, text, None, error=str(exc), error_kind=kind, repaired=repaired)


def _json_candidates(text: str) -> list[str]:
    """Substrings of ``text`` that may be the JSON object, most likely first."""
    stripped = text.strip()
    if not stripped:
        return []
    found = [stripped] if stripped.startswith("{") else []
    found += [m.group(1).strip() for m in _FENCE.finditer(text) if m.group(1).strip().startswith("{")]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        found.append(text[start : end + 1])
    # Drop duplicates, keep order.
    return list(dict.fromkeys(c for c in found if c))


def _explain(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:3]:
        where = ".".join(str(p) for p in error["loc"]) or "(top level)"
        parts.append(f"{where}: {error['msg']}")
    return "the JSON does not match the schema: " + "; ".join(parts)


def _snippet(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit] + "...")
