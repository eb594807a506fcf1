"""What the offline extractor reads from the catalog: principals, the subject's reach, word matches.

Names are matched word by word (``name_words`` of :mod:`pimento.nl.text`, plus substrings of
compound names such as ``hivstatus`` or ``finaldiagnosis``); categorical values (the distinct
values of short text columns, when an engine is given) ground role names (``role = 'nurse'``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from pimento.nl.text import STOPWORDS, lemma, name_words, stem
from pimento.policy.extract_offline.lexicon import keys, words
from pimento.schema import Catalog, Table
from pimento.sql.quote import quote_identifier

__all__ = ["Schema", "categorical_values", "free_text_columns", "matches_name"]


def _compact(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def matches_name(word: str, name: str) -> bool:
    """Does ``word`` (any form, synonyms included) name a part of the schema name ``name``?

    >>> matches_name("diagnoses", "finaldiagnosis"), matches_name("HIV", "hivstatus"), matches_name("ad", "ad_network")
    (True, True, True)
    """
    w = word.lower()
    k = keys(w)
    for part in name_words(name):
        if k & {lemma(part), stem(part)}:
            return True
    compact = _compact(name)
    forms = {lemma(w), w} | ({stem(w)} if len(stem(w)) >= 5 else set())
    return any(len(f) >= 3 and f in compact and len(compact) > len(f) + 2 for f in forms)


def categorical_values(engine, catalog: Catalog, *, max_distinct: int = 20, max_chars: int = 40) -> dict:
    """Distinct values of the short text columns (at most ``max_distinct`` values, none longer than
    ``max_chars``) of ``engine``'s database: ``{(table, column): (values...)}``. These name roles
    (``Employee.role``) and purposes (``Consent.purpose``); columns with more values (names,
    free text) are left out. Custodian-side: the values go into the extracted YAML only."""
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    for table in catalog.tables:
        if table.name.lower().startswith("_pimento"):
            continue
        tab = quote_identifier(table.name, engine.dialect)
        for column in table.columns:
            if column.type != "text":
                continue
            col = quote_identifier(column.name, engine.dialect)
            rows = engine.execute(
                f"SELECT DISTINCT {col} FROM {tab} WHERE {col} IS NOT NULL LIMIT {max_distinct + 1}"
            ).rows
            vals = sorted(str(r[0]) for r in rows)
            if 0 < len(vals) <= max_distinct and all(len(v) <= max_chars for v in vals):
                out[(table.name, column.name)] = tuple(vals)
    return out


def free_text_columns(engine, catalog: Catalog, tables: Iterable[Table], *, min_words: int = 5) -> list[tuple[str, str]]:
    """The free-text columns of ``tables`` (notes, descriptions): text columns, no key, at least one value of
    ``min_words`` words or more. Free text may mention anything the policy names (an HIV status in a visit
    note); no dependency or foreign key sees inside it."""
    out: list[tuple[str, str]] = []
    for table in tables:
        keys = {k.lower() for k in table.primary_key} | {c.lower() for fk in catalog.foreign_keys_of(table.name)
                                                          for c in fk.columns}
        tab = quote_identifier(table.name, engine.dialect)
        for column in table.columns:
            if column.type != "text" or column.name.lower() in keys:
                continue
            col = quote_identifier(column.name, engine.dialect)
            rows = engine.execute(f"SELECT max(length({col}) - length(replace({col}, ' ', ''))) FROM {tab}").rows
            if rows and rows[0][0] is not None and int(rows[0][0]) + 1 >= min_words:
                out.append((table.name, column.name))
    return out


@dataclass
class Schema:
    """The catalog seen by the extractor."""

    catalog: Catalog
    values: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)

    @cached_property
    def principals(self) -> list[Table]:
        """Tables that can identify an agent: a one-column primary key."""
        return [t for t in self.catalog.tables if len(t.primary_key) == 1]

    def key(self, table: Table) -> str:
        return table.primary_key[0] if table.primary_key else table.columns[0].name

    def categorical(self, table: Table) -> Iterable[tuple[str, tuple[str, ...]]]:
        for (t, c), vals in self.values.items():
            if t.lower() == table.name.lower():
                yield c, vals

    def fk_columns(self, table: Table, target: Table) -> list[str]:
        """Single columns of ``table`` that reference ``target`` (declared foreign keys)."""
        out = []
        for fk in self.catalog.foreign_keys_of(table.name):
            if fk.ref_table.lower() == target.name.lower() and len(fk.columns) == 1:
                out.append(fk.columns[0])
        if table.name.lower() == target.name.lower():
            out.insert(0, self.key(table))
        return out

    def reach(self, subject: Table, hops: int = 3) -> set[str]:
        """Lower-case names of tables whose rows reach ``subject`` along foreign keys (itself included)."""
        seen = {subject.name.lower()}
        frontier = set(seen)
        for _ in range(hops):
            nxt = set()
            for fk in self.catalog.foreign_keys:
                if fk.ref_table.lower() in frontier and fk.table.lower() not in seen:
                    nxt.add(fk.table.lower())
            seen |= nxt
            frontier = nxt
        return seen

    def subject_path(self, table: Table, subject: Table, hops: int = 3) -> str | None:
        """How ``table``'s rows reach ``subject`` when no column of theirs references it directly:
        ``via COLS -> T1.c1 [-> T2.c2 ...]`` (the policy's ``grounding.subjects`` syntax), or None."""
        if table is subject or self.fk_columns(table, subject):
            return None

        def walk(reached: Table, prefix: list[str], depth: int) -> list[str] | None:
            direct = self.fk_columns(reached, subject)
            if direct and reached is not subject:
                return prefix + [f"{reached.name}.{direct[0]}"]
            if depth == 0 or reached is subject:
                return None
            for fk in self.catalog.foreign_keys_of(reached.name):
                ref = self.catalog.table(fk.ref_table)
                if len(fk.columns) == 1 and ref is not reached:
                    found = walk(ref, prefix + [f"{reached.name}.{fk.columns[0]}"], depth - 1)
                    if found:
                        return found
            return None

        for fk in self.catalog.foreign_keys_of(table.name):
            cols = fk.columns[0] if len(fk.columns) == 1 else f"({', '.join(fk.columns)})"
            found = walk(self.catalog.table(fk.ref_table), [cols], hops - 1)
            if found:
                return "via " + " -> ".join(found)
        return None

    def principal_refs(self, table: Table, principals: Iterable[Table]) -> set[str]:
        out = set()
        for p in principals:
            if p.name.lower() != table.name.lower() and self.fk_columns(table, p):
                out.add(p.name.lower())
        return out

    def is_relationship(self, table: Table, principals: Iterable[Table]) -> bool:
        """A table that relates two kinds of agents (a care relationship, a case assignment), not data."""
        principals = list(principals)
        if len(self.principal_refs(table, principals)) < 2:
            return False
        fk_cols = {c.lower() for fk in self.catalog.foreign_keys_of(table.name) for c in fk.columns}
        pk = {c.lower() for c in table.primary_key}
        plain = [c for c in table.columns if c.name.lower() not in fk_cols | pk and c.type != "boolean"]
        return len(table.primary_key) != 1 or not plain


def content_words(text: str, drop: Iterable[str] = ()) -> list[str]:
    dropped = {d.lower() for d in drop}
    return [w for w in words(text) if w not in STOPWORDS and w not in dropped and len(w) > 1]
