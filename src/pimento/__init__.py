"""Pimento: private answers to natural-language questions over relational data.

    >>> import pimento
    >>> with pimento.Session("shop.duckdb", analyst="ann") as s:          # doctest: +SKIP
    ...     s.ask("How many orders?", epsilon="1", delta="1e-6").value

:class:`pimento.release.Session` loads on first use, so ``import pimento`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"

__all__ = ["Session", "__version__"]


def __getattr__(name: str) -> Any:
    # By name, at first use: importing pimento (which every module's `from pimento import
    # __version__` does) must neither load the release path nor make the lower layers import it.
    if name == "Session":
        return importlib.import_module("pimento.release.session").Session
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
