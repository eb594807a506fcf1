"""Information implication (Section 4.2.2): a policy ``P`` becomes ``P+``, a step of compilation.

For each location ``(R, A)`` of a data type that a *negative* norm governs, every functional
dependency ``R.x -> R.A`` (declared in the catalog or under ``grounding.dependencies``) makes
``R.x`` a location too (same row filter): ``x`` reveals ``A``. Every single-column foreign key
``S.y -> R.x`` makes ``S.y`` a location (rows of ``S`` whose referenced ``R`` row passes the
filter), and each column of a multi-column key likewise (matched on the whole key), transitively.
Positive norms are never extended.

:func:`pimento.policy.compiler.compile_policy` applies it (step ``information implication``), so
every :class:`~pimento.policy.compiled.CompiledPolicy` is ``P+`` and records the result in
``CompiledPolicy.implication``; :func:`pimento.policy.checks.run_checks` reports that record. It
reads no data. A compiled policy that records no implication (a file written by an older
version) is refused by the enforcer (:meth:`~pimento.policy.compiled.CompiledPolicy.require_implication`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import sqlglot
from sqlglot import exp

from pimento.errors import PolicyError
from pimento.policy.compiled import CompiledPolicy, Location
from pimento.policy.grounding_sql import declared_subject, subject_expression_sql
from pimento.policy.model import Policy
from pimento.policy.views_sql import PREFIX, quote, row_key_sql
from pimento.schema import Catalog, FunctionalDependency

__all__ = ["apply_implications", "parse_dependency", "policy_dependencies"]


def parse_dependency(text: str, catalog: Catalog) -> FunctionalDependency:
    """A ``grounding.dependencies`` entry ``Table.lhs -> Table.rhs`` (one table; tuples in parentheses).

    Raises:
        PolicyError: the text cannot be read, or names two tables.
        CatalogError: an unknown table or column.
    """
    m = re.match(r"^\s*(\w+)\.\(?([\w\s,]+)\)?\s*->\s*(\w+)\.\(?([\w\s,]+)\)?\s*$", text)
    if not m or m.group(1).lower() != m.group(3).lower():
        raise PolicyError(f"grounding.dependencies: cannot read {text!r}", clause="grounding.dependencies",
                          hint="write 'Table.lhs -> Table.rhs' (same table)")
    table = catalog.table(m.group(1))
    lhs = tuple(table.column(c.strip()).name for c in m.group(2).split(","))
    rhs = tuple(table.column(c.strip()).name for c in m.group(4).split(","))
    return FunctionalDependency(table.name, lhs, rhs)


def policy_dependencies(catalog: Catalog, policy: Policy | None) -> list[FunctionalDependency]:
    """The functional dependencies implication follows: the catalog's, then the policy's own."""
    deps = list(catalog.functional_dependencies)
    if policy is not None:
        deps += [parse_dependency(d, catalog) for d in policy.grounding.dependencies]
    return deps


def _rename_alias(sql: str, old: str, new: str, dialect: str) -> str:
    tree = sqlglot.parse_one(f"SELECT 1 WHERE {sql}", read=dialect).args["where"].this
    for col in tree.find_all(exp.Column):
        if col.table == old:
            col.set("table", exp.to_identifier(new))
    return tree.sql(dialect)


def apply_implications(
    compiled: CompiledPolicy, catalog: Catalog, dependencies: list[FunctionalDependency]
) -> CompiledPolicy:
    """``P+``: ``compiled`` with its negative norms extended by the locations their data determines,
    recording the report in ``implication`` (one entry per added location: norm, location,
    because, overrides_permits_of).

    Idempotent: a policy that records its implication already (every policy
    :func:`~pimento.policy.compiler.compile_policy` returns) is returned as it is.
    """
    if compiled.implication is not None:
        return compiled
    dialect = compiled.dialect
    subj = compiled.principals[compiled.subject_principal]
    locations = dict(compiled.locations)
    norm_locations = {k: list(v) for k, v in compiled.norm_locations.items()}
    report: list[dict[str, Any]] = []
    for norm in compiled.norms:
        if norm.positive:
            continue
        existing = {(locations[i].relation, locations[i].attribute, locations[i].where_sql)
                    for i in norm_locations[norm.id]}
        work = [locations[i] for i in norm_locations[norm.id]]
        depth = 0
        while work:
            loc = work.pop(0)
            derived: list[tuple[str, str, str, str]] = []  # relation, attribute, where, because
            for fd in dependencies:
                if fd.table.lower() == loc.relation.lower() and loc.attribute in fd.rhs and len(fd.lhs) == 1 \
                        and fd.lhs[0] != loc.attribute:
                    derived.append((loc.relation, fd.lhs[0], loc.where_sql, f"FD {fd}"))
            for fk in catalog.foreign_keys_into(loc.relation):
                refs = [c.lower() for c in fk.ref_columns]
                if loc.attribute.lower() not in refs:
                    continue
                # the referencing column determines the referenced row, hence its cells; a
                # multi-column key: each of its columns, matched on the whole key (EXISTS)
                depth += 1
                alias = f"{PREFIX}u{depth}"
                inner = _rename_alias(loc.where_sql, "t", alias, dialect)
                match = " AND ".join(f"{quote(alias)}.{quote(r)} = t.{quote(c)}" for c, r in zip(fk.columns, fk.ref_columns))
                where = (
                    f"EXISTS (SELECT 1 FROM {quote(loc.relation)} AS {quote(alias)} WHERE {match} AND ({inner}))"
                    if len(fk.columns) > 1 else
                    f"COALESCE(t.{quote(fk.columns[0])} IN (SELECT {quote(alias)}.{quote(loc.attribute)} "
                    f"FROM {quote(loc.relation)} AS {quote(alias)} WHERE {inner}), FALSE)"
                )
                column = fk.columns[refs.index(loc.attribute.lower())]
                derived.append((fk.table, column, where, f"FK {fk}"))
            for relation, attribute, where, because in derived:
                if (relation, attribute, where) in existing:
                    continue
                existing.add((relation, attribute, where))
                key = compiled.tables[relation]["key"]
                if not key:
                    continue
                new_id = f"{loc.data_type}+{relation}.{attribute}#{len(locations) + 1}"
                new = Location(
                    new_id, relation, attribute, where,
                    subject_expression_sql(catalog, relation, declared_subject(compiled.subject_paths, relation), subj, f"implication of {norm.id}"),
                    row_key_sql("t", tuple(key), dialect), loc.data_type, implied_by=f"{loc.relation}.{loc.attribute} via {because}",
                )
                locations[new_id] = new
                norm_locations[norm.id].append(new_id)
                work.append(new)
                report.append({"norm": norm.id, "location": f"{relation}.{attribute}", "because": new.implied_by})
    # permitted information that determines prohibited information
    for item in list(report):
        rel, attr = item["location"].split(".")
        permits = [
            n.id for n in compiled.norms if n.positive and any(
                (locations[i].relation, locations[i].attribute) == (rel, attr)
                for i in norm_locations[n.id])
        ]
        item["overrides_permits_of"] = permits
    return replace(compiled, locations=locations, norm_locations={k: tuple(v) for k, v in norm_locations.items()},
                   implication=tuple(report))
