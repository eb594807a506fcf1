"""The SQL of a norm's formula: the conditions of a policy, instantiated for one context.

A norm decides a cell flow when its formula holds (:func:`norm_predicates`: roles, purpose,
condition; for a prohibition also ``when``). :class:`NormSQL` compiles a formula to SQL for
one binding of the sender and the recipient (the runtime's bound identities, or candidate
columns in the satisfiability check); :class:`RowFormulaSQL` compiles it into a per-row
boolean whose subject atoms are LEFT JOINed subject sets. Atoms about an unresolved subject
are unknown (SQL NULL); :func:`permits_sql` and :func:`prohibits_sql` make a formula two-valued
per sign, failing closed. The enforcer (:mod:`pimento.policy.enforce`) and the policy checks
(:mod:`pimento.policy.checks`) both build on it.
"""

from __future__ import annotations

from pimento.errors import PolicyError
from pimento.policy.compiled import CompiledPolicy
from pimento.policy.model import ANY, All, AnyOf, Atom, Cond, Const, Norm, Not, PurposeIs, RoleIs
from pimento.policy.views_sql import PREFIX, lit, quote

__all__ = [
    "FLAGS",
    "NormSQL",
    "RowFormulaSQL",
    "cond_cte",
    "norm_predicates",
    "permits_sql",
    "prohibits_sql",
    "role_cte",
    "subject_resolved_sql",
]

#: The one-row CTE holding the context-only tests of a request.
FLAGS = f"{PREFIX}f"


# --------------------------------------------------------------------------- predicates


class NormSQL:
    """Compiles conditions to SQL for one instantiation.

    ``sender_sql`` / ``recipient_sql`` are SQL expressions for the bound identities
    (the ``__p_ctx`` columns at runtime, candidate columns in the satisfiability check);
    ``sender_kind`` / ``recipient_kind`` their principal kinds; ``purposes`` the purpose
    names the declared purpose belongs to. Atoms about the sender, the recipient and the
    purpose are two-valued (EXISTS, constants). An atom about the subject is *unknown* (SQL
    NULL) when the cell's subject is unresolved (no subject column, a NULL subject, or an
    identifier no subject-principal row has), and NOT/AND/OR are then SQL's three-valued
    (Kleene) connectives, as in the reference evaluator. A positive norm permits where its
    formula is TRUE (:func:`permits_sql`); a negative norm prohibits where it is not FALSE
    (:func:`prohibits_sql`): a norm that cannot be evaluated on a cell denies it.
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
        #: texts a condition view's ``purpose`` column may hold to match (names and their values)
        texts = set(purposes) | {v for n in purposes for v in compiled.purposes.get(n, [])}
        self.purpose_in = "(" + ", ".join(lit(t) for t in sorted(texts)) + ")" if texts else None
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
            test = f"EXISTS (SELECT 1 FROM {role_cte(cond.role)} AS r WHERE r.agent = {self.ref[cond.variable]})"
            return self._unknown_without_subject(test) if cond.variable == "subject" else test
        if isinstance(cond, Atom):
            view = self.c.conditions[cond.name]
            preds = []
            for var in view.variables:
                if var in view.principals and view.principals[var] != self.kind[var]:
                    return "FALSE"
                pred = self.var_pred(var)
                if pred == "FALSE":
                    return "FALSE"
                preds.append(pred)
            self.conditions_used.add(cond.name)
            test = f"EXISTS (SELECT 1 FROM {cond_cte(cond.name)} AS c WHERE {' AND '.join(preds)})"
            return self._unknown_without_subject(test) if "subject" in view.variables else test
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

    def var_pred(self, var: str) -> str:
        """The test of a condition view's column ``var`` against the bound context (alias ``c``).

        ``purpose``: the view's purpose is the declared one, a purpose it belongs to, or an
        ancestor in the hierarchy (consent to marketing covers profiling). The purpose is
        checked against the policy before it gets here, so it folds to the policy's own names.
        """
        if var == "purpose":
            return "FALSE" if self.purpose_in is None else f"c.purpose IN {self.purpose_in}"
        return f"c.{var} = {self.ref[var]}"

    def _unknown_without_subject(self, test: str) -> str:
        """``test`` where the subject is resolved, NULL (unknown) where it is not (fail closed)."""
        return f"CASE WHEN {subject_resolved_sql(self.c, self.ref['subject'])} THEN {test} END"


def subject_resolved_sql(compiled: CompiledPolicy, subject_sql: str) -> str:
    """Two-valued SQL test: ``subject_sql`` names an existing row of the subject principal relation.

    A subject that is NULL, or names no such row (a dangling identifier), is *unresolved*:
    every atom about it is unknown, never false (see :func:`permits_sql`, :func:`prohibits_sql`).
    """
    p = compiled.principals[compiled.subject_principal]
    keys = f"SELECT CAST(s.{quote(p['key'])} AS VARCHAR) FROM {quote(p['relation'])} AS s"
    return f"COALESCE({subject_sql} IN ({keys}), FALSE)"


def permits_sql(pred: str) -> str:
    """A positive norm's three-valued formula as a two-valued test: it permits only when TRUE."""
    return pred if pred in ("TRUE", "FALSE") else f"COALESCE({pred}, FALSE)"


