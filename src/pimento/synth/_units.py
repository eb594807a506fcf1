"""The unit forest: privacy components, structural parents, 1:1 extensions, derived and link keys.

Every private table gets at most one *structural* foreign key (its parent in the unit tree).
A table whose structural key is unique (a 1:1 child such as Prescription -> MedicationOrders)
is an *extension*: its attributes are modelled in its parent's row. Other foreign keys are
either *derived* (they point at a strict ancestor on the structural path, such as
MedicationOrders.pat_id: the value is copied from that ancestor) or *links* (to public tables,
to other components, or to another row of a table in the same component).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pimento.errors import CatalogError, ConfigError, InternalError
from pimento.schema import Catalog, ForeignKey, Table

__all__ = ["UnitForest", "TableRole", "unit_forest"]


@dataclass
class TableRole:
    """What one table is in the unit forest: public, an entity (a node) or a 1:1 extension of its
    parent, with its component, structural parent, derived keys and links."""

    name: str
    kind: str  # "public" | "entity" | "extension"
    component: str | None = None
    parent_fk: ForeignKey | None = None
    derived: list[tuple[ForeignKey, str]] = field(default_factory=list)  # (fk, ancestor table)
    links: list[ForeignKey] = field(default_factory=list)
    extensions: list[str] = field(default_factory=list)  # direct 1:1 children
    children: list[str] = field(default_factory=list)  # direct entity children
    depth: int = 0

    @property
    def parent(self) -> str | None:
        return self.parent_fk.ref_table if self.parent_fk else None


@dataclass
class UnitForest:
    """The private tables arranged as trees of structural foreign keys under their component roots
    (a unit is one root row and every row that reaches it, PRIVACY.md), with every table's role."""

    catalog: Catalog
    root: str
    tables: dict[str, TableRole]
    components: list[str]  # component roots, the declared root first
    order: list[str]  # private tables, parents before children

    def entity_of(self, table: str) -> str:
        """The entity table whose rows carry ``table``'s attributes (itself unless an extension)."""
        t = self.tables[table]
        while t.kind == "extension":
            t = self.tables[self.parent_of(t.name)]
        return t.name

    def parent_of(self, table: str) -> str:
        """The parent table of ``table``, which the caller knows it has (an extension, a child entity)."""
        parent = self.tables[table].parent
        if parent is None:
            raise InternalError(f"unit forest: table {table!r} has no parent")
        return parent

    def ancestors(self, table: str) -> list[str]:
        out = []
        t = self.tables[table]
        while t.parent is not None:
            out.append(t.parent)
            t = self.tables[t.parent]
        return out

    def describe(self) -> dict[str, object]:
        return {
            "root": self.root,
            "components": self.components,
            "tables": {
                name: {
                    "kind": t.kind,
                    "component": t.component,
                    "parent": str(t.parent_fk) if t.parent_fk else None,
                    "derived": [str(fk) for fk, _ in t.derived],
                    "links": [str(fk) for fk in t.links],
                }
                for name, t in self.tables.items()
            },
        }


def _is_key(table: Table, columns: tuple[str, ...]) -> bool:
    wanted = {c.lower() for c in columns}
    keys = [table.primary_key, *table.unique]
    return any(key and {k.lower() for k in key} == wanted for key in keys) or any(
        key and {k.lower() for k in key} <= wanted for key in keys
    )


def _not_null(table: Table, columns: tuple[str, ...]) -> bool:
    return all(not table.column(c).nullable or c in table.primary_key for c in columns)


