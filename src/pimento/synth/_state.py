"""The explicit state the synthesis passes read and fill (``pimento.synth.passes``).

:func:`start` checks the declarations and creates the state; each pass then reads some fields
and fills others, in the order of ``pimento.synth.api.PASSES``. The methods here are queries
over the state (no noise, no budget, no reads of the private database).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pimento.errors import ConfigError
from pimento.schema import Catalog, Column, ForeignKey
from pimento.synth._budget import SHARE_LINKS, SHARE_TYPES, Accountant
from pimento.synth._encode import ColumnData, Encoding
from pimento.synth._rank import MAX_KEY_COLUMNS, RowHash, order_within
from pimento.synth._units import UnitForest

if TYPE_CHECKING:
    from pimento.synth._mst import TableModel
    from pimento.synth._sample import Sampled

__all__ = ["Attr", "EntityInfo", "LinkDegrees", "Progress", "SynthState", "start"]

Progress = Callable[[str, int, int], None]


@dataclass
class Attr:
    """One modelled attribute of an entity row."""

    name: str  # unique within the entity model
    kind: str  # "col" | "has" | "deg" | "link" | "linknull" | "ctx"
    table: str
    column: str | None = None
    size: int = 1
    encoding: Encoding | None = None
    fk: ForeignKey | None = None
    ref_column: str | None = None  # for link attributes: the referenced table's column
    child: str | None = None  # for deg: the child table
    tied_to: str | None = None  # name of the partner attribute (own row "a" or parent row "^a")


@dataclass
class LinkDegrees:
    """Noisy in-degree profile of one link (a foreign key to a private table), per context cell.

    ``top[cell]`` holds the LINK_TOP_K largest in-degrees of referenced keys whose context is
    ``cell`` (noisy, then made non-increasing), ``total[cell]`` the noisy number of counted link
    rows. Degrees are on the thinned scale (LINK_ROWS_PER_UNIT rows per unit); only ratios
    matter when link targets are drawn in proportion to them (``_sample.link_weights``).
    """

    table: str
    fk: ForeignKey
    context: list[str]  # context columns of the referenced table (public encodings)
    encodings: list[Encoding]
    top: np.ndarray  # (cells, LINK_TOP_K)
    total: np.ndarray  # (cells,)
    sigma: float


@dataclass
class EntityInfo:
    name: str
    tables: list[str]  # the entity table then its extensions (parents before children)
    attrs: list[Attr] = field(default_factory=list)
    ctx: list[str] = field(default_factory=list)  # parent attribute names used as context
    unit_rows: int = 1


def col_name(table: str, column: str) -> str:
    """The name of the attribute that models ``table.column``."""
    return f"{table}.{column}"


@dataclass
class SynthState:
    """Everything one synthesis knows, field by field; the pass that fills each field is named."""

    forest: UnitForest
    acc: Accountant
    #: Sampling randomness (the user's ``--seed``): post-processing only.
    rng: np.random.Generator
    #: Random orders inside units (per-unit thinning, truncation), drawn from the noise source:
    #: the hash key of the row order (``_rank``) and, for tables without an integer key, permutations.
    order_rng: np.random.Generator
    row_hash: RowHash
    #: Declarations, checked by :func:`start`: caps per table (lower case), link context per
    #: table, declared public value sets.
    user_caps: dict[str, int]
    link_context: dict[str, list[str]]
    public_values: set[tuple[str, str]]
    #: fit_models: count the models' rows with a GROUP BY in the engine where SQL can
    #: (``_engine_counts``); False counts every model in memory (the same vectors).
    counts_in_engine: bool = True
    #: read_tables: the rows of every private table.
    data: dict[str, dict[str, ColumnData]] = field(default_factory=dict)
    #: cap_fanout: the order of the rows inside units (``rank``: the row hash, or a permutation
    #: where ``rank_keys`` is None), parent row, kept rows, unit and rows per unit of every
    #: private table, and caps.
    rank: dict[str, np.ndarray] = field(default_factory=dict)
    rank_keys: dict[str, tuple[str, ...] | None] = field(default_factory=dict)
    parent_idx: dict[str, np.ndarray] = field(default_factory=dict)
    valid: dict[str, np.ndarray] = field(default_factory=dict)
    unit: dict[str, np.ndarray] = field(default_factory=dict)
    unit_rows: dict[str, int] = field(default_factory=dict)
    caps: dict[str, int] = field(default_factory=dict)
    #: decide_column_types: CHECK-constraint domains, the family each modelled column is
    #: modelled and written in, and the number of DP type tests per component (their share is
    #: charged only where there are some).
    check_domains: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    family: dict[tuple[str, str], str] = field(default_factory=dict)
    type_tests: dict[str, int] = field(default_factory=dict)
    #: encode_columns: the encoding of every modelled column.
    enc: dict[tuple[str, str], Encoding] = field(default_factory=dict)
    #: measure_link_degrees: noisy in-degree profiles of links to private tables.
    link_degrees: dict[tuple[str, str], LinkDegrees] = field(default_factory=dict)
    #: build_entities (attributes), detect_ties (``Attr.tied_to``), fit_models (models, contexts).
    entities: dict[str, EntityInfo] = field(default_factory=dict)
    models: dict[str, TableModel] = field(default_factory=dict)
    #: read_public_directory: component roots with declared link context: the exact context
    #: codes of their rows (a public directory, PRIVACY.md caveat 1); sampling copies them.
    directory: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    #: sample_rows, read_public_tables, mint_keys_and_links, repair_constraints.
    sampled: Sampled | None = None
    public_rows: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    link_target: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def cat(self) -> Catalog:
        return self.forest.catalog

    # ------------------------------------------------------------------ tables and columns

    def n(self, table: str) -> int:
        """Rows read from ``table``."""
        d = self.data[table]
        return len(next(iter(d.values())).values) if d else 0

    def row_key(self, table: str) -> tuple[str, ...] | None:
        """The key the row order of ``table`` hashes (``_rank``): its primary key, else its first
        unique key, whose every column is declared INTEGER; None when it has none. Decided on the
        schema alone (never on the values, so the choice of order reveals nothing)."""
        t = self.cat.table(table)
        for key in [t.primary_key, *t.unique]:
            if key and len(key) <= MAX_KEY_COLUMNS and all(t.column(c).type == "integer" for c in key):
                return tuple(key)
        return None

    def key_integers(self, table: str, column: str) -> np.ndarray:
        """The values of a hashed key column as int64: NULL, and a value that is not an integral
        number (engines that do not enforce types), count as 0 (SQL: ``COALESCE(CAST(x AS BIGINT), 0)``)."""
        col = self.data[table][column]
        v = col.values
        if v.dtype.kind in "iu":
            out = v.astype(np.int64)
        elif v.dtype.kind == "f":
            ok = np.isfinite(v) & (v == np.round(v)) & (np.abs(v) < 2**62)
            out = np.where(ok, v, 0).astype(np.int64)
        else:
            out = np.fromiter(
                (int(x) if isinstance(x, (int, np.integer)) and not isinstance(x, bool) and abs(int(x)) < 2**63
                 else int(x) if isinstance(x, float) and x.is_integer() and abs(x) < 2**62 else 0 for x in v.tolist()),
                dtype=np.int64, count=len(v),
            )
        return np.where(col.null, 0, out)

    def order_in(self, table: str, group: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Positions of ``rows`` (rows of ``table``, ``group`` their partition) sorted by
        partition, then by the random row order inside it (``rank``, then the hashed key)."""
        keys = self.rank_keys.get(table)
        cols = [self.key_integers(table, c)[rows] for c in keys] if keys else []
        return order_within(group, self.rank[table][rows], cols)

    def fk_columns(self, table: str) -> set[str]:
        return {c for fk in self.cat.foreign_keys_of(table) for c in fk.columns}

    def minted(self, table: str) -> set[str]:
        """Single-column keys that are not foreign keys: fresh values are minted."""
        t = self.cat.table(table)
        fkcols = self.fk_columns(table)
        out = set()
        for key in [t.primary_key, *t.unique]:
            if len(key) == 1 and key[0] not in fkcols:
                out.add(key[0])
        return out

    def component_tables(self, comp: str) -> list[str]:
        return [t for t in self.forest.order if self.forest.tables[t].component == comp]

    def modelled_columns(self, tables: list[str]) -> Iterator[tuple[str, Column]]:
        """(table, column) of every column the models cover: not a foreign key, not a minted key."""
        for t in tables:
            fkcols = self.fk_columns(t)
            minted = self.minted(t)
            for c in self.cat.table(t).columns:
                if c.name not in fkcols and c.name not in minted:
                    yield t, c

    def entity_tables(self, e: str) -> list[str]:
        """Entity ``e`` and its 1:1 extensions, parents before children."""
        out = [e]
        i = 0
        while i < len(out):
            out.extend(self.forest.tables[out[i]].extensions)
            i += 1
        return out

    # ------------------------------------------------------------------ column types and domains

    def declared_domain(self, table: str, column: str) -> bool:
        return (
            self.check_domains.get((table, column)) is not None
            or column in self.link_context.get(table, [])
            or (table, column) in self.public_values
        )

    def column_family(self, table: str, column: str) -> str:
        """The family a column is modelled and written in (its declared type unless tested)."""
        return self.family.get((table, column)) or self.cat.table(table).column(column).type

    def changed_families(self) -> dict[tuple[str, str], str]:
        """Columns the type test moved away from their declared family (written accordingly)."""
        return {(t, c): f for (t, c), f in self.family.items() if f != self.cat.table(t).column(c).type}

    # ------------------------------------------------------------------ links

    def private_links(self, comp: str) -> list[tuple[str, ForeignKey]]:
        """Links owned by tables of component ``comp`` that point at a private table and are not
        modelled as a public key attribute: their targets are drawn in proportion to in-degrees."""
        out = []
        for t in self.forest.order:
            tp = self.forest.tables[t]
            if tp.component != comp:
                continue
            for fk in tp.links:
                if self.cat.table(fk.ref_table).private:
                    out.append((t, fk))
        return out

    def link_context_of(self, ref: str) -> list[str]:
        """Declared context columns of ``ref`` that have a public categorical encoding."""
        return [c for c in self.link_context.get(ref, []) if (enc := self.enc.get((ref, c))) is not None and enc.kind == "cat"]

    # ------------------------------------------------------------------ budget shares

    def share_types(self, comp: str) -> float:
        return SHARE_TYPES if self.type_tests.get(comp) else 0.0

    def share_links(self, comp: str) -> float:
        return SHARE_LINKS if self.private_links(comp) else 0.0


