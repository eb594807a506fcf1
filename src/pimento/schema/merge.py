"""Merge what ``pimento.toml`` declares into an introspected catalog (a pure function).

Two passes: :func:`declared_constraints` reads the ``[constraints]`` and ``[privacy]``
entries and resolves every name against the catalog (case-insensitively, to the catalog's
own spelling), raising a :class:`~pimento.errors.CatalogError` that names the offending
entry; :func:`merge_catalog` applies them. Neither touches a database: checking that the
declarations hold on the data is :mod:`pimento.engines.database`'s job.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pimento.config import Settings
from pimento.errors import CatalogError
from pimento.schema.catalog import Catalog, ForeignKey, FunctionalDependency

__all__ = [
    "DeclaredConstraints",
    "PrivacyMark",
    "declared_constraints",
    "merge_catalog",
    "parse_column_ref",
    "privacy_marks",
    "private_relations",
]

_REF = re.compile(r"^\s*([^\s.()]+)\s*\.\s*(?:\(([^()]*)\)|([^\s.(),]+))\s*$")


def parse_column_ref(text: str) -> tuple[str, tuple[str, ...]]:
    """Split ``Table.col`` or ``Table.(c1, c2)`` into the table and its columns (as written).

    >>> parse_column_ref("Visit.(patient_id, day)")
    ('Visit', ('patient_id', 'day'))
    """
    match = _REF.match(text)
    if match is None:
        raise CatalogError(f"{text!r} is not of the form Table.column or Table.(c1, c2)")
    table, group, single = match.groups()
    columns = tuple(c.strip() for c in group.split(",")) if group is not None else (single,)
    if not columns or any(not c or " " in c for c in columns):
        raise CatalogError(f"{text!r} is not of the form Table.column or Table.(c1, c2)")
    return table, columns


@dataclass(frozen=True)
class DeclaredConstraints:
    """The ``[constraints]`` of pimento.toml, resolved to the catalog's spelling."""

    foreign_keys: tuple[ForeignKey, ...] = ()
    unique: tuple[tuple[str, tuple[str, ...]], ...] = ()
    functional_dependencies: tuple[FunctionalDependency, ...] = ()


def _resolve(catalog: Catalog, text: str, where: str, source: str) -> tuple[str, tuple[str, ...]]:
    """Resolve ``Table.col`` / ``Table.(c1, c2)`` to catalog spelling; errors name the entry."""
    try:
        table_name, columns = parse_column_ref(text)
        table = catalog.table(table_name)
        resolved = tuple(table.column(c).name for c in columns)
    except CatalogError as exc:
        raise CatalogError(f"{source}: {where} = {text!r}: {exc.message}", hint=exc.hint) from None
    if len({c.lower() for c in resolved}) != len(resolved):
        raise CatalogError(f"{source}: {where} = {text!r}: a column is listed twice")
    return table.name, resolved


def declared_constraints(catalog: Catalog, settings: Settings, *, source: str = "pimento.toml") -> DeclaredConstraints:
    """Resolve the declared unique keys, foreign keys and functional dependencies against ``catalog``."""
    section = settings.constraints
    unique: list[tuple[str, tuple[str, ...]]] = []
    for i, entry in enumerate(section.unique):
        key = _resolve(catalog, entry.columns, f"constraints.unique[{i}].columns", source)
        if key not in unique:
            unique.append(key)
    fks: list[ForeignKey] = []
    for i, fk_entry in enumerate(section.foreign_keys):
        table, columns = _resolve(catalog, fk_entry.from_, f"constraints.foreign_keys[{i}].from", source)
        ref_table, ref_columns = _resolve(catalog, fk_entry.to, f"constraints.foreign_keys[{i}].to", source)
        where = f"{source}: constraints.foreign_keys[{i}] ({fk_entry.from_} -> {fk_entry.to})"
        if len(columns) != len(ref_columns):
            raise CatalogError(f"{where}: {len(columns)} column(s) reference {len(ref_columns)} column(s)")
        target = catalog.table(ref_table)
        declared_keys = [cols for t, cols in unique if t == ref_table]
        wanted = {c.lower() for c in ref_columns}
        if not (target.is_key(ref_columns) or any({c.lower() for c in k} <= wanted for k in declared_keys)):
            raise CatalogError(
                f"{where}: the referenced columns are not the primary key or a unique key of {ref_table!r}",
                hint=f"declare them unique with [[constraints.unique]] columns = \"{fk_entry.to}\" if they are",
            )
        fk = ForeignKey(table, columns, ref_table, ref_columns, declared=True)
        if fk not in fks:
            fks.append(fk)
    fds: list[FunctionalDependency] = []
    for i, fd_entry in enumerate(section.functional_dependencies):
        lhs_table, lhs = _resolve(catalog, fd_entry.lhs, f"constraints.functional_dependencies[{i}].lhs", source)
        rhs_table, rhs = _resolve(catalog, fd_entry.rhs, f"constraints.functional_dependencies[{i}].rhs", source)
        if lhs_table != rhs_table:
            raise CatalogError(
                f"{source}: constraints.functional_dependencies[{i}]: lhs is in {lhs_table!r} but rhs is in "
                f"{rhs_table!r}; a functional dependency lies within one table"
            )
        fd = FunctionalDependency(lhs_table, lhs, rhs)
        if fd not in fds:
            fds.append(fd)
    return DeclaredConstraints(tuple(fks), tuple(unique), tuple(fds))


