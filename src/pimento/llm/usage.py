"""Per-question accounting of LLM calls and tokens."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from pimento.llm.base import ChatResponse

__all__ = ["Usage"]


@dataclass
class Usage:
    """An accumulator of what a question cost: calls, tokens, retries, repair rounds.

    Create one per question and hand it to every function that talks to a backend;
    each adds what its responses report.

    >>> u = Usage()
    >>> u.add(ChatResponse((), prompt_tokens=10, completion_tokens=5, calls=2))
    >>> (u.calls, u.total_tokens)
    (2, 15)
    """

    calls: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    repairs: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, response: ChatResponse) -> None:
        """Count one answered request."""
        with self._lock:
            self.requests += 1
            self.calls += response.calls
            self.prompt_tokens += response.prompt_tokens
            self.completion_tokens += response.completion_tokens
            self.retries += response.retries

    def add_repair(self) -> None:
        """Count one repair round (its response is counted separately with :meth:`add`)."""
        with self._lock:
            self.repairs += 1

    def merge(self, other: Usage) -> None:
        """Add everything ``other`` counted."""
        with self._lock:
            self.calls += other.calls
            self.requests += other.requests
            self.prompt_tokens += other.prompt_tokens
            self.completion_tokens += other.completion_tokens
            self.retries += other.retries
            self.repairs += other.repairs

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "retries": self.retries,
            "repairs": self.repairs,
        }
