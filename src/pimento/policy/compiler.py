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

import json
import re
from dataclasses import dataclass, field
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from pimento.engines.base import Engine
from pimento.errors import CatalogError, EngineError, PolicyError
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
    condition_names,
    parse_condition,
)
from pimento.schema import Catalog
from pimento.sql.quote import quote_identifier

__all__ = [
    "FORMAT",
    "schema_fingerprint",
    "NO_SUBJECT",
    "PREFIX",
    "CompiledCondition",
    "CompiledPolicy",
    "CompiledRole",
    "Location",
    "compile_policy",
    "load_compiled_policy",
    "quote",
]

FORMAT = "pimento-compiled-policy/1"
#: Prefix of every name the compiler introduces; analyst SQL may not use it.
PREFIX = "__p_"
#: ``Location.subject_sql`` of a column whose data subject cannot be resolved (no column
#: references the subject principal): every subject atom is unknown on its cells.
NO_SUBJECT = "CAST(NULL AS VARCHAR)"


def quote(name: str) -> str:
    """A double-quoted SQL identifier (:func:`pimento.sql.quote.quote_identifier`, DuckDB's form,
    which SQLite and PostgreSQL share)."""
    return quote_identifier(name)


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
    #: purpose name -> its direct sub-purposes (the hierarchy; norms are inherited downwards).
    purpose_includes: dict[str, list[str]] = field(default_factory=dict)
    #: :func:`schema_fingerprint` of the database it was compiled against.
    fingerprint: str = ""
    #: relation -> its declared way to the data subject (``grounding.subjects``), for implied locations.
    subject_paths: dict[str, str] = field(default_factory=dict)
    #: The locations information implication added (:func:`pimento.policy.implication.apply_implications`,
    #: a step of :func:`compile_policy`), one entry each; None: implication was not applied (a file
    #: compiled by an older version), and the policy is refused (:meth:`require_implication`).
    implication: list[dict[str, Any]] | None = None

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
        """Names of the purposes a declared purpose ``value`` belongs to: those whose values
        include it (exact match), and every purpose that includes one of them, transitively
        (a norm about ``treatment`` applies to ``care_coordination``, a sub-purpose)."""
        names = {name for name, values in self.purposes.items() if value in values}
        frontier = set(names)
        while frontier:
            frontier = {p for p, subs in self.purpose_includes.items() if frontier & set(subs)} - names
            names |= frontier
        return names

    def purpose_closure(self, name: str) -> set[str]:
        """``name`` and every purpose that includes it, transitively (the norms that apply to it)."""
        return self.purpose_names(self.purposes[name][0]) | {name} if self.purposes.get(name) else {name}

    def purpose_matches(self, value: str) -> list[str]:
        """The texts a ``purpose`` column of a condition view may hold to match a context whose
        declared purpose is ``value``: the names of :meth:`purpose_names` and their values."""
        names = self.purpose_names(value)
        return sorted(names | {v for n in names for v in self.purposes[n]})

    def check_database(self, catalog: Catalog, dialect: str | None = None) -> None:  # noqa: ARG002
        """Refuse a database other than the one this policy was compiled for (PolicyError): its
        schema fingerprint must match. A copy with the same schema in another engine (the
        synthetic DuckDB copy of a SQLite database) is the same database to the policy."""
        if not self.fingerprint:
            raise PolicyError(
                f"compiled policy {self.name!r} records no schema fingerprint (compiled by an older version)",
                hint="recompile it: `pimento policy compile POLICY --db DB --out compiled.json`",
            )
        if schema_fingerprint(catalog) != self.fingerprint:
            raise PolicyError(
                f"compiled policy {self.name!r} was compiled for a different database (schema fingerprint differs)",
                hint="compile the policy against this database: `pimento policy compile POLICY --db DB`",
            )

    def require_implication(self) -> None:
        """Refuse (PolicyError) a policy that records no information implication: enforcing it would
        release the columns that reveal a prohibited value through a functional dependency or a
        foreign key. :func:`compile_policy` always applies it; a file written before it did does not."""
        if self.implication is None:
            raise PolicyError(
                f"compiled policy {self.name!r} does not record information implication (compiled by an older "
                "version): enforcing it would release the columns that reveal prohibited data",
                hint="recompile the policy with `pimento policy compile POLICY --db DB --out compiled.json`",
            )

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
            "purpose_includes": self.purpose_includes,
            "fingerprint": self.fingerprint,
            "subject_paths": self.subject_paths,
            "implication": self.implication,
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
            purpose_includes=d.get("purpose_includes", {}),
            fingerprint=d.get("fingerprint", ""),
            subject_paths=d.get("subject_paths", {}),
            implication=_recorded_implication(d),
        )


