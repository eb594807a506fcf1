"""The person as privacy unit: who owns a row, and each person's contribution to a count.

Under ``[privacy] unit = "Patient"`` two databases are neighbours when one is the other plus one
*person* (a row of the unit relation) and every row that *references* that person: a row of a
private relation references person p when some chain of declared foreign keys leads from it to
p's row of the unit (docs/privacy-unit.md). A row may reference several persons (two chains that
end at different persons), and a join result references the union of what its rows reference.

* :func:`person_paths` checks the setting against the catalog (the unit is a private relation with
  a key; every private relation reaches it) and lists, for each private relation, every chain of
  foreign keys from it to the unit.
* :func:`owner_expressions` says, from the query and the catalog only (public inputs), whether
  every join result of a :class:`~pimento.sql.ir.CountQuery` references at most one person on
  every database (the *one-person class*) or may reference several (R2T's LP case).
* :func:`contributions_sql` renders the SQL that computes c_p, the number of counted join results
  that reference person p, and :func:`person_contributions` runs it on an engine.

The mechanism that uses the contributions is :mod:`pimento.mechanisms.r2t`; the argument is in
``mechanisms/PROOF.md``, section 12. A foreign key counts as a reference only when the columns it
points at contain a key of the referenced relation (what a SQL foreign key is); one onto other
columns is ignored here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from pimento.engines.base import Engine
from pimento.errors import CatalogError, ConfigError, InternalError, UnsupportedQuery
from pimento.schema import Catalog, ForeignKey
from pimento.sql.ir import Attribute, CountQuery, Relation, quoted_if_needed

__all__ = [
    "Contributions",
    "OwnerExpression",
    "PersonPaths",
    "PersonSql",
    "contributions_sql",
    "owner_expressions",
    "person_contributions",
    "person_paths",
    "rows_with_several_owners",
]

#: Most foreign-key chains from one relation to the unit (a schema with more is refused, not enumerated).
MAX_CHAINS = 64
#: The setting's name, as the errors write it.
SETTING = "[privacy] unit"

Chain = tuple[ForeignKey, ...]


@dataclass(frozen=True)
class PersonPaths:
    """The unit relation, its key, and every foreign-key chain from each private relation to it.

    ``chains`` maps a private relation's name in lower case to its chains; the unit's own entry is
    the empty chain (a unit row is its own person). The last key of a chain points at ``key``.
    ``one_person_per_row``: the custodian's statement that every row's chains agree (each row
    references at most one person; :func:`rows_with_several_owners` checks it on the data); when
    False a row may reference several persons and every chain counts separately.
    """

    unit: str
    key: tuple[str, ...]
    chains: Mapping[str, tuple[Chain, ...]]
    one_person_per_row: bool = True

    def chains_of(self, table: str) -> tuple[Chain, ...]:
        found = self.chains.get(table.lower())
        if found is None:
            raise InternalError(f"{table!r} is not a private relation of the person paths")
        return found

    def unit_columns(self, fk: ForeignKey) -> tuple[str, ...]:
        """The referencing columns of ``fk`` (which points at the unit) in the order of the unit's key."""
        by_ref = {r.lower(): c for c, r in zip(fk.columns, fk.ref_columns, strict=True)}
        return tuple(by_ref[k.lower()] for k in self.key)


def _is_reference(catalog: Catalog, fk: ForeignKey) -> bool:
    """True when ``fk`` points at columns containing a key of a private relation (each row then references one row)."""
    ref = catalog.table(fk.ref_table)
    return ref.private and ref.is_key(fk.ref_columns) and fk.ref_table.lower() != fk.table.lower()