def prohibits_sql(pred: str) -> str:
    """A negative norm's three-valued formula as a two-valued test: it prohibits unless FALSE (fail closed)."""
    return pred if pred in ("TRUE", "FALSE") else f"COALESCE({pred}, TRUE)"


class RowFormulaSQL:
    """Compiles a norm formula, for a bound context, into a per-row SQL boolean.

    The formula depends on the context and the subject only. Every atom that binds the
    subject (a condition view with a ``subject`` column, a subject role) becomes a small
    *subject set*: the view filtered by the bound sender/recipient, computed for this
    context only. All sets of a request are gathered into one membership CTE ``__p_mem``
    (one row per subject, one boolean per set) that the rewrite LEFT JOINs once per subject
    column. Context-only tests (condition views without subject, sender/recipient roles) are
    computed once, in the one-row CTE ``__p_f``; purposes and principal kinds fold to
    constants. There is no subject domain and no INTERSECT/EXCEPT: NOT, AND, OR stay SQL's
    connectives (Kleene's three-valued ones).

    For a row whose subject is unresolved (a location without subject, a NULL subject, an
    identifier with no subject-principal row) every subject atom is NULL (unknown): the
    membership CTE has a ``__p_known`` flag per resolved subject, and the atom reads
    ``CASE WHEN <join>.__p_known THEN COALESCE(<join>.<set>, FALSE) END``. The norm's term
    is then made two-valued per sign (positive: unknown does not permit; negative: unknown
    prohibits), as in the reference evaluator.

    :meth:`compile` returns SQL in which each subject set appears as a token (its name
    between two NUL characters); :meth:`bind` replaces the tokens by the tests of one location.
    """

    def __init__(self, ns: NormSQL) -> None:
        self.ns = ns
        #: set SQL -> CTE name (shared between norms)
        self.sets: dict[str, str] = {}
        #: context-only boolean SQL -> column of the one-row CTE ``__p_f`` (computed once per request)
        self.flags: dict[str, str] = {}

    def _flag(self, sql: str) -> str:
        if sql in ("TRUE", "FALSE"):
            return sql
        if sql not in self.flags:
            self.flags[sql] = f"f{len(self.flags)}"
        return f"{FLAGS}.{self.flags[sql]}"

    def flags_cte(self) -> str | None:
        """``__p_f``: one row, one column per context-only test (None when there is none)."""
        if not self.flags:
            return None
        cols = ", ".join(f"({sql}) AS {name}" for sql, name in self.flags.items())
        return f"{FLAGS} AS MATERIALIZED (SELECT {cols})"

    def _set(self, sql: str) -> str:
        if sql not in self.sets:
            self.sets[sql] = f"{PREFIX}m{len(self.sets)}"
        return f"\x00{self.sets[sql]}\x00"

    def compile(self, cond: Cond) -> str:
        ns = self.ns
        if isinstance(cond, Atom):
            view = ns.c.conditions[cond.name]
            if "subject" not in view.variables:
                return self._flag(ns.cond(cond))
            preds = []
            for var in view.variables:
                if var in view.principals and view.principals[var] != ns.kind[var]:
                    return "FALSE"
                if var != "subject":
                    pred = ns.var_pred(var)
                    if pred == "FALSE":
                        return "FALSE"
                    preds.append(pred)
            where = f" WHERE {' AND '.join(preds)}" if preds else ""
            return self._set(f"SELECT DISTINCT c.subject FROM ({view.sql}) AS c{where}")
        if isinstance(cond, RoleIs) and cond.variable == "subject":
            role = ns.c.roles[cond.role]
            if role.principal != ns.kind["subject"]:
                return "FALSE"
            return self._set(f"SELECT DISTINCT r.agent AS subject FROM ({role.sql}) AS r")
        if isinstance(cond, Not):
            inner = self.compile(cond.arg)
            return {"TRUE": "FALSE", "FALSE": "TRUE"}.get(inner, f"NOT ({inner})")
        if isinstance(cond, (All, AnyOf)):
            parts = [self.compile(a) for a in cond.args]
            absorbing, neutral, op = ("FALSE", "TRUE", " AND ") if isinstance(cond, All) else ("TRUE", "FALSE", " OR ")
            if absorbing in parts:
                return absorbing
            parts = list(dict.fromkeys(p for p in parts if p != neutral))
            if not parts:
                return neutral
            return parts[0] if len(parts) == 1 else "(" + op.join(f"({p})" for p in parts) + ")"
        return self._flag(ns.cond(cond))

    @staticmethod
    def tokens(sql: str) -> list[str]:
        """The subject-set names used in a compiled formula."""
        return sql.split("\x00")[1::2]

    @staticmethod
    def bind(sql: str, test: dict[str, str]) -> str:
        """Replace each set token by ``test[name]`` (a SQL boolean)."""
        parts = sql.split("\x00")
        for i in range(1, len(parts), 2):
            parts[i] = test[parts[i]]
        return "".join(parts)


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