def unit_forest(catalog: Catalog, root: str | None) -> UnitForest:
    """Decide components and structural parents; raise clear errors for what cannot be handled."""
    if root is None:
        raise ConfigError(
            "no root private relation: the synthesizer needs the privacy unit",
            hint='pass --root TABLE or set root = "TABLE" under [privacy] in pimento.toml',
        )
    if not catalog.has_table(root):
        try:
            catalog.table(root)
        except CatalogError as exc:
            raise CatalogError(f"root relation {root!r} does not exist", hint=exc.hint or "pass --root TABLE") from None
    root = catalog.table(root).name
    if not catalog.table(root).private:
        raise ConfigError(f"root relation {root!r} is declared public", hint="the root must be a private relation")

    names = [t.name for t in catalog.tables if not t.name.startswith("_pimento")]
    private = [n for n in names if catalog.table(n).private]
    plans: dict[str, TableRole] = {}
    for n in names:
        if not catalog.table(n).private:
            for fk in catalog.foreign_keys_of(n):
                if catalog.table(fk.ref_table).private:
                    raise CatalogError(
                        f"public table {n!r} references private table {fk.ref_table!r} ({fk})",
                        hint=f"declare {n!r} private too (it would otherwise reveal keys of {fk.ref_table!r})",
                    )
            plans[n] = TableRole(n, "public")

    # Candidate structural parents: FKs to another private table, onto one of its keys.
    def candidates(t: str) -> list[ForeignKey]:
        out = []
        table = catalog.table(t)
        for fk in catalog.foreign_keys_of(t):
            ref = catalog.table(fk.ref_table)
            if ref.name == table.name or not ref.private or not _is_key(ref, fk.ref_columns):
                continue
            out.append(fk)
        return out

    cand = {t: candidates(t) for t in private}
    _check_acyclic(cand, catalog)

    # Reachability from the declared root (children = tables with a candidate FK to a reached table).
    reached_by: dict[str, str] = {}

    def grow(component_root: str) -> None:
        frontier = [component_root]
        reached_by[component_root] = component_root
        while frontier:
            nxt = []
            for t in private:
                if t in reached_by:
                    continue
                if any(fk.ref_table in reached_by and reached_by[fk.ref_table] == component_root for fk in cand[t]):
                    reached_by[t] = component_root
                    nxt.append(t)
            frontier = nxt

    grow(root)
    components = [root]
    while True:
        remaining = [t for t in private if t not in reached_by]
        if not remaining:
            break
        # A new component root: a remaining table with no candidate parent among remaining tables.
        roots = [t for t in remaining if not any(fk.ref_table in remaining for fk in cand[t])]
        new_root = sorted(roots)[0] if roots else sorted(remaining)[0]
        components.append(new_root)
        grow(new_root)

    # Depth (longest structural path from the component root) decides the structural parent.
    depth: dict[str, int] = {}

    def depth_of(t: str) -> int:
        if t in depth:
            return depth[t]
        comp = reached_by[t]
        if t == comp:
            depth[t] = 0
            return 0
        ds = [depth_of(fk.ref_table) for fk in cand[t] if reached_by.get(fk.ref_table) == comp and fk.ref_table != t]
        depth[t] = 1 + max(ds)
        return depth[t]

    for t in private:
        comp = reached_by[t]
        tp = TableRole(t, "entity", component=comp, depth=depth_of(t))
        if t != comp:
            options = [fk for fk in cand[t] if reached_by.get(fk.ref_table) == comp]
            table = catalog.table(t)
            options.sort(key=lambda fk: (-depth_of(fk.ref_table), not _not_null(table, fk.columns), catalog.foreign_keys.index(fk)))
            tp.parent_fk = options[0]
            if _is_key(table, tp.parent_fk.columns):
                tp.kind = "extension"
        plans[t] = tp

    order = sorted(private, key=lambda t: (components.index(reached_by[t]), depth[t], t))
    forest = UnitForest(catalog, root, plans, components, order)
    for t in private:
        tp = plans[t]
        if tp.parent is not None:
            parent = plans[tp.parent]
            (parent.extensions if tp.kind == "extension" else parent.children).append(t)
        ancestors = forest.ancestors(t)
        for fk in catalog.foreign_keys_of(t):
            if tp.parent_fk is not None and fk == tp.parent_fk:
                continue
            ref = catalog.table(fk.ref_table).name
            if ref in ancestors[1:] and _is_key(catalog.table(ref), fk.ref_columns):
                tp.derived.append((fk, ref))
            elif ref == t and tp.parent is None:
                tp.links.append(fk)
            else:
                tp.links.append(fk)
    return forest


def _check_acyclic(cand: dict[str, list[ForeignKey]], catalog: Catalog) -> None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(t: str) -> None:
        state[t] = 1
        stack.append(t)
        for fk in cand[t]:
            r = fk.ref_table
            if r not in cand:
                continue
            if state.get(r) == 1:
                cycle = stack[stack.index(r) :] + [r]
                raise CatalogError(
                    "cyclic foreign keys the synthesizer cannot handle: " + " -> ".join(cycle),
                    hint="declare one table of the cycle public, or drop one of its foreign keys from the catalog",
                )
            if state.get(r) is None:
                visit(r)
        stack.pop()
        state[t] = 2

    for t in cand:
        if t not in state:
            visit(t)