def _recorded_implication(d: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The implication a compiled policy's JSON records: its ``implication`` entry, or, in a file
    written before that entry existed, the report of the checks (``pimento policy compile`` ran
    them, and they applied implication); None when neither is there."""
    if d.get("implication") is not None:
        return list(d["implication"])
    checks = d.get("checks") or {}
    if isinstance(checks, dict) and isinstance(checks.get("information_implication"), list):
        return list(checks["information_implication"])
    return None


def load_compiled_policy(policy: CompiledPolicy | str | Path) -> CompiledPolicy:
    """A compiled policy as given, or read from the JSON file ``pimento policy compile`` wrote.

    Raises:
        PolicyError: the file is missing, is not JSON, or is not a compiled policy; or the policy
            records no information implication (an older file: recompile it).
    """
    if isinstance(policy, CompiledPolicy):
        policy.require_implication()
        return policy
    path = Path(str(policy))
    if not path.is_file():
        raise PolicyError(f"compiled policy not found: {policy}",
                          hint="produce one with `pimento policy compile POLICY --db DB --out compiled.json`")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{policy}: not a JSON compiled policy ({exc})") from None
    compiled = CompiledPolicy.from_dict(data)
    compiled.require_implication()
    return compiled


# --------------------------------------------------------------------------- helpers


def _parse_fragment(sql: str, *, clause: str, what: str, dialect: str, select: bool) -> exp.Expr:
    """Parse one grounded SQL fragment: a SELECT (``select``) or a boolean expression."""
    tree: exp.Expr | None
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


def _check_tables(tree: exp.Expr, catalog: Catalog, *, clause: str, what: str, dialect: str | None = None) -> None:
    """Every table ``tree`` reads is in the catalog; on PostgreSQL, which folds unquoted names to
    lower case, each is rewritten in place to the catalog's spelling, quoted (``Link`` -> ``"Link"``)."""
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
        if dialect == "postgres":
            table.set("this", exp.to_identifier(catalog.table(table.name).name, quoted=True))


def _qualify_to(tree: exp.Expr, alias: str, columns: set[str]) -> exp.Expr:
    """Qualify the unqualified columns of a predicate over one relation with ``alias``."""
    tree = tree.copy()
    for col in list(tree.find_all(exp.Column)):
        if col.table or col.find_ancestor(exp.Query) is not None:
            continue
        if col.name.lower() in columns:
            col.set("table", exp.to_identifier(alias))
    return tree


def row_key_sql(alias: str, key: tuple[str, ...], dialect: str = "duckdb") -> str:
    r"""The provenance row key of a row of alias ``alias`` (SQL, already quoted where it must be):
    its key column as text, or the key columns escaped (``\`` -> ``\\``, ``|`` -> ``\|``) and
    joined by ``|``. The literals are written for ``dialect``: a backslash is ``'\'`` in DuckDB,
    SQLite and PostgreSQL but ``'\\'`` in Spark, where a lone ``'\'`` does not end the string.

    >>> print(row_key_sql("t", ("a", "b")))
    REPLACE(REPLACE(CAST(t."a" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."b" AS VARCHAR), '\', '\\'), '|', '\|')
    >>> print(row_key_sql("t", ("a", "b"), "spark"))
    REPLACE(REPLACE(CAST(t."a" AS VARCHAR), '\\', '\\\\'), '|', '\\|') || '|' || REPLACE(REPLACE(CAST(t."b" AS VARCHAR), '\\', '\\\\'), '|', '\\|')
    """
    if len(key) == 1:
        return f"CAST({alias}.{quote(key[0])} AS VARCHAR)"
    backslash, bar, escaped_backslash, escaped_bar = (
        exp.Literal.string(v).sql(dialect) for v in ("\\", "|", "\\\\", "\\|"))
    parts = [f"REPLACE(REPLACE(CAST({alias}.{quote(k)} AS VARCHAR), {backslash}, {escaped_backslash}), {bar}, {escaped_bar})"
             for k in key]
    return f" || {bar} || ".join(parts)


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


def _probe(engine: Engine | None, sql: str, *, clause: str, what: str) -> tuple[str, ...]:
    """Run ``sql`` with LIMIT 0; return its column names, or a PolicyError naming the clause."""
    if engine is None:
        return ()
    try:
        return tuple(c.lower() for c in engine.execute(f"SELECT * FROM ({sql}) AS {PREFIX}probe LIMIT 0").columns)
    except EngineError as exc:
        raise PolicyError(f"clause {clause}: {what} does not run on the database: {exc.message}", clause=clause) from None


def schema_fingerprint(catalog: Catalog) -> str:
    """A hash of the schema a compiled policy's SQL depends on: relation and column names (in
    order), keys and foreign keys. Types are left out (engines name them differently)."""
    import hashlib
    import json

    tables = sorted(
        [t.name.lower(), [c.lower() for c in t.column_names], [k.lower() for k in t.primary_key or ()]]
        for t in catalog.tables
    )
    fks = sorted(
        [fk.table.lower(), [c.lower() for c in fk.columns], fk.ref_table.lower(), [c.lower() for c in fk.ref_columns]]
        for fk in catalog.foreign_keys
    )
    return hashlib.sha256(json.dumps([tables, fks]).encode()).hexdigest()[:32]


_PATH_COLS = re.compile(r"^\(?\s*([A-Za-z_][\w\s,]*?)\s*\)?$")


def _path_columns(text: str, clause: str, path: str) -> list[str]:
    m = _PATH_COLS.match(text.strip())
    cols = [c.strip() for c in m.group(1).split(",")] if m else []
    if not cols or not all(re.match(r"^[A-Za-z_]\w*$", c) for c in cols):
        raise PolicyError(f"{clause}: cannot read subject path {path!r} at {text.strip()!r}", clause=clause,
                          hint="write 'via COL -> Table.COL', 'via (A, B) -> Table.COL', hops joined by '->'")
    return cols


def subject_path_sql(catalog: Catalog, relation: str, path: str, clause: str) -> str:
    """SQL (over alias ``t``) of the data subject reached along a foreign-key path.

    ``via order_id -> Orders.customer_id``: follow ``order_id`` of the row to the ``Orders`` row
    it references and take its ``customer_id``. Hops chain (``via a -> T1.b -> T2.c``); a hop's
    columns may be a tuple (``via (x, y) -> T.c``, a multi-column key). Each hop must be a
    foreign key of the catalog (or the target table's primary key). The result is a correlated
    scalar subquery: NULL (unresolved, so fail closed) when a key is NULL, dangles, or matches
    more than one row.
    """
    text = path.strip()
    if not text.lower().startswith("via "):
        raise PolicyError(f"{clause}: a subject path starts with 'via' ({path!r})", clause=clause)
    parts = text[4:].split("->")
    if len(parts) < 2:
        raise PolicyError(f"{clause}: subject path {path!r} has no hop", clause=clause,
                          hint="write 'via COL -> Table.COL'")
    current = catalog.table(relation)
    cols = [current.column(c).name for c in _path_columns(parts[0], clause, path)]
    joins: list[tuple[str, str, str]] = []  # (alias, table, ON condition)
    prev_alias = "t"
    for i, part in enumerate(parts[1:], start=1):
        table_name, dot, rest = part.strip().partition(".")
        if not dot:
            raise PolicyError(f"{clause}: subject path {path!r}: write Table.COL after '->'", clause=clause)
        try:
            target = catalog.table(table_name.strip())
            nxt = [target.column(c).name for c in _path_columns(rest, clause, path)]
        except CatalogError as exc:
            raise PolicyError(f"{clause}: subject path {path!r}: {exc.message}", clause=clause, hint=exc.hint) from None
        ref: tuple[str, ...] | None = None
        for fk in catalog.foreign_keys_of(current.name):
            if fk.ref_table.lower() == target.name.lower() and [c.lower() for c in fk.columns] == [c.lower() for c in cols]:
                ref = tuple(target.column(c).name for c in fk.ref_columns)
                break
        if ref is None and target.primary_key and len(target.primary_key) == len(cols):
            ref = tuple(target.primary_key)
        if ref is None:
            raise PolicyError(
                f"{clause}: subject path {path!r}: no foreign key {current.name}({', '.join(cols)}) -> {target.name}",
                clause=clause, hint="declare the foreign key (or reference the table's primary key)")
        alias = f"{PREFIX}s{i}"
        on = " AND ".join(f"{quote(alias)}.{quote(r)} = {prev_alias}.{quote(c)}" for r, c in zip(ref, cols))
        joins.append((alias, target.name, on))
        prev_alias = quote(alias)
        current, cols = target, nxt
    if len(cols) != 1:
        raise PolicyError(f"{clause}: subject path {path!r} must end in one subject column", clause=clause)
    first_alias, first_table, first_on = joins[0]
    sql = f"FROM {quote(first_table)} AS {quote(first_alias)}"
    for alias, table_name, on in joins[1:]:
        sql += f" JOIN {quote(table_name)} AS {quote(alias)} ON {on}"
    value = f"{prev_alias}.{quote(cols[0])}"
    return (f"(SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST({value} AS VARCHAR)) END {sql} WHERE {first_on})")


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
    target = _Target(catalog, engine, dialect or (engine.dialect if engine is not None else None) or "duckdb")
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
        norms=list(policy.norms),
        norm_locations=norm_locations,
        tables=_table_layouts(catalog),
        purpose_includes=purpose_includes,
        fingerprint=schema_fingerprint(catalog),
        subject_paths=subject_paths,
    )
    _imply(compiled, policy, catalog)
    return compiled


