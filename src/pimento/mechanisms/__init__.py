"""Differentially private release: exact budgets, exact samplers, smooth-sensitivity mechanisms, ledger, audit.

See ``PROOF.md`` in this package for the privacy argument, and docs/mechanisms.md.
"""

from __future__ import annotations

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
