"""A small reference evaluator: Barth semantics applied to tuples directly in Python.

It shares no SQL with the compiler. The custodian's grounding is given as Python
functions over rows (role membership, location filters, condition relations computed in
Python, e.g. a transitive closure by fixpoint), information implication is recomputed from
functional dependencies and foreign keys over the rows, and every cell is decided by the
definition:

    authorized(cell) = (some positive norm permits it) and not (some negative norm prohibits it)
    positive N permits   iff  roles(N) and purpose(N) and condition(N)            is True
    negative N prohibits iff  roles(N) and purpose(N) and when(N) and not cond(N)  is not False

in three-valued (Kleene) logic, where an atom about the cell's subject is unknown when the
subject is unresolved (no subject column, NULL, or no subject-principal row with that
identifier): a norm that cannot be evaluated on a cell never permits it and always
prohibits it (fail closed).

Identities are compared as text (``str(value)``), as the compiled views do. The CI-mode
answer is the analyst query run on the authorized database built in Python (rows with an
authorized referenced cell; unauthorized cells NULL) loaded into a fresh in-memory DuckDB.
Used by the differential tests and by the context benchmark for ground truth.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import duckdb

from pimento.policy.model import ANY, All, AnyOf, Atom, Cond, Const, Norm, Not, PurposeIs, RoleIs
from pimento.sql.quote import quote_identifier

__all__ = ["RefCondition", "RefLocation", "RefRole", "ReferencePolicy", "row_key"]

Row = dict[str, Any]
Rows = dict[str, list[Row]]


def _s(value: Any) -> str | None:
    return None if value is None else str(value)


def row_key(row: Row, key: tuple[str, ...]) -> str:
    """The provenance row key, as the compiler renders it."""
    if len(key) == 1:
        return str(row[key[0]])
    return "|".join(str(row[k]).replace("\\", "\\\\").replace("|", "\\|") for k in key)


def _and(values: Iterable[bool | None]) -> bool | None:
    """Kleene conjunction: False if any is False, else unknown if any is unknown, else True."""
    values = list(values)
    if False in values:
        return False
    return None if None in values else True


@dataclass(frozen=True)
class RefRole:
    kind: str
    member: Callable[[Row], bool] = lambda row: True


@dataclass(frozen=True)
class RefCondition:
    """A condition relation: ``rows(db) -> iterable of dicts over its variables``."""

    variables: tuple[str, ...]
    principals: dict[str, str]
    rows: Callable[[Rows], Iterable[dict[str, Any]]]


@dataclass(frozen=True)
class RefLocation:
    relation: str
    attribute: str
    where: Callable[[Row], bool] = lambda row: True
    #: the column holding the subject, or a function ``(row, db) -> subject value`` (a path
    #: through other relations, written in Python), or None: no subject
    subject: str | Callable[[Row, Rows], Any] | None = None


@dataclass
class ReferencePolicy:
    """The grounding in Python, plus the norms (same :class:`Norm` objects as the compiler)."""

    principals: dict[str, tuple[str, str]]  # kind -> (relation, key column)
    subject_kind: str
    roles: dict[str, RefRole]
    conditions: dict[str, RefCondition]
    data_types: dict[str, list[RefLocation]]
    purposes: dict[str, list[str]]
    norms: list[Norm]
    keys: dict[str, tuple[str, ...]]  # relation -> row key columns
    columns: dict[str, list[str]]  # relation -> columns
    dependencies: list[tuple[str, str, str]] = field(default_factory=list)  # (relation, lhs, rhs)
    #: (table, col, ref_table, ref_col); col and ref_col may be tuples (a multi-column key)
    foreign_keys: list[tuple[Any, Any, Any, Any]] = field(default_factory=list)
    #: purpose name -> the purposes that include it directly (its parents in the hierarchy)
    purpose_parents: dict[str, list[str]] = field(default_factory=dict)
    #: relation -> how its rows reach their subject (used for locations implication adds)
    subjects: dict[str, str | Callable[[Row, Rows], Any]] = field(default_factory=dict)

    # ------------------------------------------------------------------ purposes

    def _purpose_set(self, value: str) -> set[str]:
        """Purpose names the declared ``value`` falls under: those listing it, and their ancestors."""
        out: set[str] = set()
        stack = [name for name, values in self.purposes.items() if value in values]
        while stack:
            name = stack.pop()
            if name not in out:
                out.add(name)
                stack.extend(self.purpose_parents.get(name, []))
        return out

    def _purpose_texts(self, value: str) -> set[str]:
        names = self._purpose_set(value)
        return names | {v for n in names for v in self.purposes[n]}

    # ------------------------------------------------------------------ implication (P -> P+)

    def _implied(self, locs: list[RefLocation], db: Rows) -> list[tuple[RefLocation, Callable[[Row], bool]]]:
        """Locations with their row filters, closed under FDs and FKs (for negative norms)."""
        out: list[tuple[RefLocation, Callable[[Row], bool]]] = [(loc, loc.where) for loc in locs]
        work = list(out)
        seen = {(loc.relation, loc.attribute, id(loc.where)) for loc in locs}
        while work:
            loc, where = work.pop(0)
            derived: list[tuple[str, str, Callable[[Row], bool]]] = []
            for rel, lhs, rhs in self.dependencies:
                if rel == loc.relation and rhs == loc.attribute and lhs != loc.attribute:
                    derived.append((rel, lhs, where))
            for table, cols, ref_table, ref_cols in self.foreign_keys:
                cols = (cols,) if isinstance(cols, str) else tuple(cols)
                ref_cols = (ref_cols,) if isinstance(ref_cols, str) else tuple(ref_cols)
                if ref_table != loc.relation or loc.attribute not in ref_cols:
                    continue
                allowed = {tuple(r[c] for c in ref_cols) for r in db[ref_table] if where(r)}
                col = cols[ref_cols.index(loc.attribute)]

                def f(row: Row, cols: tuple = cols, allowed: set = allowed) -> bool:
                    value = tuple(row[c] for c in cols)
                    return None not in value and value in allowed

                derived.append((table, col, f))
            for rel, attr, row_filter in derived:
                marker = (rel, attr, id(row_filter)) if row_filter is not where else (rel, attr, id(where))
                if marker in seen:
                    continue
                seen.add(marker)
                subject = self._subject_column(rel)
                new = (RefLocation(rel, attr, row_filter, subject), row_filter)
                out.append(new)
                work.append(new)
        return out

    def _subject_column(self, relation: str) -> Any:
        if relation in self.subjects:
            return self.subjects[relation]
        rel, key = self.principals[self.subject_kind]
        if relation == rel:
            return key
        for table, col, ref_table, ref_col in self.foreign_keys:
            if table == relation and ref_table == rel and ref_col == key and isinstance(col, str):
                return col
        return None

    # ------------------------------------------------------------------ formulas
    #
    # Three-valued (Kleene) logic: True, False, or None (unknown). An atom about the subject
    # is unknown when the cell's subject is unresolved (``env["subject"] is None``); an atom
    # whose principal kinds cannot match is False whatever the subject.

    def _holds(self, cond: Cond, env: dict[str, Any]) -> bool | None:
        if isinstance(cond, Const):
            return cond.value
        if isinstance(cond, PurposeIs):
            return cond.purpose in self._purpose_set(env["purpose"])
        if isinstance(cond, RoleIs):
            value, kind = env[cond.variable], env["kinds"][cond.variable]
            role = self.roles[cond.role]
            if role.kind != kind:
                return False
            if value is None:
                return None if cond.variable == "subject" else False
            return value in env["members"][cond.role]
        if isinstance(cond, Atom):
            view = self.conditions[cond.name]
            for var in view.variables:
                if var in view.principals and view.principals[var] != env["kinds"][var]:
                    return False
            for var in view.variables:
                if env[var] is None:
                    return None if var == "subject" else False
            rows = env["views"][cond.name]
            if "purpose" not in view.variables:
                return tuple(env[v] for v in view.variables) in rows
            # a row for a purpose covers the declared purpose when it is one of its purposes or an ancestor
            texts = self._purpose_texts(env["purpose"])
            i = view.variables.index("purpose")
            want = [env[v] for v in view.variables]
            return any(t in rows for t in (tuple(want[:i] + [p] + want[i + 1:]) for p in texts))
        if isinstance(cond, Not):
            inner = self._holds(cond.arg, env)
            return None if inner is None else not inner
        if isinstance(cond, All):
            return _and(self._holds(a, env) for a in cond.args)
        if isinstance(cond, AnyOf):
            values = [self._holds(a, env) for a in cond.args]
            if True in values:
                return True
            return None if None in values else False
        raise TypeError(cond)

    def _decides(self, norm: Norm, env: dict[str, Any]) -> bool:
        """Positive: it permits iff its formula is True. Negative: it prohibits unless its formula
        is False (a prohibition that cannot be evaluated on the cell denies it: fail closed)."""
        parts: list[bool | None] = []
        for var, role in (("sender", norm.sender), ("recipient", norm.recipient), ("subject", norm.subject)):
            if role != ANY:
                parts.append(self._holds(RoleIs(var, role), env))
        parts.append(norm.purpose == ANY or norm.purpose in self._purpose_set(env["purpose"]))
        if norm.positive:
            parts.append(self._holds(norm.condition, env))
            return _and(parts) is True
        parts.append(self._holds(norm.when, env))
        requirement = self._holds(norm.condition, env)
        parts.append(None if requirement is None else not requirement)
        return _and(parts) is not False

    # ------------------------------------------------------------------ cells

    def authorized_cells(
        self,
        db: Rows,
        sender: tuple[str, str],
        recipient: tuple[str, str],
        purpose: str,
        wanted: set[tuple[str, str]] | None = None,
    ) -> set[tuple[str, str, str]]:
        """Every authorized cell ``(relation, row_key, attribute)`` (restricted to ``wanted`` columns).

        A cell's subject is resolved iff its location has a subject column and the value names
        a row of the subject principal relation; otherwise the subject is unknown.
        """
        members = {}
        for name, role in self.roles.items():
            rel, key = self.principals[role.kind]
            members[name] = {str(r[key]) for r in db[rel] if r[key] is not None and role.member(r)}
        subj_rel, subj_key = self.principals[self.subject_kind]
        subjects = {str(r[subj_key]) for r in db[subj_rel] if r[subj_key] is not None}
        views = {
            name: {tuple(_s(t[v]) for v in c.variables) for t in c.rows(db)} for name, c in self.conditions.items()
        }
        env_base = {
            "sender": sender[1],
            "recipient": recipient[1],
            "purpose": purpose,
            "kinds": {"sender": sender[0], "recipient": recipient[0], "subject": self.subject_kind},
            "members": members,
            "views": views,
        }
        per_norm = []
        for norm in self.norms:
            locs = [loc for dt in norm.data for loc in self.data_types[dt]]
            with_filters = self._implied(locs, db) if not norm.positive else [(loc, loc.where) for loc in locs]
            per_norm.append((norm, with_filters))
        permitted: set[tuple[str, str, str]] = set()
        prohibited: set[tuple[str, str, str]] = set()
        for norm, filtered in per_norm:
            for loc, where in filtered:
                if wanted is not None and (loc.relation, loc.attribute) not in wanted:
                    continue
                for row in db[loc.relation]:
                    if not where(row):
                        continue
                    if loc.subject is None:
                        subject = None
                    elif callable(loc.subject):
                        subject = _s(loc.subject(row, db))
                    else:
                        subject = _s(row[loc.subject])
                    env = dict(env_base, subject=subject if subject in subjects else None)
                    if not self._decides(norm, env):
                        continue
                    cell = (loc.relation, row_key(row, self.keys[loc.relation]), loc.attribute)
                    (permitted if norm.positive else prohibited).add(cell)
        return permitted - prohibited

    # ------------------------------------------------------------------ CI-mode answer

    def authorized_database(self, db: Rows, cells: set[tuple[str, str, str]], referenced: dict[str, frozenset[str]]) -> Rows:
        """Rows with an authorized referenced cell, unauthorized cells set to None."""
        out: Rows = {}
        for rel, rows in db.items():
            cols = self.columns[rel]
            use = set(referenced.get(rel) or cols)
            kept = []
            for row in rows:
                key = row_key(row, self.keys[rel])
                ok = {c for c in use if (rel, key, c) in cells}
                if ok:
                    kept.append({c: (row[c] if c in ok else None) for c in cols})
            out[rel] = kept
        return out

    def answer(self, db: Rows, ddl: dict[str, str], sql: str, sender: tuple[str, str], recipient: tuple[str, str],
               purpose: str, referenced: dict[str, frozenset[str]],
               cells: set[tuple[str, str, str]] | None = None) -> list[tuple[Any, ...]]:
        """The analyst query run on the authorized database (fresh in-memory DuckDB).

        ``cells``: the context's authorized cells when the caller has them already (a superset of
        the referenced columns' is fine: only those are read); computed here otherwise."""
        if cells is None:
            wanted = {(r, c) for r, cols in referenced.items() for c in (cols or self.columns[r])}
            cells = self.authorized_cells(db, sender, recipient, purpose, wanted)
        auth = self.authorized_database(db, cells, referenced)
        con = duckdb.connect()
        try:
            for rel, create in ddl.items():
                con.execute(create)
                cols = self.columns[rel]
                if auth[rel]:
                    con.executemany(
                        f'INSERT INTO {quote_identifier(rel)} VALUES ({", ".join("?" for _ in cols)})',
                        [[r[c] for c in cols] for r in auth[rel]],
                    )
            return [tuple(r) for r in con.execute(sql).fetchall()]
        finally:
            con.close()