# proof: person-paths
def person_paths(catalog: Catalog, unit: str, *, source: str = "pimento.toml", one_person_per_row: bool = True) -> PersonPaths:
    """Check ``[privacy] unit`` against the catalog and list every chain to it.

    Raises:
        ConfigError: naming ``source`` and the key: the unit is unknown, public or has no key, a
            foreign key points into it by other columns than its key, or a private relation
            reaches it through no declared foreign key (the relation is named).
    """
    where = f"{source}: {SETTING} = {unit!r}"
    try:
        table = catalog.table(unit)
    except CatalogError as exc:
        raise ConfigError(f"{where}: no such relation", hint=exc.hint or 'name the relation of one person, or use "tuple"') from None
    if not table.private:
        raise ConfigError(f"{where}: the relation is public", hint="the unit must be a private relation (one row per person)")
    key = table.primary_key or next(iter(table.unique), ())
    if not key:
        raise ConfigError(f"{where}: the relation has no key", hint="declare its primary key or a unique key ([[constraints.unique]])")
    for fk in catalog.foreign_keys_into(table.name):
        if fk.table.lower() != table.name.lower() and {c.lower() for c in fk.ref_columns} != {k.lower() for k in key}:
            raise ConfigError(
                f"{where}: foreign key {fk} references the unit by ({', '.join(fk.ref_columns)}), not by its key ({', '.join(key)})",
                hint="declare the foreign key onto the unit's key",
            )
    private = [t.name for t in catalog.tables if t.private and not t.name.startswith("_pimento")]
    chains: dict[str, tuple[Chain, ...]] = {}
    for name in private:
        found = _chains(catalog, name, table.name, ())
        if not found:
            raise ConfigError(
                f"{where}: private relation {name!r} does not reach {table.name!r} through declared foreign keys",
                hint=f"declare a foreign key from {name!r} towards {table.name!r} ([[constraints.foreign_keys]]), "
                f'list {name!r} under [privacy] public if it holds no personal data, or keep unit = "tuple"',
            )
        chains[name.lower()] = found
    return PersonPaths(table.name, tuple(key), chains, one_person_per_row)


def _chains(catalog: Catalog, start: str, unit: str, seen: tuple[str, ...]) -> tuple[Chain, ...]:
    """Every simple chain of references from ``start`` to ``unit`` (the empty chain when start is the unit)."""
    if start.lower() == unit.lower():
        return ((),)
    out: list[Chain] = []
    for fk in catalog.foreign_keys_of(start):
        if not _is_reference(catalog, fk) or fk.ref_table.lower() in seen:
            continue
        for rest in _chains(catalog, fk.ref_table, unit, (*seen, start.lower())):
            out.append((fk, *rest))
            if len(out) > MAX_CHAINS:
                raise ConfigError(
                    f"{SETTING}: relation {start!r} reaches {unit!r} by more than {MAX_CHAINS} chains of foreign keys",
                    hint='keep unit = "tuple" for this schema',
                )
    return tuple(out)


# --------------------------------------------------------------------------------- one query


@dataclass(frozen=True)
class OwnerExpression:
    """The person a row of ``alias`` references through ``chain``, as seen from the query.

    ``start`` are the query's attributes holding the first foreign key's values (after following
    the chain through the query's own joins), ``rest`` the part of the chain the query does not
    join (looked up in the database; empty when ``start`` holds the person's key itself).
    ``canonical`` is equal for two expressions that are equal on every database (same join
    classes, same remaining chain).
    """

    alias: str
    start: tuple[Attribute, ...]
    rest: Chain
    canonical: tuple[Any, ...]


# proof: owner-class
def owner_expressions(query: CountQuery, catalog: Catalog, paths: PersonPaths) -> tuple[OwnerExpression, ...]:
    """One expression per group of owner expressions that are equal on every admitted database.

    The query is in the one-person class exactly when this returns at most one expression: every
    join result then references at most one person (the query's equi-joins make the expressions
    equal); with two or more, some database has a result that references two persons (R2T's LP
    case). Decided from the query and the catalog only. Each group is represented by its
    expression with the shortest chain left to look up.
    """
    return tuple(min(group, key=lambda e: (len(e.rest), repr(e.canonical))) for group in _owner_groups(query, catalog, paths))