def _parse_columns(cat: Catalog, items: Any, what: str) -> set[tuple[str, str]]:
    out = set()
    for item in items:
        if not isinstance(item, str) or "." not in item:
            raise ConfigError(f"{what} {item!r} is not Table.column", hint="e.g. public_values = [\"Prescription.medication\"]")
        t, c = item.split(".", 1)
        table = cat.table(t.strip())
        out.add((table.name, table.column(c.strip()).name))
    return out


def _parse_link_context(cat: Catalog, items: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for item in items:
        if "." not in item:
            raise ConfigError(f"link context {item!r} is not Table.column", hint="e.g. --link-context Employee.specialty")
        t, c = item.split(".", 1)
        table = cat.table(t)
        col = table.column(c)
        out.setdefault(table.name, []).append(col.name)
    return out


def start(
    forest: UnitForest,
    accountant: Accountant,
    *,
    seed: int,
    caps: dict[str, int] | None,
    link_context: list[str] | tuple[str, ...],
    public_values: list[str] | tuple[str, ...],
    counts_in_engine: bool = True,
) -> SynthState:
    """The state before any pass: the declarations checked (before anything is charged or read)."""
    order_rng = np.random.default_rng(accountant._rng.integers(0, 2**63 - 1))
    return SynthState(
        forest=forest,
        acc=accountant,
        rng=np.random.default_rng(seed),
        order_rng=order_rng,
        row_hash=RowHash.draw(order_rng),
        user_caps={k.lower(): v for k, v in (caps or {}).items()},
        link_context=_parse_link_context(forest.catalog, list(link_context)),
        public_values=_parse_columns(forest.catalog, public_values, "public value set"),
        counts_in_engine=counts_in_engine,
        report={"caps": {}, "ties": [], "free_text": [], "models": {}, "components": forest.components, "column_types": {}},
    )
