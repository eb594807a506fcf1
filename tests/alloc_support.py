"""How much memory a call allocates, for tests that check "refused before any conversion"
(importable: tests/ is on sys.path).

Such tests used to time the call ("under 0.05 s"), which fails on a loaded machine. What they
mean is that the absurd value (``1e9999999``) is refused from its text, before anything builds
the number: ``10**9999999`` is an int of 33 million bits, 4 MB, and building it is what cost the
seconds. The allocation peak (:mod:`tracemalloc`) tells the two apart whatever the load.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

#: More than a refusal allocates (kilobytes), less than 10**9999999 (4 MB) or its Decimal text.
CONVERSION_BYTES = 1_000_000


def peak_bytes(call: Callable[[], object]) -> int:
    """The peak of memory allocated by Python while ``call()`` runs, in bytes (an exception
    from ``call`` propagates once the trace is stopped)."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    try:
        call()
    finally:
        _, peak = tracemalloc.get_traced_memory()
        if not was_tracing:
            tracemalloc.stop()
    return peak - base


def refusal_peak(call: Callable[[], object], error: type[BaseException] | tuple[type[BaseException], ...]) -> int:
    """:func:`peak_bytes` of ``call``, which must raise ``error`` (else AssertionError)."""
    caught: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except error as exc:
            caught.append(exc)

    peak = peak_bytes(run)
    assert caught, f"{call} did not raise {error}"
    return peak