def _owner_groups(query: CountQuery, catalog: Catalog, paths: PersonPaths) -> list[tuple[OwnerExpression, ...]]:
    """Owner expressions (one per private relation of the query and chain), grouped when provably equal.

    Two expressions with the same ``canonical`` are equal on every database. When
    ``paths.one_person_per_row`` (every row's chains agree: section 12 of mechanisms/PROOF.md),
    the expressions of one relation are equal where they are not NULL, so a relation's expressions
    form one group; groups sharing an expression merge when that expression names a person in
    every counted result (:func:`_never_null`). A shared expression that may be NULL merges a group
    only into one holding all of its expressions (:func:`_absorb`): two relations joined through a
    row that references nobody may each name another person.
    """
    classes = query.equivalence_classes

    def cls(a: Attribute) -> frozenset[Attribute]:
        return next((c for c in classes if a in c), frozenset({a}))

    exprs: list[OwnerExpression] = []
    for rel in query.relations:
        if catalog.table(rel.table).private:
            exprs.extend(_follow(query, paths, rel.alias, chain, cls) for chain in paths.chains_of(rel.table))
    parent = list(range(len(exprs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(exprs):
        for j in range(i):
            b = exprs[j]
            same_row = paths.one_person_per_row and a.alias == b.alias
            bridge = a.canonical == b.canonical and (not paths.one_person_per_row or _never_null(a, query, catalog, cls))
            if same_row or bridge:
                parent[find(i)] = find(j)
    groups: dict[int, dict[tuple[Any, ...], OwnerExpression]] = {}
    for i, e in enumerate(exprs):
        groups.setdefault(find(i), {}).setdefault(e.canonical, e)
    merged = _absorb(list(groups.values())) if paths.one_person_per_row else list(groups.values())
    return sorted((tuple(g[k] for k in sorted(g, key=repr)) for g in merged), key=lambda g: repr(g[0].canonical))


def _absorb(groups: list[dict[tuple[Any, ...], OwnerExpression]]) -> list[dict[tuple[Any, ...], OwnerExpression]]:
    """Each group whose expressions all occur in a larger (or equal) group, merged into the first such group.

    A group's non-NULL values are equal in every result; those of an absorbed group are values of
    expressions of the absorbing group (equal canonical: equal on every database), so the merged
    group's are too. Only into groups that absorbed nothing else's superset: each merged group keeps
    the expressions of its largest member, so the argument holds for every member (PROOF.md 12.1).
    """
    kept: list[dict[tuple[Any, ...], OwnerExpression]] = []
    for group in sorted(groups, key=lambda g: (-len(g), repr(sorted(map(repr, g))))):
        home = next((k for k in kept if set(group) <= set(k)), None)
        if home is None:
            kept.append(dict(group))
    return kept


def _never_null(e: OwnerExpression, query: CountQuery, catalog: Catalog, cls: Any) -> bool:
    """Whether ``e`` names a person in every counted result, from the schema: each start attribute is
    joined (NULL never joins) or a NOT NULL column, and so is every later key of the chain looked up
    (the foreign keys hold, so each lookup finds its row)."""
    tables = {r.alias: r.table for r in query.relations}
    for a in e.start:
        if len(cls(a)) < 2 and catalog.table(tables[a.alias]).column(a.column).nullable:
            return False
    return not any(catalog.table(fk.table).column(c).nullable for fk in e.rest[1:] for c in fk.columns)


def _follow(query: CountQuery, paths: PersonPaths, alias: str, chain: Chain, cls: Any) -> OwnerExpression:
    """Walk ``chain`` from ``alias`` through the query's joins as far as they go."""
    current, i = alias, 0
    while i < len(chain):
        fk = chain[i]
        attrs = tuple(Attribute(current, c) for c in fk.columns)
        nxt = next((r.alias for r in query.relations if r.table.lower() == fk.ref_table.lower()), None)
        if nxt is not None and all(cls(a) == cls(Attribute(nxt, r)) and len(cls(a)) > 1 for a, r in zip(attrs, fk.ref_columns, strict=True)):
            current, i = nxt, i + 1
            continue
        if i == len(chain) - 1:  # the last key points at the unit: its columns hold the person
            start = tuple(Attribute(current, c) for c in paths.unit_columns(fk))
            return OwnerExpression(alias, start, (), ("key", tuple(cls(a) for a in start)))
        return OwnerExpression(alias, attrs, chain[i:], ("lookup", tuple(cls(a) for a in attrs), chain[i:]))
    start = tuple(Attribute(current, k) for k in paths.key)
    return OwnerExpression(alias, start, (), ("key", tuple(cls(a) for a in start)))


def _check_count(query: CountQuery, groups: list[tuple[OwnerExpression, ...]]) -> None:
    """COUNT(DISTINCT c) is supported when c is the person's one-column key (in the one owner group)."""
    count = query.count
    if not count.distinct:
        return
    assert count.column is not None, "COUNT(DISTINCT *) is refused by the IR"
    ok = len(groups) == 1 and any(
        not e.rest and len(e.start) == 1 and count.column in e.canonical[1][0] for e in groups[0]
    )
    if not ok:
        raise UnsupportedQuery(
            "distinct_under_person_unit",
            f"{count} under the person unit: only COUNT(DISTINCT) of the person's own key is supported",
            hint="count the rows (COUNT(*)), or count distinct persons by their key",
        )


# --------------------------------------------------------------------------------- the SQL


@dataclass(frozen=True)
class PersonSql:
    """The statements behind :func:`person_contributions` (one dialect).

    ``per_person``: one row per person referenced by a counted result: the person's key columns,
    then c_p. ``summary``: one row: counted results, results referencing some person, the most
    persons one result references. ``pairs``: (result number, person key...) for every result and
    person it references (the LP's input).
    """

    per_person: str
    summary: str
    pairs: str
    key_width: int


_RID = "_pim_rid"


def contributions_sql(query: CountQuery, catalog: Catalog, paths: PersonPaths, dialect: str = "duckdb") -> PersonSql:
    """Render the contribution statements of ``query`` under the person unit (see :class:`PersonSql`).

    The counted results are the query's join results (with the counted column not NULL for
    COUNT(col)); each gets a number, and each owner expression its person (NULL: none). A result's
    persons are the distinct non-NULL ones, over every expression (also under ``one_person_per_row``,
    where a group's expressions agree when not NULL, but one may be NULL where another is not).
    """
    groups = _owner_groups(query, catalog, paths)
    _check_count(query, groups)
    owners = [e for group in groups for e in group]  # every chain: a NULL in one does not hide the person
    width = len(paths.key)
    base = sqlglot.parse_one(query.to_sql(dialect), read=dialect)
    assert isinstance(base, exp.Select)
    outputs: list[exp.Expr] = [exp.alias_(exp.Window(this=exp.RowNumber()), _RID)]
    starts: list[list[str]] = []
    for i, owner in enumerate(owners):
        names = [f"_pim_a{i}_{j}" for j in range(len(owner.start))]
        starts.append(names)
        outputs.extend(exp.alias_(_column(a.alias, a.column), n) for a, n in zip(owner.start, names, strict=True))
    base.set("expressions", outputs)
    if query.count.column is not None:
        base = base.where(exp.Not(this=exp.Is(this=_column(query.count.column.alias, query.count.column.column), expression=exp.Null())))
    branches = [_owner_branch(i, owner, names, width, paths) for i, (owner, names) in enumerate(zip(owners, starts, strict=True))]
    keys = [f"_pim_k{j}" for j in range(width)]
    if branches:
        union: exp.Expr = branches[0]
        for branch in branches[1:]:
            union = exp.Union(this=union, expression=branch, distinct=True)
    else:  # no private relation: no result references anyone
        union = exp.select(exp.alias_(exp.column(_RID), _RID), *[exp.alias_(exp.Null(), k) for k in keys]).from_("_pim_r").where(exp.false())
    with_ = exp.With(expressions=[exp.CTE(this=base, alias=exp.TableAlias(this=exp.to_identifier("_pim_r"))),
                                  exp.CTE(this=union, alias=exp.TableAlias(this=exp.to_identifier("_pim_o")))])

    def stmt(select: exp.Select) -> str:
        select.set("with_", with_.copy())
        return select.sql(dialect=dialect)

    per_person = exp.select(*keys, exp.alias_(exp.Count(this=exp.Star()), "_pim_c")).from_("_pim_o").group_by(*keys)
    per_result = exp.select(_RID, exp.alias_(exp.Count(this=exp.Star()), "_pim_n")).from_("_pim_o").group_by(_RID)
    summary = exp.select(
        exp.alias_(exp.select(exp.Count(this=exp.Star())).from_("_pim_r").subquery(), "_pim_results"),
        exp.alias_(exp.select(exp.Count(this=exp.Distinct(expressions=[exp.column(_RID)]))).from_("_pim_o").subquery(), "_pim_owned"),
        exp.alias_(exp.select(exp.Coalesce(this=exp.Max(this=exp.column("_pim_n")), expressions=[exp.Literal.number(0)]))
                   .from_(per_result.subquery("_pim_m")).subquery(), "_pim_most"),
    )
    pairs = exp.select(_RID, *keys).from_("_pim_o").order_by(_RID, *keys)
    return PersonSql(stmt(per_person), stmt(summary), stmt(pairs), width)


def _column(table: str, column: str) -> exp.Column:
    return exp.Column(this=quoted_if_needed(column), table=quoted_if_needed(table))


def _owner_branch(i: int, owner: OwnerExpression, names: list[str], width: int, paths: PersonPaths) -> exp.Select:
    """``SELECT rid, person key FROM _pim_r [LEFT JOIN the chain's rest] WHERE person IS NOT NULL``."""
    select = exp.select(exp.column(_RID, table="_pim_r")).from_("_pim_r")
    current: list[exp.Expr] = [exp.column(n, table="_pim_r") for n in names]
    for j in range(len(owner.rest) - 1):  # join every relation of the rest but the unit; the last key holds the person
        fk, nxt, alias = owner.rest[j], owner.rest[j + 1], f"_pim_l{i}_{j}"
        on = exp.and_(*[exp.EQ(this=_column(alias, r), expression=c) for r, c in zip(fk.ref_columns, current, strict=True)])
        select = select.join(exp.alias_(exp.Table(this=quoted_if_needed(fk.ref_table)), alias, table=True), on=on, join_type="LEFT")
        last = j + 1 == len(owner.rest) - 1
        current = [_column(alias, c) for c in (paths.unit_columns(nxt) if last else nxt.columns)]
    if len(current) != width:
        raise InternalError("an owner expression does not have the unit key's width")
    select = select.select(*[exp.alias_(c, f"_pim_k{k}") for k, c in enumerate(current)])
    return select.where(exp.and_(*[exp.Not(this=exp.Is(this=c.copy(), expression=exp.Null())) for c in current]))


# --------------------------------------------------------------------------------- running it


@dataclass(frozen=True)
class Contributions:
    """Each referenced person's contribution c_p to a count, and the results that reference nobody.

    ``counts`` are the c_p (persons with c_p = 0 are absent; the order means nothing), ``public``
    the counted results referencing no person, ``most_owners`` the most persons one counted result
    references (0 or 1 in the one-person class). ``owner_sets`` (only when ``most_owners > 1`` and
    asked for) lists each owned result's persons as indices into a person numbering.
    The count itself is ``total``: ``public + sum(counts)`` when every result has at most one owner.
    """

    counts: tuple[int, ...]
    public: int
    total: int
    most_owners: int
    owner_sets: tuple[tuple[int, ...], ...] = ()

    @property
    def one_person(self) -> bool:
        return self.most_owners <= 1

    @property
    def largest(self) -> int:
        """max_p c_p (0 when nobody contributes): the downward sensitivity of the count."""
        return max(self.counts, default=0)


def person_contributions(engine: Engine, query: CountQuery, catalog: Catalog, paths: PersonPaths, *, with_sets: bool = True) -> Contributions:
    """Run :func:`contributions_sql` on ``engine``. COUNT(DISTINCT key) gives c_p = 1 per person counted."""
    sql = contributions_sql(query, catalog, paths, engine.dialect)
    counts = [int(row[-1]) for row in engine.execute(sql.per_person).rows]
    total, owned, most = (int(v) for v in engine.execute(sql.summary).rows[0])
    public = total - owned
    if query.count.distinct:  # the counted column is the person's key: one per person, nothing public
        return Contributions(tuple(1 for _ in counts), 0, len(counts), min(most, 1))
    sets: tuple[tuple[int, ...], ...] = ()
    if most > 1 and with_sets:
        numbering: dict[tuple[Any, ...], int] = {}
        grouped: dict[int, list[int]] = {}
        for row in engine.execute(sql.pairs).rows:
            person = numbering.setdefault(tuple(row[1:]), len(numbering))
            grouped.setdefault(int(row[0]), []).append(person)
        sets = tuple(tuple(v) for _, v in sorted(grouped.items()))
    return Contributions(tuple(counts), public, total, most, sets)


def rows_with_several_owners(engine: Engine, catalog: Catalog, paths: PersonPaths) -> tuple[str, ...]:
    """The private relations having a row whose chains reach two different persons (a custodian check).

    ``one_person_per_row`` holds on the data exactly when this is empty. It reads the private data:
    run it when the deployment is set up (beside ``[constraints] validate_on_load``), never as part
    of an analyst's release.
    """
    several = PersonPaths(paths.unit, paths.key, paths.chains, one_person_per_row=False)
    found = []
    for table in catalog.tables:
        if table.name.lower() in paths.chains and len(paths.chains[table.name.lower()]) > 1:
            query = CountQuery((Relation(table.name, table.name),))
            if person_contributions(engine, query, catalog, several, with_sets=False).most_owners > 1:
                found.append(table.name)
    return tuple(found)
