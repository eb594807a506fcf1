"""Policy-to-view compiler: norms -> :class:`~pimento.policy.compiled.CompiledPolicy`.

For a norm ``N`` the compiler grounds (Section 4.2.1 of the paper):

* role views ``role_<r>(agent)`` for its sender, recipient and subject roles;
* condition views ``cond_<c>(sender?, recipient?, subject?)`` (lookups, joins, recursive CTEs);
* the locations of its data types, whose UNION ALL is its data view
  ``data_<N>(relation, row_key, attribute, value, subject)``
  (:func:`pimento.policy.views_sql.data_view_sql`), each value tagged with its provenance
  ``o = (relation, row key, attribute)``.

Identities are compared as text (``CAST(... AS VARCHAR)``) so that context values, which
arrive as text, are bound as parameters without any conversion inside SQL. Context values
never appear in SQL text: the runtime binds them through one ``__p_ctx`` CTE with ``?``
placeholders (see :mod:`pimento.policy.enforce`).

Every grounded SQL fragment is parsed with sqlglot (one expression, no statements), its
tables and columns checked against the catalog, and run once with ``LIMIT 0`` on the
engine; a fragment that fails names its clause (coverage: :mod:`pimento.policy.grounding_sql`).
The result is frozen (:mod:`pimento.policy.compiled`); the SQL text of its views is written by
:mod:`pimento.policy.views_sql`.
"""

from __future__ import annotations

from sqlglot import exp

from pimento.engines.base import Engine
from pimento.errors import CatalogError, PolicyError
from pimento.policy.compiled import (
    FORMAT,
    CompiledCondition,
    CompiledPolicy,
    CompiledRole,
    Location,
    load_compiled_policy,
    schema_fingerprint,
)
from pimento.policy.grounding_sql import (
    GroundingTarget,
    declared_subject,
    row_key_columns,
    subject_expression_sql,
)
from pimento.policy.implication import apply_implications, policy_dependencies
from pimento.policy.model import (
    ANY,
    VARIABLES,
    All,
    AnyOf,
    Atom,
    Cond,
    Const,
    GroundingSpec,
    Norm,
    Not,
    Policy,
    PurposeIs,
    RoleIs,
)
from pimento.policy.views_sql import NO_SUBJECT, PREFIX, location_view_sql, quote, row_key_sql
from pimento.schema import Catalog

__all__ = [
    "compile_policy",
    # the rest of this module's former face, re-exported from their homes (compiled.py, views_sql.py)
    "FORMAT",
    "NO_SUBJECT",
    "PREFIX",
    "CompiledCondition",
    "CompiledPolicy",
    "CompiledRole",
    "Location",
    "load_compiled_policy",
    "quote",
    "schema_fingerprint",
]


# --------------------------------------------------------------------------- compiler


def compile_policy(policy: Policy, catalog: Catalog, engine: Engine | None = None, *, dialect: str | None = None) -> CompiledPolicy:
    """Compile every norm of ``policy`` to views over ``catalog`` (coverage: each clause compiles).

    ``engine`` (optional) is used to run every fragment once with ``LIMIT 0``.

    The steps, in order (each raises on the first clause it cannot ground): principals, roles,
    conditions, purposes, declared subject paths, data-type locations, norm coverage, then
    information implication (:mod:`pimento.policy.implication`: P -> P+, reads no data), so the
    result withholds what a prohibited value's functional dependencies and foreign keys reveal
    whether or not :func:`pimento.policy.checks.run_checks` runs afterwards.

    Raises:
        PolicyError: naming the clause (norm id, or ``grounding.<kind>.<name>``) that
            cannot be grounded: unknown role, data type, purpose or condition, an unmapped
            data type, SQL that does not parse or run, a missing table or column.
    """
    g = policy.grounding
    target = GroundingTarget(catalog, engine, dialect or (engine.dialect if engine is not None else None) or "duckdb")
    principals = _ground_principals(g, catalog)
    subject = principals[g.subject_principal]
    roles = _ground_roles(g, target, principals)
    conditions = _ground_conditions(g, target, principals)
    purposes, purpose_includes = _ground_purposes(g)
    subject_paths = _ground_subject_paths(g, target, subject)
    locations, data_types, unmapped = _ground_locations(g, target, subject)
    norm_locations = _norm_coverage(policy, roles, conditions, purposes, data_types, unmapped)
    compiled = CompiledPolicy(
        name=policy.name,
        dialect=target.dialect,
        principals=principals,
        subject_principal=g.subject_principal,
        purposes=purposes,
        roles=roles,
        conditions=conditions,
        locations=locations,
        data_types=data_types,
        norms=tuple(policy.norms),
        norm_locations=norm_locations,
        tables=_table_layouts(catalog),
        purpose_includes=purpose_includes,
        fingerprint=schema_fingerprint(catalog),
        subject_paths=subject_paths,
    )
    return _imply(compiled, policy, catalog)


