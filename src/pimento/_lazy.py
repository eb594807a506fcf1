"""Package faces that load their names on first use: one home for the module-level ``__getattr__``/``__dir__``.

A package whose ``__init__`` re-exports names from heavy submodules (NumPy, sqlglot) keeps ``import
pimento.X`` light by naming, for each exported name, the submodule that holds it; the submodule is
imported when the name is first looked up, and the name is then kept in the package's namespace.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_face"]


def lazy_face(package: str, homes: Mapping[str, str], namespace: MutableMapping[str, Any],
              exported: list[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: ``homes`` maps an exported name to its submodule."""

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value  # later look-ups skip __getattr__
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(exported))

    return getattr_, dir_
