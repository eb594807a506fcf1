"""Policy-to-view compiler: each norm becomes SQL views over the schema.

For a norm ``N`` the compiler produces (Section 4.2.1 of the paper):

* role views ``role_<r>(agent)`` for its sender, recipient and subject roles;
* condition views ``cond_<c>(sender?, recipient?, subject?)`` (lookups, joins, recursive CTEs);
* a data view ``data_<N>(relation, row_key, attribute, value, subject)``: the UNION ALL of
  every location of its data types, each value tagged with its provenance
  ``o = (relation, row key, attribute)``.

Identities are compared as text (``CAST(... AS VARCHAR)``) so that context values, which
arrive as text, are bound as parameters without any conversion inside SQL. Context values
never appear in SQL text: the runtime binds them through one ``__p_ctx`` CTE with ``?``
placeholders (see :mod:`pimento.policy.enforce`).

Every grounded SQL fragment is parsed with sqlglot (one expression, no statements), its
tables and columns checked against the catalog, and run once with ``LIMIT 0`` on the
engine; a fragment that fails names its clause (coverage).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from pimento.errors import CatalogError, EngineError, PolicyError
from pimento.policy.model import (
    ANY,
    VARIABLES,
    All,
    AnyOf,
    Atom,
    Cond,
    Const,
    Norm,
    Not,
    Policy,
    PurposeIs,
    RoleIs,
    condition_names,
    parse_condition,
)
from pimento.schema import Catalog

__all__ = [
    "FORMAT",
    "NO_SUBJECT",
    "PREFIX",
    "CompiledCondition",
    "CompiledPolicy",
    "CompiledRole",
    "Location",
    "compile_policy",
    "quote",
]

FORMAT = "pimento-compiled-policy/1"
#: Prefix of every name the compiler introduces; analyst SQL may not use it.
PREFIX = "__p_"
#: ``Location.subject_sql`` of a column whose data subject cannot be resolved (no column
#: references the subject principal): every subject atom is unknown on its cells.
NO_SUBJECT = "CAST(NULL AS VARCHAR)"


def quote(name: str) -> str:
    """A double-quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def lit(value: str) -> str:
    """A single-quoted SQL string literal (policy constants only, never context values)."""
    return "'" + str(value).replace("'", "''") + "'"


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name).lower()


@dataclass(frozen=True)
class Location:
    """A column holding a data type, with the SQL that tags its cells with provenance."""

    id: str
    relation: str
    attribute: str
    #: SQL boolean over alias ``t`` (the relation's row); "TRUE" when unfiltered.
    where_sql: str
    #: SQL text expression over alias ``t`` giving the subject identity, or :data:`NO_SUBJECT`.
    subject_sql: str
    #: SQL text expression over alias ``t`` giving the row key.
    row_key_sql: str
    data_type: str
    #: For locations added by information implication: the dependency that implied them.
    implied_by: str | None = None

    def view_sql(self) -> str:
        """``SELECT relation, row_key, attribute, value, subject`` for this location."""
        return (
            f"SELECT {lit(self.relation)} AS relation, {self.row_key_sql} AS row_key, "
            f"{lit(self.attribute)} AS attribute, CAST(t.{quote(self.attribute)} AS VARCHAR) AS value, "
            f"{self.subject_sql} AS subject FROM {quote(self.relation)} AS t WHERE {self.where_sql}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "relation": self.relation,
            "attribute": self.attribute,
            "where_sql": self.where_sql,
            "subject_sql": self.subject_sql,
            "row_key_sql": self.row_key_sql,
            "data_type": self.data_type,
            "implied_by": self.implied_by,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Location:
        return cls(**d)


@dataclass(frozen=True)
class CompiledRole:
    name: str
    principal: str
    sql: str  # SELECT agent

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "principal": self.principal, "sql": self.sql}


@dataclass(frozen=True)
class CompiledCondition:
    name: str
    variables: tuple[str, ...]
    principals: dict[str, str]
    sql: str  # SELECT sender?, recipient?, subject? (text)
    recursive: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "variables": list(self.variables),
            "principals": dict(self.principals),
            "sql": self.sql,
            "recursive": self.recursive,
        }


