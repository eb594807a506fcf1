"""Differentially private release: exact budgets, exact samplers, smooth-sensitivity mechanisms, ledger, audit.

See ``PROOF.md`` in this package for the privacy argument, and docs/mechanisms.md.

The names load on first use (module ``__getattr__``), so that importing one light module of this
package (``pimento.mechanisms.budget``) does not load NumPy and the mechanisms with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pimento._lazy import lazy_face as _lazy_face

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


__getattr__, __dir__ = _lazy_face(__name__, _HOMES, globals(), __all__)
