"""Pimento's benchmarks: the measurements behind the figures of docs/benchmarks.md.

Not part of the installed package (``pip install pimento-dp`` does not ship this folder): run each
one from the repository root, ``python -m benchmarks.NAME --help``. A benchmark imports
``pimento``; nothing under ``src/pimento`` imports a benchmark (an import-linter contract and
tests/unit/bench/test_outside_package.py check it). The tests of the benchmarks live in
tests/unit/bench (and tests/system for the long ones).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["REPO", "child_env"]

#: the repository root, which holds this folder
REPO = Path(__file__).resolve().parents[1]


def child_env(*first: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a child ``python -m benchmarks.NAME``: ``base`` (default: ours) with ``first``
    (then the repository root) put in front of ``PYTHONPATH``, so the child finds this folder from any
    working directory."""
    env = dict(os.environ if base is None else base)
    parts = [*first, str(REPO), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in parts if p)
    return env