@dataclass
class CompiledPolicy:
    """Everything the runtime needs, JSON-serialisable (``to_dict`` / ``from_dict``)."""

    name: str
    dialect: str
    principals: dict[str, dict[str, str]]
    subject_principal: str
    purposes: dict[str, list[str]]
    roles: dict[str, CompiledRole]
    conditions: dict[str, CompiledCondition]
    locations: dict[str, Location]
    data_types: dict[str, list[str]]
    norms: list[Norm]
    #: norm id -> location ids its data view unions (after implication).
    norm_locations: dict[str, list[str]]
    #: relation -> its columns (ordered) and row key columns.
    tables: dict[str, dict[str, list[str]]]
    checks: dict[str, Any] = field(default_factory=dict)
    #: alias -> canonical name for merged (redundant) roles / conditions / norms.
    merged: dict[str, dict[str, str]] = field(default_factory=dict)

    # ---------------------------------------------------------------- views, for people and golden files

    def role_view(self, role: str) -> str:
        return self.roles[role].sql

    def data_view(self, norm_id: str) -> str:
        parts = [self.locations[loc].view_sql() for loc in self.norm_locations[norm_id]]
        return "\nUNION ALL\n".join(parts)

    def views(self, norm_id: str) -> dict[str, str]:
        """The views of one norm: sender, recipient, subject, condition(s), data."""
        norm = self.norm(norm_id)
        out: dict[str, str] = {}
        for var, role in (("sender", norm.sender), ("recipient", norm.recipient), ("subject", norm.subject)):
            out[f"{var}_view"] = "-- any" if role == ANY else self.roles[role].sql
        for name in sorted(condition_names(norm.condition) | condition_names(norm.when)):
            out[f"condition_view:{name}"] = self.conditions[name].sql
        out["data_view"] = self.data_view(norm_id)
        return out

    def norm(self, norm_id: str) -> Norm:
        for n in self.norms:
            if n.id == norm_id:
                return n
        raise PolicyError(f"no clause {norm_id!r} in the compiled policy", clause=norm_id)

    def purpose_names(self, value: str) -> set[str]:
        """Names of the purposes whose values include ``value`` (exact match)."""
        return {name for name, values in self.purposes.items() if value in values}

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "name": self.name,
            "dialect": self.dialect,
            "principals": self.principals,
            "subject_principal": self.subject_principal,
            "purposes": self.purposes,
            "roles": {k: v.to_dict() for k, v in self.roles.items()},
            "conditions": {k: v.to_dict() for k, v in self.conditions.items()},
            "locations": {k: v.to_dict() for k, v in self.locations.items()},
            "data_types": self.data_types,
            "norms": [n.to_dict() for n in self.norms],
            "norm_locations": self.norm_locations,
            "tables": self.tables,
            "checks": self.checks,
            "merged": self.merged,
            "views": {n.id: self.views(n.id) for n in self.norms},
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CompiledPolicy:
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise PolicyError(
                "not a compiled policy (format is missing or unknown)",
                hint="produce one with `pimento policy compile POLICY --db DB --out compiled.json`",
            )
        norms = [
            Norm(
                id=n["id"],
                sign=n["sign"],
                sender=n["sender"],
                recipient=n["recipient"],
                subject=n["subject"],
                data=tuple(n["data"]),
                purpose=n["purpose"],
                condition=parse_condition(n["condition"], clause=n["id"]),
                when=parse_condition(n["when"], clause=n["id"]),
                source=n.get("source", ""),
                citation=n.get("citation", ""),
            )
            for n in d["norms"]
        ]
        return cls(
            name=d["name"],
            dialect=d["dialect"],
            principals=d["principals"],
            subject_principal=d["subject_principal"],
            purposes=d["purposes"],
            roles={k: CompiledRole(**v) for k, v in d["roles"].items()},
            conditions={
                k: CompiledCondition(v["name"], tuple(v["variables"]), dict(v["principals"]), v["sql"], v["recursive"])
                for k, v in d["conditions"].items()
            },
            locations={k: Location.from_dict(v) for k, v in d["locations"].items()},
            data_types=d["data_types"],
            norms=norms,
            norm_locations=d["norm_locations"],
            tables=d["tables"],
            checks=d.get("checks", {}),
            merged=d.get("merged", {}),
        )


# --------------------------------------------------------------------------- helpers


