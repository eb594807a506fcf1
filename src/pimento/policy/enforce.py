"""Runtime enforcement: context + analyst query -> authorized cells A_c(D) and the CI answer.

Steps (Section 4.2.3 of the paper):

1. **Relevant norms.** The analyst query is validated and its lineage computed
   (:mod:`pimento.policy.lineage`): the base columns it references. Norms whose data views
   govern none of them are dropped; data views keep only the referenced locations.
2. **Instantiate.** The context ``(sender, recipient, purpose)`` is bound: identities as
   ``?`` parameters of one ``__p_ctx`` CTE (never spliced into SQL), the purpose and the
   principal kinds of sender and recipient fold to constants in Python. A positive norm
   contributes the cells where ``roles AND purpose AND condition`` hold; a negative norm the
   cells where ``roles AND purpose AND when AND NOT condition`` hold.
3. **Authorized cells.** ``A_c = permitted EXCEPT prohibited`` over provenance
   ``(relation, row_key, attribute)``.

**CI-mode semantics** (exact, see docs/contextual-integrity.md): the analyst query runs on
the *authorized database*: every base relation ``R`` it references is replaced by ``R_c``,
whose rows are the rows of ``R`` with at least one authorized cell among the columns of
``R`` the query references (all columns of ``R`` when it references none, e.g.
``COUNT(*)``), and whose cells are the original value when authorized and NULL otherwise.
Hence WHERE/JOIN predicates on unauthorized cells are unknown (the row does not match),
``COUNT(col)``/``SUM``/``AVG``/``MIN``/``MAX`` see authorized values only, and ``COUNT(*)``
counts rows that have an authorized referenced cell. Ungoverned columns are never
authorized (no applicable positive norm means deny).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pimento.errors import PolicyError
from pimento.policy.compiler import PREFIX, CompiledPolicy, lit, quote
from pimento.policy.lineage import AnalyzedQuery, analyze_query
from pimento.policy.model import ANY, All, AnyOf, Atom, Cond, Const, Norm, Not, PurposeIs, RoleIs
from pimento.schema import Catalog

__all__ = ["Authorization", "Context", "Enforcer", "Identity", "NormSQL", "norm_predicates"]


@dataclass(frozen=True)
class Identity:
    """An agent: its principal kind (e.g. ``employee``) and identifier as text."""

    kind: str
    id: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.id}"


@dataclass(frozen=True)
class Context:
    """The runtime context of a request: who sends, who receives, for which purpose."""

    sender: Identity
    recipient: Identity
    purpose: str


# --------------------------------------------------------------------------- predicates


class NormSQL:
    """Compiles conditions to SQL for one instantiation.

    ``sender_sql`` / ``recipient_sql`` are SQL expressions for the bound identities
    (the ``__p_ctx`` columns at runtime, candidate columns in the satisfiability check);
    ``sender_kind`` / ``recipient_kind`` their principal kinds; ``purposes`` the purpose
    names the declared purpose belongs to. Every atom is two-valued (EXISTS, constants), so
    SQL's three-valued logic never differs from the reference evaluator's two-valued one.
    """

    def __init__(
        self,
        compiled: CompiledPolicy,
        *,
        sender_sql: str,
        recipient_sql: str,
        sender_kind: str,
        recipient_kind: str,
        purposes: set[str],
        subject_sql: str = "d.subject",
    ) -> None:
        self.c = compiled
        self.ref = {"sender": sender_sql, "recipient": recipient_sql, "subject": subject_sql}
        self.kind = {"sender": sender_kind, "recipient": recipient_kind, "subject": compiled.subject_principal}
        self.purposes = purposes
        self.roles_used: set[str] = set()
        self.conditions_used: set[str] = set()

    def cond(self, cond: Cond) -> str:
        if isinstance(cond, Const):
            return "TRUE" if cond.value else "FALSE"
        if isinstance(cond, PurposeIs):
            return "TRUE" if cond.purpose in self.purposes else "FALSE"
        if isinstance(cond, RoleIs):
            role = self.c.roles[cond.role]
            if role.principal != self.kind[cond.variable]:
                return "FALSE"
            self.roles_used.add(cond.role)
            return f"EXISTS (SELECT 1 FROM {role_cte(cond.role)} AS r WHERE r.agent = {self.ref[cond.variable]})"
        if isinstance(cond, Atom):
            view = self.c.conditions[cond.name]
            preds = []
            for var in view.variables:
                if var in view.principals and view.principals[var] != self.kind[var]:
                    return "FALSE"
                preds.append(f"c.{var} = {self.ref[var]}")
            self.conditions_used.add(cond.name)
            return f"EXISTS (SELECT 1 FROM {cond_cte(cond.name)} AS c WHERE {' AND '.join(preds)})"
        if isinstance(cond, Not):
            inner = self.cond(cond.arg)
            return {"TRUE": "FALSE", "FALSE": "TRUE"}.get(inner, f"NOT ({inner})")
        if isinstance(cond, All):
            parts = [self.cond(a) for a in cond.args]
            if "FALSE" in parts:
                return "FALSE"
            parts = [p for p in parts if p != "TRUE"]
            return "TRUE" if not parts else parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"
        if isinstance(cond, AnyOf):
            parts = [self.cond(a) for a in cond.args]
            if "TRUE" in parts:
                return "TRUE"
            parts = [p for p in parts if p != "FALSE"]
            return "FALSE" if not parts else parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"
        raise PolicyError(f"unknown condition form {cond!r}")  # pragma: no cover


class SubjectSetSQL:
    """Compiles a norm formula, for a bound context, into the *set of subjects* it holds for.

    The formula depends on the context and the subject only. Atoms that bind the subject
    become sets (``SELECT subject FROM cond WHERE sender = $1``), context-only atoms become
    uncorrelated booleans, and the connectives become INTERSECT / UNION / EXCEPT against the
    domain ``__p_subj``. No correlated subquery is left, which keeps DuckDB's planning cheap.
    :meth:`null` gives the formula's value for cells that have no subject.
    """

    def __init__(self, ns: NormSQL, domain: str) -> None:
        self.ns = ns
        self.domain = domain

    def compile(self, cond: Cond) -> tuple[str, str]:
        """("bool", sql boolean) or ("set", sql query with one column ``subject``)."""
        ns = self.ns
        if isinstance(cond, Atom):
            view = ns.c.conditions[cond.name]
            if "subject" not in view.variables:
                return "bool", ns.cond(cond)
            preds = []
            for var in view.variables:
                if var == "subject":
                    continue
                if var in view.principals and view.principals[var] != ns.kind[var]:
                    return "bool", "FALSE"
                preds.append(f"c.{var} = {ns.ref[var]}")
            ns.conditions_used.add(cond.name)
            where = f" WHERE {' AND '.join(preds)}" if preds else ""
            return "set", f"SELECT c.subject FROM {cond_cte(cond.name)} AS c{where}"
        if isinstance(cond, RoleIs) and cond.variable == "subject":
            role = ns.c.roles[cond.role]
            if role.principal != ns.kind["subject"]:
                return "bool", "FALSE"
            ns.roles_used.add(cond.role)
            return "set", f"SELECT r.agent AS subject FROM {role_cte(cond.role)} AS r"
        if isinstance(cond, Not):
            kind, sql = self.compile(cond.arg)
            if kind == "bool":
                return "bool", {"TRUE": "FALSE", "FALSE": "TRUE"}.get(sql, f"NOT ({sql})")
            return "set", f"SELECT subject FROM {self.domain} EXCEPT ({sql})"
        if isinstance(cond, (All, AnyOf)):
            parts = [self.compile(a) for a in cond.args]
            bools = [p for k, p in parts if k == "bool"]
            sets = [p for k, p in parts if k == "set"]
            conj = isinstance(cond, All)
            b = ns.cond(Const(True)) if conj else "FALSE"
            if bools:
                if conj:
                    b = "FALSE" if "FALSE" in bools else " AND ".join(f"({x})" for x in bools if x != "TRUE") or "TRUE"
                else:
                    b = "TRUE" if "TRUE" in bools else " OR ".join(f"({x})" for x in bools if x != "FALSE") or "FALSE"
            if not sets:
                return "bool", b
            if conj:
                if b == "FALSE":
                    return "bool", "FALSE"
                body = " INTERSECT ".join(f"({x})" for x in sets)
                return "set", body if b == "TRUE" else f"SELECT subject FROM ({body}) AS i WHERE {b}"
            if b == "TRUE":
                return "set", f"SELECT subject FROM {self.domain}"
            body = " UNION ".join(f"({x})" for x in sets)
            return "set", body if b == "FALSE" else f"{body} UNION SELECT subject FROM {self.domain} WHERE {b}"
        return "bool", ns.cond(cond)

    def null(self, cond: Cond) -> str:
        """The formula's value when the subject is NULL (subject atoms are false)."""
        if isinstance(cond, Atom):
            view = self.ns.c.conditions[cond.name]
            return "FALSE" if "subject" in view.variables else self.ns.cond(cond)
        if isinstance(cond, RoleIs) and cond.variable == "subject":
            return "FALSE"
        if isinstance(cond, Not):
            inner = self.null(cond.arg)
            return {"TRUE": "FALSE", "FALSE": "TRUE"}.get(inner, f"NOT ({inner})")
        if isinstance(cond, (All, AnyOf)):
            parts = [self.null(a) for a in cond.args]
            if isinstance(cond, All):
                if "FALSE" in parts:
                    return "FALSE"
                parts = [p for p in parts if p != "TRUE"]
                return " AND ".join(f"({p})" for p in parts) if parts else "TRUE"
            if "TRUE" in parts:
                return "TRUE"
            parts = [p for p in parts if p != "FALSE"]
            return " OR ".join(f"({p})" for p in parts) if parts else "FALSE"
        return self.ns.cond(cond)