def _imply(compiled: CompiledPolicy, policy: Policy, catalog: Catalog) -> CompiledPolicy:
    """Step ``information implication``: P -> P+ (:func:`pimento.policy.implication.apply_implications`)."""
    try:
        dependencies = policy_dependencies(catalog, policy)
    except CatalogError as exc:
        raise PolicyError(f"grounding.dependencies: {exc.message}", clause="grounding.dependencies", hint=exc.hint) from None
    return apply_implications(compiled, catalog, dependencies)


def _ground_principals(g: GroundingSpec, catalog: Catalog) -> dict[str, dict[str, str]]:
    """Principal kind -> the relation and key column that identify its members."""
    principals: dict[str, dict[str, str]] = {}
    for name, p in g.principals.items():
        clause = f"grounding.principals.{name}"
        try:
            table = catalog.table(p.relation)
            column = table.column(p.key)
        except CatalogError as exc:
            raise PolicyError(f"{clause}: {exc.message}", clause=clause, hint=exc.hint) from None
        principals[name] = {"relation": table.name, "key": column.name}
    if g.subject_principal not in principals:
        raise PolicyError(
            f"grounding.subject_principal: unknown principal {g.subject_principal!r}",
            clause="grounding.subject_principal",
            hint=f"principals: {', '.join(principals)}",
        )
    return principals


def _ground_roles(g: GroundingSpec, target: GroundingTarget, principals: dict[str, dict[str, str]]) -> dict[str, CompiledRole]:
    """Role -> its view ``SELECT agent``: the principal's keys that satisfy the role predicate."""
    roles: dict[str, CompiledRole] = {}
    for name, r in g.roles.items():
        clause = f"grounding.roles.{name}"
        if name == ANY:
            raise PolicyError(f"{clause}: 'any' is reserved for the wildcard role", clause=clause)
        if r.principal not in principals:
            raise PolicyError(f"{clause}: unknown principal {r.principal!r}", clause=clause,
                              hint=f"principals: {', '.join(principals)}")
        pr = principals[r.principal]
        where = "TRUE"
        if r.where:
            where = target.predicate(r.where, pr["relation"], clause=clause, what="the role predicate")
        sql = f"SELECT CAST(t.{quote(pr['key'])} AS VARCHAR) AS agent FROM {quote(pr['relation'])} AS t WHERE {where}"
        target.probe(sql, clause=clause, what="the role view")
        roles[name] = CompiledRole(name, r.principal, sql)
    return roles


def _ground_conditions(g: GroundingSpec, target: GroundingTarget, principals: dict[str, dict[str, str]]) -> dict[str, CompiledCondition]:
    """Condition -> its view of (sender?, recipient?, subject?) identities, as text."""
    dialect = target.dialect
    conditions: dict[str, CompiledCondition] = {}
    for name, c in g.conditions.items():
        clause = f"grounding.conditions.{name}"
        tree = target.fragment(c.sql, clause=clause, what="the condition view", select=True)
        outputs = [s.alias_or_name.lower() for s in tree.selects] if isinstance(tree, exp.Select) else []
        probed = target.probe(tree.sql(dialect), clause=clause, what="the condition view")
        if probed:
            outputs = list(probed)
        variables = tuple(v for v in VARIABLES if v in outputs)
        extra = [o for o in outputs if o not in VARIABLES]
        if not variables or extra:
            raise PolicyError(
                f"{clause}: a condition view outputs only columns named sender, recipient, subject; got {outputs}",
                clause=clause,
            )
        for var, kind in c.principals.items():
            if kind not in principals:
                raise PolicyError(f"{clause}: unknown principal {kind!r} for {var}", clause=clause)
        for var in ("sender", "recipient"):
            if var in variables and var not in c.principals:
                raise PolicyError(
                    f"{clause}: declare the principal kind of its {var} column (principals: {{{var}: KIND}})",
                    clause=clause,
                    hint="so that an identity of another kind with the same id never matches",
                )
        recursive = bool(tree.args.get("with_") and tree.args["with_"].args.get("recursive"))
        cols = ", ".join(f"CAST(q.{quote(v)} AS VARCHAR) AS {v}" for v in variables)
        sql = f"SELECT DISTINCT {cols} FROM ({tree.sql(dialect)}) AS q"
        conditions[name] = CompiledCondition(name, variables, dict(c.principals), sql, recursive)
    return conditions