def _parse_fragment(sql: str, *, clause: str, what: str, dialect: str, select: bool) -> exp.Expression:
    """Parse one grounded SQL fragment: a SELECT (``select``) or a boolean expression."""
    try:
        if select:
            statements = sqlglot.parse(sql, read=dialect)
            if len(statements) != 1 or not isinstance(statements[0], exp.Query):
                raise PolicyError(f"clause {clause}: {what} must be exactly one SELECT statement", clause=clause)
            tree = statements[0]
        else:
            tree = sqlglot.parse_one(f"SELECT 1 WHERE {sql}", read=dialect)
            tree = tree.args["where"].this
    except ParseError as exc:
        raise PolicyError(f"clause {clause}: {what} is not valid SQL: {exc.errors[0]['description'] if exc.errors else exc}",
                          clause=clause) from None
    forbidden = (exp.Insert, exp.Update, exp.Delete, exp.Drop, exp.Create, exp.Alter, exp.Command, exp.Placeholder)
    bad = tree.find(*forbidden)
    if bad is not None:
        raise PolicyError(f"clause {clause}: {what} may not contain {bad.key.upper()}", clause=clause)
    return tree


def _check_tables(tree: exp.Expression, catalog: Catalog, *, clause: str, what: str) -> None:
    cte_names = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            raise PolicyError(f"clause {clause}: {what} reads from a table function ({table.sql()})", clause=clause)
        if table.name.lower() in cte_names:
            continue
        if not catalog.has_table(table.name):
            raise PolicyError(
                f"clause {clause}: {what} uses table {table.name!r}, which the database does not have",
                clause=clause,
                hint=f"tables: {', '.join(catalog.table_names)}",
            )


def _qualify_to(tree: exp.Expression, alias: str, columns: set[str]) -> exp.Expression:
    """Qualify the unqualified columns of a predicate over one relation with ``alias``."""
    tree = tree.copy()
    for col in list(tree.find_all(exp.Column)):
        if col.table or col.find_ancestor(exp.Query) is not None:
            continue
        if col.name.lower() in columns:
            col.set("table", exp.to_identifier(alias))
    return tree


def _row_key_sql(alias: str, key: tuple[str, ...]) -> str:
    if len(key) == 1:
        return f"CAST({alias}.{quote(key[0])} AS VARCHAR)"
    parts = [f"REPLACE(REPLACE(CAST({alias}.{quote(k)} AS VARCHAR), '\\', '\\\\'), '|', '\\|')" for k in key]
    return " || '|' || ".join(parts)


def _row_key(catalog: Catalog, relation: str, clause: str) -> tuple[str, ...]:
    table = catalog.table(relation)
    key = table.primary_key or (table.unique[0] if table.unique else ())
    if not key:
        raise PolicyError(
            f"clause {clause}: relation {table.name!r} has no primary or unique key, so its cells have no provenance",
            clause=clause,
            hint="declare a primary key (or a unique key in pimento.toml)",
        )
    return tuple(key)


def _probe(engine: Any, sql: str, *, clause: str, what: str) -> tuple[str, ...]:
    """Run ``sql`` with LIMIT 0; return its column names, or a PolicyError naming the clause."""
    if engine is None:
        return ()
    try:
        return tuple(c.lower() for c in engine.execute(f"SELECT * FROM ({sql}) AS {PREFIX}probe LIMIT 0").columns)
    except EngineError as exc:
        raise PolicyError(f"clause {clause}: {what} does not run on the database: {exc.message}", clause=clause) from None


# --------------------------------------------------------------------------- compiler