def _is_exact_key(columns: tuple[str, ...], keys: list[tuple[str, ...]]) -> bool:
    wanted = {c.lower() for c in columns}
    return any(key and {k.lower() for k in key} == wanted for key in keys)


@dataclass(frozen=True)
class PrivacyMark:
    """Whether one relation is private, and why (``pimento catalog`` shows the reason)."""

    relation: str
    private: bool
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {"relation": self.relation, "private": self.private, "reason": self.reason}


#: Why a relation is private or public; the keys are stable (``pimento catalog --json``).
REASONS = {
    "public": "listed in privacy.public",
    "private": "listed in privacy.private",
    "default": "not in privacy.public (private by default)",
    "caller": "added by --private",
}


def privacy_marks(
    catalog: Catalog, settings: Settings, *, private: Sequence[str] | None = (), source: str = "pimento.toml"
) -> tuple[PrivacyMark, ...]:
    """Each relation of ``catalog``: private or public, and why, in catalog order.

    The custodian decides in ``[privacy]``: a relation is public only when ``privacy.public``
    lists it; every other relation is private, whether ``privacy.private`` lists it or not
    (a table the custodian forgot is never public). ``private`` (the caller's, e.g.
    ``--private``) can only add private relations: it makes the settings stricter, never
    weaker. Unknown names, a relation in both lists, and a ``privacy.root`` that is not
    private raise a :class:`~pimento.errors.CatalogError` naming the entry.
    """

    def resolve(names: Sequence[str], where: str) -> list[str]:
        out = []
        for i, name in enumerate(names):
            try:
                out.append(catalog.table(name).name)
            except CatalogError as exc:
                raise CatalogError(f"{where}[{i}] = {name!r}: {exc.message}", hint=exc.hint) from None
        return out

    section = settings.privacy
    public = {n.lower() for n in resolve(section.public, f"{source}: privacy.public")}
    listed = {n.lower() for n in resolve(section.private or [], f"{source}: privacy.private")}
    both = [t.name for t in catalog.tables if t.name.lower() in public and t.name.lower() in listed]
    if both:
        raise CatalogError(f"{source}: {', '.join(map(repr, both))} listed both in privacy.private and privacy.public")
    added = {n.lower() for n in resolve([n.strip() for n in private or () if n.strip()], "--private (additional private relations)")}
    marks = []
    for table in catalog.tables:
        name = table.name.lower()
        if name in public and name not in added:
            marks.append(PrivacyMark(table.name, False, REASONS["public"]))
        elif name in listed:
            marks.append(PrivacyMark(table.name, True, REASONS["private"]))
        elif name in public:
            marks.append(PrivacyMark(table.name, True, REASONS["caller"]))
        else:
            marks.append(PrivacyMark(table.name, True, REASONS["default"]))
    if section.root is not None:
        root = resolve([section.root], f"{source}: privacy.root")[0]
        if not any(m.private and m.relation == root for m in marks):
            raise CatalogError(f"{source}: privacy.root = {root!r} is not a private relation")
    return tuple(marks)


def private_relations(
    catalog: Catalog, settings: Settings, *, private: Sequence[str] | None = (), source: str = "pimento.toml"
) -> tuple[str, ...]:
    """Names (catalog spelling) of the private relations: see :func:`privacy_marks`.

    Every relation is private unless ``[privacy] public`` lists it; ``private`` (the caller's)
    adds private relations and never removes one.
    """
    return tuple(m.relation for m in privacy_marks(catalog, settings, private=private, source=source) if m.private)


def merge_catalog(
    catalog: Catalog,
    settings: Settings,
    *,
    private: Sequence[str] | None = (),
    source: str = "pimento.toml",
) -> Catalog:
    """``catalog`` with the private marking and the declared constraints of ``settings`` applied.

    ``private`` adds private relations to ``[privacy]``'s (the caller can only make the
    marking stricter; see :func:`privacy_marks`). Declared unique keys join their table's keys, declared
    foreign keys are added with ``declared=True`` (one the engine already reports is kept once),
    declared functional dependencies are added. Unknown names raise a CatalogError that names
    the pimento.toml entry and suggests the closest name.
    """
    declared = declared_constraints(catalog, settings, source=source)
    marked = catalog.with_private(private_relations(catalog, settings, private=private, source=source))
    tables = []
    for table in marked.tables:
        keys = list(table.unique)
        for name, cols in declared.unique:
            if name == table.name and not _is_exact_key(cols, [table.primary_key, *keys]):
                keys.append(cols)
        tables.append(replace(table, unique=tuple(keys)))
    existing = {_fk_key(fk) for fk in catalog.foreign_keys}
    fks = list(catalog.foreign_keys) + [fk for fk in declared.foreign_keys if _fk_key(fk) not in existing]
    fds = list(catalog.functional_dependencies)
    fds += [fd for fd in declared.functional_dependencies if fd not in fds]
    return Catalog(tuple(tables), tuple(fks), tuple(fds))


def _fk_key(fk: ForeignKey) -> tuple:
    return (
        fk.table.lower(),
        tuple(c.lower() for c in fk.columns),
        fk.ref_table.lower(),
        tuple(c.lower() for c in fk.ref_columns),
    )
