"""Request limits: a body-size cap (ASGI middleware) and per-key token buckets (in-process).

The buckets live in the serving process: a deployment served by several processes gets one set
of buckets per process (docs/serve.md says so). The body cap is checked on the declared
``Content-Length`` and again on the bytes actually received, so a chunked body cannot pass it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pimento.service.errors import envelope

__all__ = ["BodySizeLimit", "RateLimiter", "TokenBucket"]


class TokenBucket:
    """``rate`` tokens per second, at most ``burst`` banked; :meth:`take` is thread-safe."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = float(rate)
        self.burst = float(burst)
        self.tokens = float(burst)
        self.stamp = time.monotonic()
        self._lock = threading.Lock()

    def take(self) -> float:
        """0.0 if a token was taken, else the seconds until one is available. What accrued while the
        bucket idled is banked up to ``burst``, never more, however long the idle."""
        with self._lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now
            if self.tokens >= 1:
                self.tokens -= 1
                return 0.0
            return (1 - self.tokens) / self.rate if self.rate > 0 else float("inf")


class RateLimiter:
    """One :class:`TokenBucket` per name (a key id, or a client address for failed sign-ins)."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, burst
        self._buckets: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()

    def take(self, name: str) -> float:
        """Take a token from ``name``'s bucket: 0.0, or the seconds until one is available."""
        with self._lock:
            bucket = self._buckets.get(name)
            if bucket is None:
                bucket = self._buckets[name] = TokenBucket(self.rate, self.burst)
        return bucket.take()


Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class BodySizeLimit:
    """Refuse (413, the error envelope) a request body larger than ``max_bytes``."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], max_bytes: int) -> None:
        self.app = app
        self.max_bytes = int(max_bytes)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            envelope("PayloadTooLarge", f"the request body is larger than {self.max_bytes} bytes", "send a shorter question or SQL")
        ).encode()
        await send({"type": "http.response.start", "status": 413, "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = self.max_bytes + 1
                if declared > self.max_bytes:
                    await self._refuse(send)
                    return
        # Read the whole body (bounded), then hand it to the app.
        chunks: list[bytes] = []
        size = 0
        more = True
        message: dict[str, Any] = {"type": "http.request", "body": b"", "more_body": False}
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        if message["type"] == "http.disconnect":
            return
        body = b"".join(chunks)
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