def _imply(compiled: CompiledPolicy, policy: Policy, catalog: Catalog) -> None:
    """Step ``information implication``: P -> P+ (:func:`pimento.policy.implication.apply_implications`)."""
    from pimento.policy.implication import apply_implications, policy_dependencies  # it builds on this module

    try:
        dependencies = policy_dependencies(catalog, policy)
    except CatalogError as exc:
        raise PolicyError(f"grounding.dependencies: {exc.message}", clause="grounding.dependencies", hint=exc.hint) from None
    apply_implications(compiled, catalog, dependencies)


@dataclass(frozen=True)
class _Target:
    """The database a policy is grounded on: its catalog, the engine that probes each fragment
    (None: fragments are parsed and checked against the catalog but not run), the SQL dialect."""

    catalog: Catalog
    engine: Engine | None
    dialect: str

    def fragment(self, sql: str, *, clause: str, what: str, select: bool) -> exp.Expr:
        """A grounded SQL fragment, parsed and checked against the catalog (see :func:`_parse_fragment`)."""
        tree = _parse_fragment(sql, clause=clause, what=what, dialect=self.dialect, select=select)
        _check_tables(tree, self.catalog, clause=clause, what=what, dialect=self.dialect)
        return tree

    def predicate(self, sql: str, relation: str, *, clause: str, what: str) -> str:
        """A row predicate over ``relation``, its columns qualified with ``t``, NULL read as FALSE."""
        tree = self.fragment(sql, clause=clause, what=what, select=False)
        cols = {c.lower() for c in self.catalog.table(relation).column_names}
        return f"COALESCE(({_qualify_to(tree, 't', cols).sql(self.dialect)}), FALSE)"

    def probe(self, sql: str, *, clause: str, what: str) -> tuple[str, ...]:
        return _probe(self.engine, sql, clause=clause, what=what)


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


