"""What extractors produce and resolution consumes: spans, cells, lookups and mentions.

A :class:`Mention` is one row's worth of facts read from one place: the table, the cells it
states (each with the document spans it came from), attributes used only to find a referenced row
(:class:`Lookup`), and the document it came from. Resolution turns mentions into rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Cell", "Lookup", "Mention", "Span"]


@dataclass(frozen=True)
class Span:
    """Characters ``[start, end)`` of document ``doc_id``."""

    doc_id: str
    start: int
    end: int

    def to_list(self) -> list[Any]:
        return [self.doc_id, self.start, self.end]


@dataclass(frozen=True)
class Cell:
    """A stated value and the spans it was read from (several when several documents agree)."""

    value: Any
    spans: tuple[Span, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"value": _plain(self.value), "spans": [s.to_list() for s in self.spans]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Cell:
        return cls(data["value"], tuple(Span(str(d), int(s), int(e)) for d, s, e in data.get("spans", ())))


@dataclass(frozen=True)
class Lookup:
    """Fill ``column`` with ``ref_column`` of the one ``ref_table`` row whose ``on`` columns equal these cells."""

    column: str
    ref_table: str
    ref_column: str
    on: Mapping[str, Cell]

    def to_dict(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "ref_table": self.ref_table,
            "ref_column": self.ref_column,
            "on": {k: c.to_dict() for k, c in self.on.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Lookup:
        return cls(
            data["column"], data["ref_table"], data["ref_column"],
            {k: Cell.from_dict(v) for k, v in data["on"].items()},
        )


@dataclass(frozen=True)
class Mention:
    """One row's facts from one document: ``cells`` by column, and lookups for columns not stated."""

    table: str
    cells: Mapping[str, Cell]
    doc_id: str
    lookups: tuple[Lookup, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "doc_id": self.doc_id,
            "cells": {k: c.to_dict() for k, c in self.cells.items()},
            "lookups": [lk.to_dict() for lk in self.lookups],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Mention:
        return cls(
            data["table"],
            {k: Cell.from_dict(v) for k, v in data["cells"].items()},
            str(data["doc_id"]),
            tuple(Lookup.from_dict(lk) for lk in data.get("lookups", ())),
        )


def _plain(value: Any) -> Any:
    """A JSON-ready form of a cell value (dates as ISO text, decimals as float)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)