def _ground_purposes(g: GroundingSpec) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """Purpose -> its context values, and purpose -> its direct sub-purposes (an acyclic hierarchy)."""
    purposes: dict[str, tuple[str, ...]] = {}
    for name, p in g.purposes.items():
        if name == ANY:
            raise PolicyError("grounding.purposes.any: 'any' is reserved for the wildcard purpose", clause="grounding.purposes.any")
        if not p.values:
            raise PolicyError(f"grounding.purposes.{name}: a purpose needs at least one value", clause=f"grounding.purposes.{name}")
        purposes[name] = tuple(p.values)
    purpose_includes: dict[str, tuple[str, ...]] = {}
    for name, p in g.purposes.items():
        for sub in p.includes:
            if sub not in purposes:
                raise PolicyError(f"grounding.purposes.{name}: includes unknown purpose {sub!r}",
                                  clause=f"grounding.purposes.{name}", hint=f"purposes: {', '.join(purposes)}")
        if p.includes:
            purpose_includes[name] = tuple(p.includes)
    for name in purposes:  # no cycles: a purpose never includes itself
        seen: set[str] = set()
        frontier = set(purpose_includes.get(name, ()))
        while frontier:
            if name in frontier:
                raise PolicyError(f"grounding.purposes.{name}: the purpose hierarchy has a cycle through {name!r}",
                                  clause=f"grounding.purposes.{name}")
            seen |= frontier
            frontier = {s for f in frontier for s in purpose_includes.get(f, ())} - seen
    return purposes, purpose_includes


def _ground_subject_paths(g: GroundingSpec, target: GroundingTarget, subject: dict[str, str]) -> dict[str, str]:
    """Relation -> its declared way to the data subject (``grounding.subjects``), each checked to run
    (also used for the locations that implication adds later)."""
    subject_paths: dict[str, str] = {}
    for rel_name, path in g.subjects.items():
        clause = f"grounding.subjects.{rel_name}"
        try:
            table = target.catalog.table(rel_name)
        except CatalogError as exc:
            raise PolicyError(f"{clause}: {exc.message}", clause=clause, hint=exc.hint) from None
        sql = subject_expression_sql(target.catalog, table.name, path, subject, clause)
        target.probe(f"SELECT {sql} AS subject FROM {quote(table.name)} AS t", clause=clause, what="the subject path")
        subject_paths[table.name] = path
    return subject_paths


def _ground_locations(
    g: GroundingSpec, target: GroundingTarget, subject: dict[str, str]
) -> tuple[dict[str, Location], dict[str, tuple[str, ...]], set[str]]:
    """Every location of every data type (id ``<type>#<n>``), the location ids of each data type,
    and the data types declared unmapped (the database holds no column for them)."""
    catalog = target.catalog
    locations: dict[str, Location] = {}
    data_types: dict[str, tuple[str, ...]] = {}
    unmapped: set[str] = set()
    for name, dt in g.data_types.items():
        clause = f"grounding.data_types.{name}"
        if dt.unmapped or not dt.locations:
            unmapped.add(name)
            data_types[name] = ()
            continue
        ids = []
        for i, loc in enumerate(dt.locations):
            try:
                table = catalog.table(loc.relation)
                attribute = table.column(loc.attribute).name
            except CatalogError as exc:
                raise PolicyError(f"{clause}: {exc.message}", clause=clause, hint=exc.hint) from None
            where = "TRUE"
            if loc.where:
                where = target.predicate(loc.where, table.name, clause=clause, what="the location predicate")
            subject_sql = subject_expression_sql(catalog, table.name, loc.subject or declared_subject(g.subjects, table.name), subject, clause)
            key = row_key_columns(catalog, table.name, clause)
            loc_id = f"{name}#{i + 1}"
            location = Location(loc_id, table.name, attribute, where, subject_sql, row_key_sql("t", key, target.dialect), name)
            target.probe(location_view_sql(location), clause=clause, what=f"location {table.name}.{attribute}")
            locations[loc_id] = location
            ids.append(loc_id)
        data_types[name] = tuple(ids)
    return locations, data_types, unmapped


