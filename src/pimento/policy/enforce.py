"""Runtime enforcement: context + analyst query -> authorized cells A_c(D) and the CI answer.

Steps (Section 4.2.3 of the paper):

1. **Relevant norms.** The analyst query is validated and its lineage computed
   (:mod:`pimento.policy.lineage`): the base columns it references. Norms whose data views
   govern none of them are dropped; data views keep only the referenced locations.
2. **Instantiate.** The context ``(sender, recipient, purpose)`` is bound: identities as
   ``?`` parameters of one ``__p_ctx`` CTE (never spliced into SQL), the purpose and the
   principal kinds of sender and recipient fold to constants in Python. A positive norm
   contributes the cells where ``roles AND purpose AND condition`` is TRUE; a negative norm
   the cells where ``roles AND purpose AND when AND NOT condition`` is not FALSE. Atoms about
   an unresolved subject are unknown (three-valued logic), so a norm that cannot be
   evaluated on a cell never permits it and always prohibits it (fail closed).
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

**Roles.** :meth:`Enforcer.authorize` returns the analyst's answer (:class:`Authorization`:
public inputs and the result on the authorized data, nothing else). :meth:`Enforcer.explain`,
:meth:`Enforcer.summary`, :meth:`Enforcer.decisions` and :meth:`Enforcer.authorized_cells`
are custodian tools: they show which norms denied how many cells, and prohibited values.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from pimento.engines.base import Engine
from pimento.errors import PolicyError
from pimento.policy.compiled import CompiledPolicy
from pimento.policy.formula import (
    FLAGS,
    NormSQL,
    RowFormulaSQL,
    cond_cte,
    norm_predicates,
    permits_sql,
    prohibits_sql,
    role_cte,
    subject_resolved_sql,
)
from pimento.policy.lineage import AnalyzedQuery, analyze_query
from pimento.policy.views_sql import NO_SUBJECT, PREFIX, lit, location_view_sql, quote
from pimento.schema import Catalog

__all__ = [
    "Authorization",
    "Context",
    "Enforcer",
    "Explanation",
    "Identity",
    "NormSQL",
    "norm_predicates",
    "permits_sql",
    "prohibits_sql",
    "subject_resolved_sql",
]

#: The CTE with one row per subject and one membership flag per subject set of a request.
MEMBERS = f"{PREFIX}mem"
#: Its flag: the subject resolves to a row of the subject principal relation.
KNOWN = f"{PREFIX}known"


def context_sql(dialect: str) -> tuple[str, str, str]:
    """How a request binds the context's identities on ``dialect``: the ``__p_ctx`` CTE and the
    SQL of the sender and of the recipient. The parameters are always ``[sender, recipient]``.

    Numbered parameters where the engine has them (DuckDB ``$1``, SQLite ``?1``): the identities
    are then constants to the planner (a scalar subquery per use measured about 45% slower on
    DuckDB). PostgreSQL (``?`` rewritten for psycopg, each used once) reads them from the
    one-row ``__p_ctx`` CTE, which its planner evaluates once (an InitPlan).
    """
    if dialect in ("duckdb", "sqlite"):
        s, r = ("$1", "$2") if dialect == "duckdb" else ("?1", "?2")
        cte = f"{PREFIX}ctx AS (SELECT CAST({s} AS VARCHAR) AS sender, CAST({r} AS VARCHAR) AS recipient)"
        return cte, f"CAST({s} AS VARCHAR)", f"CAST({r} AS VARCHAR)"
    cte = f"{PREFIX}ctx AS (SELECT CAST(? AS VARCHAR) AS sender, CAST(? AS VARCHAR) AS recipient)"
    return cte, f"(SELECT x.sender FROM {PREFIX}ctx AS x)", f"(SELECT x.recipient FROM {PREFIX}ctx AS x)"

#: A subject atom on a cell whose subject is unresolved: unknown.
UNKNOWN = "CAST(NULL AS BOOLEAN)"


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


# --------------------------------------------------------------------------- result


@dataclass
class _RewritePlan:
    """The SQL of one (query, context shape): the CI-mode rewrite, and the provenance path once asked for."""

    query: AnalyzedQuery
    sql: str
    relevant: tuple[str, ...]
    #: a context of this shape (only its kinds and purpose are used to build SQL)
    context: Context
    provenance: str | None = None


@dataclass(frozen=True)
class Authorization:
    """The analyst's answer to one request: a plain value, safe to hand to the analyst.

    It holds the public inputs (the context, the policy's name, the analyst's SQL as given)
    and the query's result on the authorized database, nothing else: not the norms that
    decided, not how many cells or rows were withheld, not the rewritten SQL, not the time
    it took (see docs/contextual-integrity.md, "What the analyst receives"). The diagnostics
    are a custodian tool: :meth:`Enforcer.explain`.
    """

    context: Context
    policy: str
    sql: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "context": {
                "sender": str(self.context.sender),
                "recipient": str(self.context.recipient),
                "purpose": self.context.purpose,
            },
            "policy": self.policy,
            "sql": self.sql,
            "columns": list(self.columns),
            "rows": [list(r) for r in self.rows],
        }


@dataclass(frozen=True)
class Explanation:
    """Custodian-only diagnostics of one request: they show private data.

    ``summary`` counts, per (column, norm, sign), the cells the norm decided (deny counts
    are counts of prohibited cells: private); ``cells`` lists governed cells with their
    values and deciding norms (``failed_closed_by``: deny norms that could not be evaluated
    on the cell, its subject being unresolved, and so prohibit it). Never hand it to an analyst.
    """

    context: Context
    policy: str
    sql: str
    rewritten_sql: str
    params: tuple[str, ...]
    referenced: dict[str, list[str]]
    returned: dict[str, list[str]]
    relevant_norms: tuple[str, ...]
    summary: tuple[dict[str, Any], ...]
    cells: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "custodian_only": True,
            "context": {
                "sender": str(self.context.sender),
                "recipient": str(self.context.recipient),
                "purpose": self.context.purpose,
            },
            "policy": self.policy,
            "sql": self.sql,
            "referenced": self.referenced,
            "returned": self.returned,
            "relevant_norms": list(self.relevant_norms),
            "decided": list(self.summary),
            "cells": list(self.cells),
            "rewritten_sql": self.rewritten_sql,
        }


# --------------------------------------------------------------------------- enforcer


class Enforcer:
    """Authorizes requests against one compiled policy and one database."""

    def __init__(self, compiled: CompiledPolicy, engine: Engine, catalog: Catalog) -> None:
        """Raises PolicyError: the policy records no information implication (an older file), or was
        compiled for another database."""
        compiled.require_implication()
        compiled.check_database(catalog, getattr(engine, "dialect", None))
        self.compiled = compiled
        self.engine = engine
        self.catalog = catalog
        self.dialect = compiled.dialect
        #: the engine's own dialect decides how the context's identities are bound
        self._bind_dialect = getattr(engine, "dialect", None) or compiled.dialect
        self._known: dict[tuple[str, str], bool] = {}
        self._plans: OrderedDict[tuple[Any, ...], _RewritePlan] = OrderedDict()

    #: How many (query, context shape) plans are kept.
    plan_cache_size = 256

    # ---- context -------------------------------------------------------------------

    def identity(self, value: str, *, what: str, verify: bool = False) -> Identity:
        """Parse ``KIND:ID`` with ``KIND`` a principal of the policy.

        The analyst's path (``verify=False``) never reads the data: an identifier that no
        principal row has holds no role and matches no condition, so it is authorized only
        what norms grant to any identity. Refusing it would tell the analyst who is in the
        private relations (``patient:7`` exists or not). Custodian tools pass ``verify=True``:
        the identity must exist, and a bare ``ID`` found in exactly one principal relation is
        accepted.
        """
        if not isinstance(value, str) or not value.strip():
            raise PolicyError(f"the {what} is empty", hint="write KIND:ID, e.g. employee:20")
        value = value.strip()
        kind, sep, ident = value.partition(":")
        kinds = ", ".join(self.compiled.principals)
        if sep and kind in self.compiled.principals:
            if not ident:
                raise PolicyError(f"the {what} {value!r} has no identifier", hint="write KIND:ID, e.g. employee:20")
            if not verify or self._exists(kind, ident):
                return Identity(kind, ident)
            p = self.compiled.principals[kind]
            raise PolicyError(
                f"unknown {what} {value!r}: no {p['relation']} row has {p['key']} = {ident!r}",
                hint=f"use an existing {kind}",
            )
        if not verify:
            raise PolicyError(f"unknown {what} {value!r}: write KIND:ID with KIND one of {kinds}",
                              hint="write KIND:ID, e.g. employee:20")
        found = [k for k in self.compiled.principals if self._exists(k, value)]
        if len(found) == 1:
            return Identity(found[0], value)
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

    def context(self, sender: str, recipient: str, purpose: str, *, verify: bool = False) -> Context:
        """Validate a context: identities ``KIND:ID`` of known kinds (that exist, with ``verify``,
        for custodian tools; see :meth:`identity`) and a known purpose; errors name the value."""
        s = self.identity(sender, what="sender", verify=verify)
        r = self.identity(recipient, what="recipient", verify=verify)
        if not isinstance(purpose, str) or not self.compiled.purpose_names(purpose):
            known = sorted({v for vs in self.compiled.purposes.values() for v in vs})
            raise PolicyError(f"unknown purpose {purpose!r}", hint=f"purposes: {', '.join(known)}")
        return Context(s, r, purpose)

    # ---- authorization ---------------------------------------------------------------

    def authorize(self, context: Context, sql: str) -> Authorization:
        """Run ``sql`` over the authorized data of ``context`` (see the module docstring).

        The rewritten SQL depends on the query text and the context's *shape* (principal
        kinds of sender and recipient, purposes the declared purpose belongs to), never on
        the identities, which are bound parameters; it is built once per shape and query and
        cached (``plan_cache_size`` entries, least recently used first out).

        Returns the analyst's answer only (:class:`Authorization`); diagnostics are
        :meth:`explain`'s, for the custodian.
        """
        plan = self._plan(context, sql)
        res = self.engine.execute(plan.sql, self._params(context))
        return Authorization(context, self.compiled.name, sql, tuple(res.columns), tuple(tuple(r) for r in res.rows))

    # ---- custodian diagnostics (they show private data) -----------------------------

    def explain(self, context: Context, sql: str, *, cells: int = 0) -> Explanation:
        """Custodian tool: which norms decided how many cells of the referenced columns, and
        up to ``cells`` governed cells with their values and deciding norms. Shows private
        data (deny counts, prohibited values): never return it to an analyst."""
        plan = self._plan(context, sql)
        return Explanation(
            context=context,
            policy=self.compiled.name,
            sql=sql,
            rewritten_sql=plan.sql,
            params=tuple(self._params(context)),
            referenced={k: sorted(v) for k, v in sorted(plan.query.referenced.items())},
            returned={name: sorted(f"{r}.{c}" for r, c in deps) for name, deps in plan.query.returned},
            relevant_norms=plan.relevant,
            summary=tuple(self.summary(context, sql)),
            cells=tuple(self.decisions(context, sql, limit=cells)) if cells else (),
        )

    def authorized_cells(self, context: Context, sql: str) -> set[tuple[str, str, str]]:
        """Custodian/test tool: A_c(D) restricted to the columns ``sql`` references, as
        ``(relation, row_key, attribute)``, computed on the provenance path."""
        plan = self._plan(context, sql)
        res = self.engine.execute(
            self._provenance_with(plan) + f" SELECT relation, row_key, attribute FROM {PREFIX}auth", self._params(context)
        )
        return {tuple(r) for r in res.rows}

    def decisions(self, context: Context, sql: str, *, limit: int | None = 1000) -> list[dict[str, Any]]:
        """Custodian tool: per referenced cell governed by a relevant norm, its value, the
        permitting and prohibiting norms, and the verdict."""
        plan = self._plan(context, sql)
        query = self._provenance_with(plan) + (
            f" SELECT relation, row_key, attribute, value, norm, sign, unknown FROM {PREFIX}dec "
            "ORDER BY relation, attribute, row_key, norm"
        )
        grouped: dict[tuple[Any, ...], dict[str, Any]] = {}
        for relation, row_key, attribute, value, norm, sign, unknown in \
                self.engine.execute(query, self._params(context)).rows:
            key = (relation, row_key, attribute, value)
            if key not in grouped:
                if limit is not None and len(grouped) >= int(limit):
                    break
                grouped[key] = {"permit": set(), "deny": set(), "unknown": set()}
            grouped[key]["permit" if sign == "permit" else "deny"].add(norm)
            if sign == "deny" and unknown:
                grouped[key]["unknown"].add(norm)
        out = []
        for (relation, row_key, attribute, value), g in grouped.items():
            out.append({
                "relation": relation,
                "row_key": row_key,
                "attribute": attribute,
                "value": value,
                "permitted_by": sorted(g["permit"]),
                "prohibited_by": sorted(g["deny"]),
                "failed_closed_by": sorted(g["unknown"]),
                "authorized": bool(g["permit"]) and not g["deny"],
            })
        return out

    def summary(self, context: Context, sql: str) -> list[dict[str, Any]]:
        """Custodian tool: per (relation, attribute, norm, sign), how many cells the norm decided."""
        plan = self._plan(context, sql)
        res = self.engine.execute(
            self._provenance_with(plan)
            + f" SELECT relation, attribute, norm, sign, COUNT(DISTINCT row_key) FROM {PREFIX}dec "
            "GROUP BY relation, attribute, norm, sign ORDER BY 1, 2, 3, 4",
            self._params(context),
        )
        return [
            {"relation": r, "attribute": a, "norm": n, "sign": s, "cells": int(k)} for r, a, n, s, k in res.rows
        ]

    @staticmethod
    def _params(context: Context) -> list[str]:
        return [context.sender.id, context.recipient.id]

    def _plan(self, context: Context, sql: str) -> _RewritePlan:
        key = (sql, context.sender.kind, context.recipient.kind,
               frozenset(self.compiled.purpose_names(context.purpose)))
        plan = self._plans.get(key)
        if plan is not None:
            self._plans.move_to_end(key)
            return plan
        query = analyze_query(sql, self.catalog, dialect=self.dialect)
        ctes, relevant = self._runtime_ctes(context, query)
        names = {rel: f"{PREFIX}t_{rel.lower()}" for rel in query.referenced}
        body, their_ctes, recursive = query.rewrite(names)
        final = ("WITH RECURSIVE " if recursive else "WITH ") + ",\n".join(ctes + their_ctes) + "\n" + body
        plan = _RewritePlan(query, final, relevant, context)
        self._plans[key] = plan
        if len(self._plans) > self.plan_cache_size:
            self._plans.popitem(last=False)
        return plan

    def _provenance_with(self, plan: _RewritePlan) -> str:
        """The WITH clause of the provenance path (``__p_auth``, ``__p_dec``), built on first use."""
        if plan.provenance is None:
            auth_ctes, parts = self._authorization_sql(plan.context, plan.query)
            plan.provenance = "WITH " + ",\n".join(auth_ctes + [self._decisions_cte(parts)])
        return plan.provenance

    def _runtime_ctes(self, context: Context, query: AnalyzedQuery) -> tuple[list[str], tuple[str, ...]]:
        """CTEs of the CI-mode rewrite: the context's subject sets, then ``R_c`` per relation.

        A norm's formula depends on the context and the subject only, never on the cell. It
        is compiled once (:class:`RowFormulaSQL`) into a row-level boolean over the subject
        sets it needs; a cell of ``R.c`` is authorized iff some positive norm has a location
        on ``R.c`` whose filter holds for the row and whose formula holds for the row's
        subject, and no negative norm does.
        """
        ns = self._norm_sql(context)
        relevant = self._relevant(query)
        formulas = RowFormulaSQL(ns)
        by_column: dict[tuple[str, str], tuple[list[Any], list[Any]]] = {}
        for norm_id, locs in relevant.items():
            norm = self.compiled.norm(norm_id)
            formula = formulas.compile(norm_predicates(norm))
            if formula == "FALSE":
                continue
            for x in locs:
                loc = self.compiled.locations[x]
                pos, neg = by_column.setdefault((loc.relation, loc.attribute), ([], []))
                (pos if norm.positive else neg).append((loc, formula))
        # __p_ctx binds both parameters even when no formula needs one of them
        ctes = [context_sql(self._bind_dialect)[0]]
        ctes += [f"{role_cte(r)} AS MATERIALIZED ({self.compiled.roles[r].sql})" for r in sorted(ns.roles_used)]
        ctes += [f"{cond_cte(c)} AS MATERIALIZED ({self.compiled.conditions[c].sql})" for c in sorted(ns.conditions_used)]
        if formulas.sets:
            # one membership row per subject: a flag per subject set, so one hash join per subject
            # column; KNOWN marks the subjects that resolve to a row of the subject principal
            p = self.compiled.principals[self.compiled.subject_principal]
            union = " UNION ALL ".join(
                [f"SELECT CAST(s.{quote(p['key'])} AS VARCHAR) AS subject, -1 AS k FROM {quote(p['relation'])} AS s"]
                + [f"SELECT subject, {k} AS k FROM ({sql}) AS s{k}" for k, sql in enumerate(formulas.sets)])
            # MAX(CASE ...) = 1 rather than bool_or: the same SQL on DuckDB, SQLite and PostgreSQL
            member = ", ".join([f"MAX(CASE WHEN k = -1 THEN 1 ELSE 0 END) = 1 AS {KNOWN}"]
                               + [f"MAX(CASE WHEN k = {k} THEN 1 ELSE 0 END) = 1 AS {name}"
                                  for k, name in enumerate(formulas.sets.values())])
            ctes.append(f"{MEMBERS} AS MATERIALIZED (SELECT subject, {member} FROM ({union}) AS u "
                        "WHERE subject IS NOT NULL GROUP BY subject)")
        flags = formulas.flags_cte()
        if flags:
            ctes.append(flags)
        for rel, cols in sorted(query.referenced.items()):
            ctes.append(self._rewrite_cte(rel, cols, by_column, with_flags=flags is not None))
        return ctes, tuple(relevant)

    def _rewrite_cte(
        self,
        relation: str,
        referenced: frozenset[str],
        by_column: dict[tuple[str, str], tuple[list[Any], list[Any]]],
        *,
        with_flags: bool = False,
    ) -> str:
        """``R_c``: authorized cells kept, others NULL, rows without an authorized referenced cell removed.

        Each subject set a formula needs is LEFT JOINed once per subject column (a set is
        DISTINCT, so a join never duplicates a row), each distinct location filter is
        computed once per row; the per-column flags combine them:
        ``(OR positive terms) AND NOT (OR negative terms)``.
        """
        info = self.compiled.tables[relation]
        cols = info["columns"]
        use = [c for c in cols if c in referenced] or list(cols)
        joins: dict[tuple[str, str], str] = {}
        wheres: dict[str, str] = {}
        join_sql: list[str] = []

        def term(loc: Any, formula: str, positive: bool) -> str:
            tests: dict[str, str] = {}
            for name in RowFormulaSQL.tokens(formula):
                if loc.subject_sql == NO_SUBJECT:
                    tests[name] = UNKNOWN
                    continue
                key = loc.subject_sql
                if key not in joins:
                    alias = f"{PREFIX}j{len(joins)}"
                    joins[key] = alias
                    join_sql.append(
                        f"LEFT JOIN {MEMBERS} AS {quote(alias)} ON {quote(alias)}.subject = {loc.subject_sql}"
                    )
                j = quote(joins[key])
                tests[name] = f"CASE WHEN {j}.{quote(KNOWN)} THEN COALESCE({j}.{quote(name)}, FALSE) END"
            decided = RowFormulaSQL.bind(formula, tests)
            if tests:  # three-valued: unknown never permits, always prohibits (fail closed)
                decided = permits_sql(decided) if positive else prohibits_sql(decided)
            if loc.where_sql == "TRUE":
                return f"({decided})"
            if loc.where_sql not in wheres:
                wheres[loc.where_sql] = f"{PREFIX}w{len(wheres)}"
            return f"(t.{quote(wheres[loc.where_sql])} AND ({decided}))"

        flags = []
        for i, c in enumerate(cols):
            pos, neg = by_column.get((relation, c), ([], []))
            if c not in use or not pos:
                continue
            expr = "(" + " OR ".join(dict.fromkeys(term(loc, formula, True) for loc, formula in pos)) + ")"
            if neg:
                expr += " AND NOT (" + " OR ".join(dict.fromkeys(term(loc, formula, False) for loc, formula in neg)) + ")"
            flags.append((i, c, expr))
        name = quote(PREFIX + "t_" + relation.lower())
        if not flags:
            sel = ", ".join(f"CASE WHEN FALSE THEN t.{quote(c)} END AS {quote(c)}" for c in cols)
            return f"{name} AS (SELECT {sel} FROM {quote(relation)} AS t WHERE FALSE)"
        ok = {i: quote(f"{PREFIX}ok{i}") for i, _, _ in flags}
        base_cols = ", ".join(f"t.{quote(c)}" for c in cols)
        where_cols = "".join(f", ({w}) AS {quote(a)}" for w, a in wheres.items())
        flag_cols = "".join(f", ({e}) AS {ok[i]}" for i, _, e in flags)
        source = f"{quote(relation)} AS t"
        if wheres:
            # flags refer to the filter columns: compute filters first, then the flags
            source = f"(SELECT {base_cols}{where_cols} FROM {quote(relation)} AS t) AS t"
        if with_flags:
            join_sql.insert(0, f"CROSS JOIN {FLAGS}")
        base = f"SELECT {base_cols}{flag_cols} FROM {source} {' '.join(join_sql)}"
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
            sender_sql=context_sql(self._bind_dialect)[1],
            recipient_sql=context_sql(self._bind_dialect)[2],
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

    def _authorization_sql(self, context: Context, query: AnalyzedQuery) -> tuple[list[str], list[str]]:
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
        dec_parts: list[str] = []
        for i, (norm_id, locs) in enumerate(relevant.items()):
            norm = self.compiled.norm(norm_id)
            pred = ns.cond(norm_predicates(norm))
            if pred == "FALSE":
                continue
            dname = quote(f"{PREFIX}d{i}")
            view = "\nUNION ALL\n".join(location_view_sql(self.compiled.locations[x]) for x in locs)
            data_ctes.append(f"{dname} AS ({view})")
            decides = permits_sql(pred) if norm.positive else prohibits_sql(pred)
            select = f"SELECT d.relation, d.row_key, d.attribute FROM {dname} AS d WHERE {decides}"
            (pos if norm.positive else neg).append(select)
            dec_parts.append(
                f"SELECT d.relation, d.row_key, d.attribute, d.value, {lit(norm.id)} AS norm, {lit(norm.sign)} AS sign, "
                f"({pred}) IS NULL AS unknown FROM {dname} AS d WHERE {decides}"
            )
        ctes = [context_sql(self._bind_dialect)[0]]
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
        return ctes, dec_parts

    def _decisions_cte(self, parts: list[str]) -> str:
        empty = (
            "SELECT CAST(NULL AS VARCHAR) AS relation, CAST(NULL AS VARCHAR) AS row_key, CAST(NULL AS VARCHAR) AS attribute, "
            "CAST(NULL AS VARCHAR) AS value, CAST(NULL AS VARCHAR) AS norm, CAST(NULL AS VARCHAR) AS sign, "
            "FALSE AS unknown WHERE FALSE"
        )
        return f"{PREFIX}dec AS ({' UNION ALL '.join(parts) if parts else empty})"