def compile_policy(policy: Policy, catalog: Catalog, engine: Any = None, *, dialect: str | None = None) -> CompiledPolicy:
    """Compile every norm of ``policy`` to views over ``catalog`` (coverage: each clause compiles).

    ``engine`` (optional) is used to run every fragment once with ``LIMIT 0``. Information
    implication is *not* applied here; see :func:`pimento.policy.checks.run_checks`.

    Raises:
        PolicyError: naming the clause (norm id, or ``grounding.<kind>.<name>``) that
            cannot be grounded: unknown role, data type, purpose or condition, an unmapped
            data type, SQL that does not parse or run, a missing table or column.
    """
    g = policy.grounding
    dialect = dialect or getattr(engine, "dialect", None) or "duckdb"

    # principals ----------------------------------------------------------------
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

    # roles ----------------------------------------------------------------------
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
            tree = _parse_fragment(r.where, clause=clause, what="the role predicate", dialect=dialect, select=False)
            _check_tables(tree, catalog, clause=clause, what="the role predicate")
            cols = {c.lower() for c in catalog.table(pr["relation"]).column_names}
            where = f"COALESCE(({_qualify_to(tree, 't', cols).sql(dialect)}), FALSE)"
        sql = f"SELECT CAST(t.{quote(pr['key'])} AS VARCHAR) AS agent FROM {quote(pr['relation'])} AS t WHERE {where}"
        _probe(engine, sql, clause=clause, what="the role view")
        roles[name] = CompiledRole(name, r.principal, sql)

    # conditions -----------------------------------------------------------------
    conditions: dict[str, CompiledCondition] = {}
    for name, c in g.conditions.items():
        clause = f"grounding.conditions.{name}"
        tree = _parse_fragment(c.sql, clause=clause, what="the condition view", dialect=dialect, select=True)
        _check_tables(tree, catalog, clause=clause, what="the condition view")
        outputs = [s.alias_or_name.lower() for s in tree.selects] if isinstance(tree, exp.Select) else []
        probed = _probe(engine, tree.sql(dialect), clause=clause, what="the condition view")
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

    # purposes -------------------------------------------------------------------
    purposes: dict[str, list[str]] = {}
    for name, p in g.purposes.items():
        if name == ANY:
            raise PolicyError("grounding.purposes.any: 'any' is reserved for the wildcard purpose", clause="grounding.purposes.any")
        if not p.values:
            raise PolicyError(f"grounding.purposes.{name}: a purpose needs at least one value", clause=f"grounding.purposes.{name}")
        purposes[name] = list(p.values)

    # data types and locations ---------------------------------------------------
    subj = principals[g.subject_principal]
    locations: dict[str, Location] = {}
    data_types: dict[str, list[str]] = {}
    unmapped: set[str] = set()
    for name, dt in g.data_types.items():
        clause = f"grounding.data_types.{name}"
        if dt.unmapped or not dt.locations:
            unmapped.add(name)
            data_types[name] = []
            continue
        ids = []
        for i, loc in enumerate(dt.locations):
            try:
                table = catalog.table(loc.relation)
                attribute = table.column(loc.attribute).name
            except CatalogError as exc:
                raise PolicyError(f"{clause}: {exc.message}", clause=clause, hint=exc.hint) from None
            where = "TRUE"
            cols = {c.lower() for c in table.column_names}
            if loc.where:
                tree = _parse_fragment(loc.where, clause=clause, what="the location predicate", dialect=dialect, select=False)
                _check_tables(tree, catalog, clause=clause, what="the location predicate")
                where = f"COALESCE(({_qualify_to(tree, 't', cols).sql(dialect)}), FALSE)"
            subject_sql = _subject_sql(catalog, table.name, loc.subject, subj, clause)
            key = _row_key(catalog, table.name, clause)
            loc_id = f"{name}#{i + 1}"
            location = Location(loc_id, table.name, attribute, where, subject_sql, _row_key_sql("t", key), name)
            _probe(engine, location.view_sql(), clause=clause, what=f"location {table.name}.{attribute}")
            locations[loc_id] = location
            ids.append(loc_id)
        data_types[name] = ids

    # norms: coverage -------------------------------------------------------------
    norm_locations: dict[str, list[str]] = {}
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
        norm_locations[norm.id] = locs

    tables: dict[str, dict[str, list[str]]] = {}
    for table in catalog.tables:
        key = table.primary_key or (table.unique[0] if table.unique else ())
        tables[table.name] = {"columns": list(table.column_names), "key": list(key)}

    return CompiledPolicy(
        name=policy.name,
        dialect=dialect,
        principals=principals,
        subject_principal=g.subject_principal,
        purposes=purposes,
        roles=roles,
        conditions=conditions,
        locations=locations,
        data_types=data_types,
        norms=list(policy.norms),
        norm_locations=norm_locations,
        tables=tables,
    )


def _short(text: str, n: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _subject_sql(catalog: Catalog, relation: str, override: str | None, subj: dict[str, str], clause: str) -> str:
    table = catalog.table(relation)
    if override:
        try:
            return f"CAST(t.{quote(table.column(override).name)} AS VARCHAR)"
        except CatalogError as exc:
            raise PolicyError(f"{clause}: {exc.message}", clause=clause) from None
    if table.name.lower() == subj["relation"].lower():
        return f"CAST(t.{quote(subj['key'])} AS VARCHAR)"
    for fk in catalog.foreign_keys_of(table.name):
        if (
            fk.ref_table.lower() == subj["relation"].lower()
            and len(fk.columns) == 1
            and fk.ref_columns[0].lower() == subj["key"].lower()
        ):
            return f"CAST(t.{quote(fk.columns[0])} AS VARCHAR)"
    return NO_SUBJECT


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