def _ground_roles(g: GroundingSpec, target: _Target, principals: dict[str, dict[str, str]]) -> dict[str, CompiledRole]:
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


def _ground_conditions(g: GroundingSpec, target: _Target, principals: dict[str, dict[str, str]]) -> dict[str, CompiledCondition]:
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


def _ground_purposes(g: GroundingSpec) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Purpose -> its context values, and purpose -> its direct sub-purposes (an acyclic hierarchy)."""
    purposes: dict[str, list[str]] = {}
    for name, p in g.purposes.items():
        if name == ANY:
            raise PolicyError("grounding.purposes.any: 'any' is reserved for the wildcard purpose", clause="grounding.purposes.any")
        if not p.values:
            raise PolicyError(f"grounding.purposes.{name}: a purpose needs at least one value", clause=f"grounding.purposes.{name}")
        purposes[name] = list(p.values)
    purpose_includes: dict[str, list[str]] = {}
    for name, p in g.purposes.items():
        for sub in p.includes:
            if sub not in purposes:
                raise PolicyError(f"grounding.purposes.{name}: includes unknown purpose {sub!r}",
                                  clause=f"grounding.purposes.{name}", hint=f"purposes: {', '.join(purposes)}")
        if p.includes:
            purpose_includes[name] = list(p.includes)
    for name in purposes:  # no cycles: a purpose never includes itself
        seen: set[str] = set()
        frontier = set(purpose_includes.get(name, []))
        while frontier:
            if name in frontier:
                raise PolicyError(f"grounding.purposes.{name}: the purpose hierarchy has a cycle through {name!r}",
                                  clause=f"grounding.purposes.{name}")
            seen |= frontier
            frontier = {s for f in frontier for s in purpose_includes.get(f, [])} - seen
    return purposes, purpose_includes


def _ground_subject_paths(g: GroundingSpec, target: _Target, subject: dict[str, str]) -> dict[str, str]:
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
    g: GroundingSpec, target: _Target, subject: dict[str, str]
) -> tuple[dict[str, Location], dict[str, list[str]], set[str]]:
    """Every location of every data type (id ``<type>#<n>``), the location ids of each data type,
    and the data types declared unmapped (the database holds no column for them)."""
    catalog = target.catalog
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
            if loc.where:
                where = target.predicate(loc.where, table.name, clause=clause, what="the location predicate")
            subject_sql = subject_expression_sql(catalog, table.name, loc.subject or declared_subject(g.subjects, table.name), subject, clause)
            key = _row_key(catalog, table.name, clause)
            loc_id = f"{name}#{i + 1}"
            location = Location(loc_id, table.name, attribute, where, subject_sql, row_key_sql("t", key, target.dialect), name)
            target.probe(location.view_sql(), clause=clause, what=f"location {table.name}.{attribute}")
            locations[loc_id] = location
            ids.append(loc_id)
        data_types[name] = ids
    return locations, data_types, unmapped


def _norm_coverage(
    policy: Policy,
    roles: dict[str, CompiledRole],
    conditions: dict[str, CompiledCondition],
    purposes: dict[str, list[str]],
    data_types: dict[str, list[str]],
    unmapped: set[str],
) -> dict[str, list[str]]:
    """Coverage: every role, purpose, condition and data type a norm names is grounded. Returns
    norm id -> the location ids its data view unions."""
    g = policy.grounding
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
    return norm_locations


def _table_layouts(catalog: Catalog) -> dict[str, dict[str, list[str]]]:
    """Relation -> its columns (ordered) and row key columns, as the runtime rewrites them."""
    tables: dict[str, dict[str, list[str]]] = {}
    for table in catalog.tables:
        key = table.primary_key or (table.unique[0] if table.unique else ())
        tables[table.name] = {"columns": list(table.column_names), "key": list(key)}
    return tables


def declared_subject(subjects: Mapping[str, str], relation: str) -> str | None:
    """The relation's declared subject path in ``subjects`` (``grounding.subjects`` or a compiled
    policy's ``subject_paths``; relation names compared case-insensitively), if any."""
    for name, path in subjects.items():
        if name.lower() == relation.lower():
            return path
    return None


def _short(text: str, n: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def subject_expression_sql(catalog: Catalog, relation: str, override: str | None, subj: dict[str, str], clause: str) -> str:
    """SQL (over alias ``t``) of the data subject of a row of ``relation``: a declared path or
    column (``override``), the subject principal's key, a foreign key to it, or :data:`NO_SUBJECT`."""
    table = catalog.table(relation)
    if override and override.strip().lower().startswith("via "):
        try:
            return subject_path_sql(catalog, table.name, override, clause)
        except CatalogError as exc:
            raise PolicyError(f"{clause}: {exc.message}", clause=clause, hint=exc.hint) from None
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