def _norm_coverage(
    policy: Policy,
    roles: dict[str, CompiledRole],
    conditions: dict[str, CompiledCondition],
    purposes: dict[str, tuple[str, ...]],
    data_types: dict[str, tuple[str, ...]],
    unmapped: set[str],
) -> dict[str, tuple[str, ...]]:
    """Coverage: every role, purpose, condition and data type a norm names is grounded. Returns
    norm id -> the location ids its data view unions."""
    g = policy.grounding
    norm_locations: dict[str, tuple[str, ...]] = {}
    for norm in policy.norms:
        clause_text = f"clause {norm.id}" + (f" ({_short(norm.source)})" if norm.source else "")
        for var, role in (("sender", norm.sender), ("recipient", norm.recipient), ("subject", norm.subject)):
            if role != ANY and role not in roles:
                raise PolicyError(f"{clause_text}: unknown {var} role {role!r}", clause=norm.id,
                                  hint=f"roles: {', '.join(roles) or 'none'}; add it to grounding.roles")
        if norm.subject != ANY and roles[norm.subject].principal != g.subject_principal:
            raise PolicyError(f"{clause_text}: subject role {norm.subject!r} is not a role of the subject principal "
                              f"{g.subject_principal!r}", clause=norm.id)
        if norm.purpose != ANY and norm.purpose not in purposes:
            raise PolicyError(f"{clause_text}: unknown purpose {norm.purpose!r}", clause=norm.id,
                              hint=f"purposes: {', '.join(purposes) or 'none'}")
        for cond in (norm.condition, norm.when):
            _check_condition(cond, norm, roles, conditions, purposes, clause_text)
        locs: list[str] = []
        for dt in norm.data:
            if dt not in data_types:
                raise PolicyError(f"{clause_text}: unknown data type {dt!r}", clause=norm.id,
                                  hint=f"data types: {', '.join(data_types)}")
            if dt in unmapped:
                raise PolicyError(
                    f"{clause_text}: data type {dt!r} cannot be grounded: the database holds no column for it",
                    clause=norm.id,
                    hint=f"map it to columns under grounding.data_types.{dt}.locations, or remove the clause",
                )
            locs.extend(x for x in data_types[dt] if x not in locs)
        norm_locations[norm.id] = tuple(locs)
    return norm_locations


def _table_layouts(catalog: Catalog) -> dict[str, dict[str, tuple[str, ...]]]:
    """Relation -> its columns (ordered) and row key columns, as the runtime rewrites them."""
    tables: dict[str, dict[str, tuple[str, ...]]] = {}
    for table in catalog.tables:
        key = table.primary_key or (table.unique[0] if table.unique else ())
        tables[table.name] = {"columns": tuple(table.column_names), "key": tuple(key)}
    return tables


def _short(text: str, n: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _check_condition(cond: Cond, norm: Norm, roles: dict, conditions: dict, purposes: dict, clause_text: str) -> None:
    if isinstance(cond, Atom):
        if cond.name not in conditions:
            raise PolicyError(f"{clause_text}: unknown condition {cond.name!r}", clause=norm.id,
                              hint=f"conditions: {', '.join(conditions) or 'none'}; add it to grounding.conditions")
    elif isinstance(cond, PurposeIs):
        if cond.purpose not in purposes:
            raise PolicyError(f"{clause_text}: unknown purpose {cond.purpose!r}", clause=norm.id,
                              hint=f"purposes: {', '.join(purposes) or 'none'}")
    elif isinstance(cond, RoleIs):
        if cond.role not in roles:
            raise PolicyError(f"{clause_text}: unknown role {cond.role!r}", clause=norm.id,
                              hint=f"roles: {', '.join(roles) or 'none'}")
    elif isinstance(cond, Not):
        _check_condition(cond.arg, norm, roles, conditions, purposes, clause_text)
    elif isinstance(cond, (All, AnyOf)):
        for a in cond.args:
            _check_condition(a, norm, roles, conditions, purposes, clause_text)
    elif not isinstance(cond, Const):  # pragma: no cover - exhaustive
        raise PolicyError(f"{clause_text}: unknown condition form {cond!r}", clause=norm.id)
