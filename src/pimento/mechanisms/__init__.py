"""Differentially private release: exact budgets, exact samplers, smooth-sensitivity mechanisms, ledger, audit.

See ``PROOF.md`` in this package for the privacy argument, and docs/mechanisms.md.

The names load on first use (module ``__getattr__``), so that importing one light module of this
package (``pimento.mechanisms.budget``) does not load NumPy and the mechanisms with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pimento.mechanisms.audit import AuditReport
    from pimento.mechanisms.budget import Budget, format_number, parse_number
    from pimento.mechanisms.guarded import GuardedAnswer, guarded_release
    from pimento.mechanisms.ledger import Charge, Ledger, ledger_path, request_key
    from pimento.mechanisms.smooth import (
        GlobalLaplace,
        Mechanism,
        Release,
        SmoothLaplace,
        SmoothQuartic,
        mechanism_for,
        mechanism_for_query,
    )

__all__ = [
    "AuditReport",
    "Budget",
    "Charge",
    "GlobalLaplace",
    "GuardedAnswer",
    "Ledger",
    "Mechanism",
    "Release",
    "SmoothLaplace",
    "SmoothQuartic",
    "format_number",
    "guarded_release",
    "ledger_path",
    "mechanism_for",
    "mechanism_for_query",
    "parse_number",
    "request_key",
]

#: The module each exported name lives in (one entry per name of ``__all__``).
_HOMES = {
    "AuditReport": "audit",
    "Budget": "budget",
    "Charge": "ledger",
    "GlobalLaplace": "smooth",
    "GuardedAnswer": "guarded",
    "Ledger": "ledger",
    "Mechanism": "smooth",
    "Release": "smooth",
    "SmoothLaplace": "smooth",
    "SmoothQuartic": "smooth",
    "format_number": "budget",
    "guarded_release": "guarded",
    "ledger_path": "ledger",
    "mechanism_for": "smooth",
    "mechanism_for_query": "smooth",
    "parse_number": "budget",
    "request_key": "ledger",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
