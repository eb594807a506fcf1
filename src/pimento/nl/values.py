"""Values of the database's columns, indexed for linking literals in a question to columns.

Build a :class:`ValueIndex` once per database with :meth:`ValueIndex.from_engine`. In production
the engine MUST be the synthetic database: a value read from the private database and used to
shape a query leaks information outside the privacy budget. ``from_engine`` records whether the
source carries the synthesizer's marker table (``synthetic``) so callers can warn or refuse.

Text columns contribute up to ``max_values_per_column`` distinct values each (normalised to lower
case, single spaces; also under the lemma of each word, so "dogs" finds 'dog'). Numeric columns
contribute their range, so a number in a question can be linked to columns whose range holds it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pimento.engines import Engine
from pimento.errors import PimentoError
from pimento.nl.text import lemma, stem
from pimento.schema import Catalog
from pimento.schema.synthetic import SYNTH_META_TABLE
from pimento.sql.quote import quote_identifier

__all__ = ["NumericRange", "ValueHit", "ValueIndex", "normalize_value"]

_MAX_WORDS = 6


def normalize_value(text: str) -> str:
    """Lower case, single spaces, no surrounding punctuation: the key values are matched on."""
    return " ".join(str(text).lower().replace("_", " ").split()).strip(" .,;:!?\"'()")


@dataclass(frozen=True)
class ValueHit:
    """A stored value of ``table.column``, in the database's own spelling and type."""

    table: str
    column: str
    value: Any
    how: str = "exact"  # "exact", "lemma", "stem"


@dataclass(frozen=True)
class NumericRange:
    table: str
    column: str
    low: float
    high: float
    distinct: int
    integral: bool


@dataclass
class ValueIndex:
    """Text values by normalised key, numeric ranges by column, and where they were read from."""

    source: str = "none"
    synthetic: bool = False
    _exact: dict[str, list[ValueHit]] = field(default_factory=dict)
    _lemma: dict[str, list[ValueHit]] = field(default_factory=dict)
    _stem: dict[str, list[ValueHit]] = field(default_factory=dict)
    numeric: list[NumericRange] = field(default_factory=list)
    columns: dict[tuple[str, str], tuple[Any, ...]] = field(default_factory=dict)

    @classmethod
    def empty(cls) -> ValueIndex:
        """No values: the parser places literals by open value linking (question and schema only)."""
        return cls()

    @classmethod
    def from_values(
        cls,
        values: dict[tuple[str, str], Iterable[Any]],
        *,
        numeric: Iterable[NumericRange] = (),
        source: str = "in-memory",
        synthetic: bool = False,
    ) -> ValueIndex:
        """An index over explicit ``{(table, column): values}`` (tests, cached indexes)."""
        index = cls(source=source, synthetic=synthetic, numeric=list(numeric))
        for (table, column), vals in values.items():
            index._add(table, column, list(vals))
        return index

    @classmethod
    def from_engine(
        cls,
        engine: Engine,
        catalog: Catalog,
        *,
        max_values_per_column: int = 2000,
        max_chars: int = 80,
    ) -> ValueIndex:
        """Read values of every text column and the range of every numeric column of ``engine``.

        Pass the SYNTHETIC database's engine in production (see the module docstring).
        Columns whose reads fail (odd types, views) are skipped.
        """
        synthetic = any(t.lower() == SYNTH_META_TABLE for t in catalog.table_names)
        index = cls(source=engine.location, synthetic=synthetic)
        for table in catalog.tables:
            if table.name.lower() == SYNTH_META_TABLE:
                continue
            tname = quote_identifier(table.name, engine.dialect)
            for column in table.columns:
                cname = quote_identifier(column.name, engine.dialect)
                try:
                    if column.type in ("integer", "real"):
                        row = engine.execute(
                            f"SELECT MIN({cname}), MAX({cname}), COUNT(DISTINCT {cname}) FROM {tname}"
                        ).rows[0]
                        low, high, distinct = row
                        if isinstance(low, (int, float)) and isinstance(high, (int, float)):
                            index.numeric.append(
                                NumericRange(
                                    table.name, column.name, float(low), float(high), int(distinct),
                                    column.type == "integer",
                                )
                            )
                        if column.type == "integer" and distinct and distinct > 60:
                            continue
                    elif column.type not in ("text", "other", "boolean"):
                        continue
                    rows = engine.execute(
                        f"SELECT DISTINCT {cname} FROM {tname} WHERE {cname} IS NOT NULL LIMIT {int(max_values_per_column)}"
                    ).rows
                except PimentoError:
                    continue
                vals = [r[0] for r in rows if r[0] is not None and len(str(r[0])) <= max_chars]
                index._add(table.name, column.name, vals)
        return index

    def _add(self, table: str, column: str, values: list[Any]) -> None:
        self.columns[(table, column)] = tuple(values)
        for value in values:
            if isinstance(value, bool):
                continue
            key = normalize_value(str(value))
            if not key or len(key.split()) > _MAX_WORDS:
                continue
            self._exact.setdefault(key, []).append(ValueHit(table, column, value))
            if isinstance(value, str):
                words = key.split()
                lkey = " ".join(lemma(w) for w in words)
                if lkey != key:
                    self._lemma.setdefault(lkey, []).append(ValueHit(table, column, value, "lemma"))
                skey = " ".join(stem(w) for w in words)
                if skey != key and skey != lkey and len(skey) >= 4:
                    self._stem.setdefault(skey, []).append(ValueHit(table, column, value, "stem"))

    def lookup(self, text: str) -> list[ValueHit]:
        """Stored values equal to ``text`` up to case/spacing; failing that, by lemma, then by stem."""
        key = normalize_value(text)
        if not key:
            return []
        hits = list(self._exact.get(key, ()))
        words = key.split()
        lkey = " ".join(lemma(w) for w in words)
        seen = {(h.table, h.column) for h in hits}
        for source, k, how in ((self._exact, lkey, "lemma"), (self._lemma, key, "lemma"), (self._lemma, lkey, "lemma")):
            for h in source.get(k, ()):
                if (h.table, h.column) not in seen:
                    hits.append(ValueHit(h.table, h.column, h.value, how))
                    seen.add((h.table, h.column))
        skey = " ".join(stem(w) for w in words)
        if len(skey) >= 4:
            for source in (self._stem, self._exact, self._lemma):
                for h in source.get(skey, ()):
                    if (h.table, h.column) not in seen:
                        hits.append(ValueHit(h.table, h.column, h.value, "stem"))
                        seen.add((h.table, h.column))
        return hits

    def values_of(self, table: str, column: str) -> tuple[Any, ...]:
        """The values stored for one column (empty if none were read)."""
        for (t, c), vals in self.columns.items():
            if t.lower() == table.lower() and c.lower() == column.lower():
                return vals
        return ()

    def ranges_holding(self, number: float) -> list[NumericRange]:
        """Numeric columns whose [min, max] holds ``number``."""
        return [r for r in self.numeric if r.low <= number <= r.high]

    def __len__(self) -> int:
        return sum(len(v) for v in self.columns.values())