def norm_predicates(norm: Norm) -> Cond:
    """The formula a cell flow must satisfy for ``norm`` to decide it.

    Positive: ``roles AND purpose AND condition`` (it permits). Negative:
    ``roles AND purpose AND when AND NOT condition`` (it prohibits).
    """
    parts: list[Cond] = []
    for var, role in (("sender", norm.sender), ("recipient", norm.recipient), ("subject", norm.subject)):
        if role != ANY:
            parts.append(RoleIs(var, role))
    if norm.purpose != ANY:
        parts.append(PurposeIs(norm.purpose))
    if norm.positive:
        parts.append(norm.condition)
    else:
        parts.append(norm.when)
        parts.append(Not(norm.condition))
    return All(tuple(parts))


def role_cte(name: str) -> str:
    return quote(f"{PREFIX}r_{name}")


def cond_cte(name: str) -> str:
    return quote(f"{PREFIX}c_{name}")


# --------------------------------------------------------------------------- result


@dataclass
class Authorization:
    """The outcome of one request."""

    context: Context
    query: AnalyzedQuery
    sql: str
    params: list[str]
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    relevant_norms: tuple[str, ...]
    seconds: float
    _enforcer: Enforcer | None = field(default=None, repr=False)
    _auth_sql: str = field(default="", repr=False)

    def decisions(self, limit: int | None = 1000) -> list[dict[str, Any]]:
        """Per referenced cell governed by a relevant norm: value, permitting and prohibiting norms, verdict."""
        assert self._enforcer is not None
        sql = self._auth_sql + (
            " SELECT relation, row_key, attribute, value, "
            "list_sort(list(DISTINCT norm) FILTER (WHERE sign = 'permit')) AS permitted_by, "
            "list_sort(list(DISTINCT norm) FILTER (WHERE sign = 'deny')) AS prohibited_by "
            f"FROM {PREFIX}dec GROUP BY relation, row_key, attribute, value ORDER BY relation, attribute, row_key"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        res = self._enforcer.engine.execute(sql, self.params)
        out = []
        for relation, row_key, attribute, value, permitted, prohibited in res.rows:
            permitted, prohibited = list(permitted or []), list(prohibited or [])
            out.append(
                {
                    "relation": relation,
                    "row_key": row_key,
                    "attribute": attribute,
                    "value": value,
                    "permitted_by": permitted,
                    "prohibited_by": prohibited,
                    "authorized": bool(permitted) and not prohibited,
                }
            )
        return out

    def authorized_cells(self) -> set[tuple[str, str, str]]:
        """A_c(D) restricted to the referenced columns: ``(relation, row_key, attribute)``."""
        assert self._enforcer is not None
        res = self._enforcer.engine.execute(
            self._auth_sql + f" SELECT relation, row_key, attribute FROM {PREFIX}auth", self.params
        )
        return {tuple(r) for r in res.rows}  # type: ignore[misc]

    def summary(self) -> list[dict[str, Any]]:
        """Per (relation, attribute, norm, sign): how many cells the norm decided."""
        assert self._enforcer is not None
        res = self._enforcer.engine.execute(
            self._auth_sql
            + f" SELECT relation, attribute, norm, sign, COUNT(DISTINCT row_key) FROM {PREFIX}dec "
            "GROUP BY ALL ORDER BY 1, 2, 3",
            self.params,
        )
        return [
            {"relation": r, "attribute": a, "norm": n, "sign": s, "cells": int(k)} for r, a, n, s, k in res.rows
        ]

    def to_dict(self, *, cells: int = 0) -> dict[str, Any]:
        out: dict[str, Any] = {
            "context": {
                "sender": str(self.context.sender),
                "recipient": str(self.context.recipient),
                "purpose": self.context.purpose,
            },
            "query": self.query.sql,
            "referenced": {k: sorted(v) for k, v in sorted(self.query.referenced.items())},
            "returned": {name: sorted(f"{r}.{c}" for r, c in deps) for name, deps in self.query.returned},
            "relevant_norms": list(self.relevant_norms),
            "columns": list(self.columns),
            "rows": [list(r) for r in self.rows],
            "decided": self.summary(),
            "seconds": round(self.seconds, 6),
        }
        if cells:
            out["cells"] = self.decisions(limit=cells)
        return out


# --------------------------------------------------------------------------- enforcer


class Enforcer:
    """Authorizes requests against one compiled policy and one database."""

    def __init__(self, compiled: CompiledPolicy, engine: Any, catalog: Catalog) -> None:
        self.compiled = compiled
        self.engine = engine
        self.catalog = catalog
        self.dialect = compiled.dialect
        self._known: dict[tuple[str, str], bool] = {}

    # ---- context -------------------------------------------------------------------

    def identity(self, value: str, *, what: str) -> Identity:
        """Parse ``KIND:ID`` (or a bare ``ID`` found in exactly one principal relation) and check it exists."""
        if not isinstance(value, str) or not value.strip():
            raise PolicyError(f"the {what} is empty", hint="write KIND:ID, e.g. employee:20")
        value = value.strip()
        kind, sep, ident = value.partition(":")
        if sep and kind in self.compiled.principals:
            if self._exists(kind, ident):
                return Identity(kind, ident)
            p = self.compiled.principals[kind]
            raise PolicyError(
                f"unknown {what} {value!r}: no {p['relation']} row has {p['key']} = {ident!r}",
                hint=f"use an existing {kind}",
            )
        found = [k for k in self.compiled.principals if self._exists(k, value)]
        if len(found) == 1:
            return Identity(found[0], value)
        kinds = ", ".join(self.compiled.principals)
        if not found:
            raise PolicyError(f"unknown {what} {value!r}: no principal ({kinds}) has this identifier",
                              hint="write KIND:ID, e.g. employee:20")
        raise PolicyError(f"ambiguous {what} {value!r}: it identifies a {' and a '.join(found)}",
                          hint=f"write KIND:ID with KIND one of {kinds}")

    def _exists(self, kind: str, ident: str) -> bool:
        key = (kind, ident)
        if key not in self._known:
            p = self.compiled.principals[kind]
            sql = f"SELECT 1 FROM {quote(p['relation'])} WHERE CAST({quote(p['key'])} AS VARCHAR) = ? LIMIT 1"
            self._known[key] = bool(self.engine.execute(sql, [ident]).rows)
        return self._known[key]

    def context(self, sender: str, recipient: str, purpose: str) -> Context:
        """Validate a context; unknown identities or purposes are errors naming the value."""
        s = self.identity(sender, what="sender")
        r = self.identity(recipient, what="recipient")
        if not isinstance(purpose, str) or not self.compiled.purpose_names(purpose):
            known = sorted({v for vs in self.compiled.purposes.values() for v in vs})
            raise PolicyError(f"unknown purpose {purpose!r}", hint=f"purposes: {', '.join(known)}")
        return Context(s, r, purpose)

    # ---- authorization ---------------------------------------------------------------

    def authorize(self, context: Context, sql: str) -> Authorization:
        """Run ``sql`` over the authorized data of ``context`` (see the module docstring)."""
        started = time.perf_counter()
        query = analyze_query(sql, self.catalog, dialect=self.dialect)
        ctes, relevant = self._runtime_ctes(context, query)
        names = {rel: f"{PREFIX}t_{rel.lower()}" for rel in query.referenced}
        body, their_ctes, recursive = query.rewrite(names)
        final = ("WITH RECURSIVE " if recursive else "WITH ") + ",\n".join(ctes + their_ctes) + "\n" + body
        params = [context.sender.id, context.recipient.id]
        res = self.engine.execute(final, params)
        elapsed = time.perf_counter() - started
        auth_ctes, _, _ = self._authorization_sql(context, query)
        with_text = "WITH " + ",\n".join(auth_ctes + [self._decisions_cte(context, query)])
        return Authorization(
            context, query, final, params, res.columns, res.rows, relevant, elapsed, self, with_text
        )

    def _runtime_ctes(self, context: Context, query: AnalyzedQuery) -> tuple[list[str], tuple[str, ...]]:
        """CTEs of the CI-mode rewrite: per relevant norm the subjects it decides, then ``R_c``.

        A norm's formula depends on the context and the subject only, never on the cell, so
        it is evaluated once per distinct subject of the referenced locations (``__p_s<i>``)
        and once for cells without a subject (``__p_n<i>``). A cell of ``R.c`` is authorized
        iff some positive norm has a location on ``R.c`` whose filter holds for the row and
        which decides the row's subject, and no negative norm does.
        """
        ns = self._norm_sql(context)
        relevant = self._relevant(query)
        norm_ctes: list[str] = []
        by_column: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
        subjects = sorted({
            f"SELECT {self.compiled.locations[x].subject_sql} AS subject FROM {quote(self.compiled.locations[x].relation)} AS t"
            for locs in relevant.values() for x in locs
            if self.compiled.locations[x].subject_sql != "CAST(NULL AS VARCHAR)"
        })
        sets = SubjectSetSQL(ns, f"{PREFIX}subj")
        for i, (norm_id, locs) in enumerate(relevant.items()):
            norm = self.compiled.norm(norm_id)
            formula = norm_predicates(norm)
            null_ok = sets.null(formula)
            kind, sql_ = sets.compile(formula) if subjects else ("bool", "FALSE")
            if kind == "bool" and sql_ == "FALSE" and null_ok == "FALSE":
                continue
            s_name = quote(f"{PREFIX}s{i}")
            if kind == "set":
                norm_ctes.append(f"{s_name} AS MATERIALIZED (SELECT DISTINCT subject FROM ({sql_}) AS x)")
                member = ("join", s_name)
            else:
                member = ("bool", f"({sql_})")
            for x in locs:
                loc = self.compiled.locations[x]
                pos, neg = by_column.setdefault((loc.relation, loc.attribute), ([], []))
                (pos if norm.positive else neg).append((loc, member, null_ok))
        ctes = [f"{PREFIX}ctx AS (SELECT CAST($1 AS VARCHAR) AS sender, CAST($2 AS VARCHAR) AS recipient)"]
        ctes += [f"{role_cte(r)} AS MATERIALIZED ({self.compiled.roles[r].sql})" for r in sorted(ns.roles_used)]
        ctes += [f"{cond_cte(c)} AS MATERIALIZED ({self.compiled.conditions[c].sql})" for c in sorted(ns.conditions_used)]
        if subjects:
            ctes.append(f"{PREFIX}subj AS MATERIALIZED (SELECT DISTINCT subject FROM ({' UNION '.join(subjects)}) AS u "
                        "WHERE subject IS NOT NULL)")
        ctes += norm_ctes
        for rel, cols in sorted(query.referenced.items()):
            ctes.append(self._rewrite_cte(rel, cols, by_column))
        return ctes, tuple(relevant)

    def catalog_nullable(self, loc: Any) -> bool:
        """Whether the subject column of a location can be NULL (True when unsure)."""
        import re as _re

        m = _re.fullmatch(r'CAST\(t\."((?:[^"]|"")+)" AS VARCHAR\)', loc.subject_sql)
        if not m:
            return True
        try:
            return self.catalog.table(loc.relation).column(m.group(1).replace('""', '"')).nullable
        except Exception:  # noqa: BLE001
            return True

    def _rewrite_cte(self, relation: str, referenced: frozenset[str], by_column: dict) -> str:
        """``R_c``: authorized cells kept, others NULL, rows without an authorized referenced cell removed.

        Each subject set is LEFT JOINed once on the subject column (one hash join per norm),
        each distinct location filter is computed once per row; the per-column flags combine
        them: ``(OR positive terms) AND NOT (OR negative terms)``.
        """
        info = self.compiled.tables[relation]
        cols = info["columns"]
        use = [c for c in cols if c in referenced] or list(cols)
        joins: dict[tuple[str, str], str] = {}
        wheres: dict[str, str] = {}
        join_sql: list[str] = []

        def term(loc: Any, member: tuple[str, str], null_ok: str) -> str:
            if loc.subject_sql == "CAST(NULL AS VARCHAR)":
                decided = f"({null_ok})"
            else:
                if member[0] == "join":
                    key = (member[1], loc.subject_sql)
                    if key not in joins:
                        alias = f"{PREFIX}j{len(joins)}"
                        joins[key] = alias
                        join_sql.append(f"LEFT JOIN {member[1]} AS {quote(alias)} ON {quote(alias)}.subject = {loc.subject_sql}")
                    inside = f"({quote(joins[key])}.subject IS NOT NULL)"
                else:
                    inside = member[1]
                if null_ok == "FALSE" and not self.catalog_nullable(loc):
                    decided = inside
                else:
                    decided = f"CASE WHEN {loc.subject_sql} IS NULL THEN ({null_ok}) ELSE {inside} END"
            if loc.where_sql == "TRUE":
                return decided
            if loc.where_sql not in wheres:
                wheres[loc.where_sql] = f"{PREFIX}w{len(wheres)}"
            return f"(t.{quote(wheres[loc.where_sql])} AND {decided})"

        flags = []
        for i, c in enumerate(cols):
            pos, neg = by_column.get((relation, c), ([], []))
            if c not in use or not pos:
                continue
            expr = "(" + " OR ".join(term(*p) for p in pos) + ")"
            if neg:
                expr += " AND NOT (" + " OR ".join(term(*n) for n in neg) + ")"
            flags.append((i, c, expr))
        name = quote(PREFIX + "t_" + relation.lower())
        if not flags:
            sel = ", ".join(f"CASE WHEN FALSE THEN t.{quote(c)} END AS {quote(c)}" for c in cols)
            return f"{name} AS (SELECT {sel} FROM {quote(relation)} AS t WHERE FALSE)"
        ok = {i: quote(f"{PREFIX}ok{i}") for i, _, _ in flags}
        base_cols = ", ".join(f"t.{quote(c)}" for c in cols)
        where_cols = "".join(f", ({w}) AS {quote(a)}" for w, a in wheres.items())
        flag_cols = "".join(f", ({e}) AS {ok[i]}" for i, _, e in flags)
        base = f"SELECT {base_cols}{where_cols}{flag_cols} FROM {quote(relation)} AS t {' '.join(join_sql)}"
        if wheres:
            # flags refer to the filter columns: compute filters first, then the flags
            inner = f"SELECT {base_cols}{where_cols} FROM {quote(relation)} AS t"
            base = f"SELECT {base_cols}{flag_cols} FROM ({inner}) AS t {' '.join(join_sql)}"
        sel = ", ".join(
            (f"CASE WHEN t.{ok[i]} THEN t.{quote(c)} END" if i in ok else f"CASE WHEN FALSE THEN t.{quote(c)} END")
            + f" AS {quote(c)}"
            for i, c in enumerate(cols)
        )
        visible = " OR ".join(f"t.{ok[i]}" for i in ok)
        return f"{name} AS (SELECT {sel} FROM ({base}) AS t WHERE {visible})"

    def _norm_sql(self, context: Context, *, subject_sql: str = "d.subject") -> NormSQL:
        return NormSQL(
            self.compiled,
            sender_sql="CAST($1 AS VARCHAR)",
            recipient_sql="CAST($2 AS VARCHAR)",
            sender_kind=context.sender.kind,
            recipient_kind=context.recipient.kind,
            purposes=self.compiled.purpose_names(context.purpose),
            subject_sql=subject_sql,
        )

    def _relevant(self, query: AnalyzedQuery) -> dict[str, list[str]]:
        """norm id -> its locations that govern a referenced column (norms governing none dropped)."""
        wanted = self._wanted(query)
        out: dict[str, list[str]] = {}
        for norm in self.compiled.norms:
            locs = [
                loc_id
                for loc_id in self.compiled.norm_locations[norm.id]
                if (self.compiled.locations[loc_id].relation, self.compiled.locations[loc_id].attribute) in wanted
            ]
            if locs:
                out[norm.id] = locs
        return out

    def _wanted(self, query: AnalyzedQuery) -> set[tuple[str, str]]:
        wanted: set[tuple[str, str]] = set()
        for rel, cols in query.referenced.items():
            use = cols or frozenset(self.compiled.tables[rel]["columns"])
            wanted |= {(rel, c) for c in use}
        return wanted

    def _authorization_sql(self, context: Context, query: AnalyzedQuery) -> tuple[list[str], tuple[str, ...], list[str]]:
        """The provenance path: per norm its data view (cells tagged with (relation, row_key,
        attribute)), filtered by the instantiated formula; ``__p_auth = __p_pos EXCEPT __p_neg``.

        Independent of the CI-mode rewrite (correlated EXISTS over views rather than subject
        sets); both are checked against the reference evaluator.
        """
        ns = self._norm_sql(context)
        relevant = self._relevant(query)
        pos: list[str] = []
        neg: list[str] = []
        data_ctes: list[str] = []
        self._dec_parts: list[str] = []
        for i, (norm_id, locs) in enumerate(relevant.items()):
            norm = self.compiled.norm(norm_id)
            pred = ns.cond(norm_predicates(norm))
            if pred == "FALSE":
                continue
            dname = quote(f"{PREFIX}d{i}")
            view = "\nUNION ALL\n".join(self.compiled.locations[x].view_sql() for x in locs)
            data_ctes.append(f"{dname} AS ({view})")
            select = f"SELECT d.relation, d.row_key, d.attribute FROM {dname} AS d WHERE {pred}"
            (pos if norm.positive else neg).append(select)
            self._dec_parts.append(
                f"SELECT d.relation, d.row_key, d.attribute, d.value, {lit(norm.id)} AS norm, {lit(norm.sign)} AS sign "
                f"FROM {dname} AS d WHERE {pred}"
            )
        ctes = [f"{PREFIX}ctx AS (SELECT CAST($1 AS VARCHAR) AS sender, CAST($2 AS VARCHAR) AS recipient)"]
        ctes += [f"{role_cte(r)} AS ({self.compiled.roles[r].sql})" for r in sorted(ns.roles_used)]
        ctes += [f"{cond_cte(c)} AS ({self.compiled.conditions[c].sql})" for c in sorted(ns.conditions_used)]
        ctes += data_ctes
        empty = ("SELECT CAST(NULL AS VARCHAR) AS relation, CAST(NULL AS VARCHAR) AS row_key, "
                 "CAST(NULL AS VARCHAR) AS attribute WHERE FALSE")
        ctes.append(f"{PREFIX}pos AS ({' UNION '.join(pos) if pos else empty})")
        if neg:
            ctes.append(f"{PREFIX}neg AS ({' UNION '.join(neg)})")
            ctes.append(f"{PREFIX}auth AS (SELECT * FROM {PREFIX}pos EXCEPT SELECT * FROM {PREFIX}neg)")
        else:
            ctes.append(f"{PREFIX}auth AS (SELECT * FROM {PREFIX}pos)")
        return ctes, tuple(relevant), []

    def _decisions_cte(self, context: Context, query: AnalyzedQuery) -> str:
        empty = (
            "SELECT CAST(NULL AS VARCHAR) AS relation, CAST(NULL AS VARCHAR) AS row_key, CAST(NULL AS VARCHAR) AS attribute, "
            "CAST(NULL AS VARCHAR) AS value, CAST(NULL AS VARCHAR) AS norm, CAST(NULL AS VARCHAR) AS sign WHERE FALSE"
        )
        return f"{PREFIX}dec AS ({' UNION ALL '.join(self._dec_parts) if self._dec_parts else empty})"
