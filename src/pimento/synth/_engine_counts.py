"""The exact counts of an entity model computed by the engine: one ``GROUP BY`` over the kept rows.

The rows a model counts are chosen in SQL exactly as ``cap_fanout`` and ``fit_models`` choose them
in Python (PRIVACY.md, "Where the exact counts are computed"):

- every private table gets a common table expression of its **kept rows**: the component root's
  rows, then each child joined to its parent's kept rows on the structural key, with the derived
  keys checked against the ancestor they copy, truncated to ``cap`` rows per parent by
  ``ROW_NUMBER() OVER (PARTITION BY parent key ORDER BY hash, key)``, the keyed row hash of
  ``_rank`` (the order ``_truncate`` uses); each kept row carries its unit (the root's key);
- an entity row is a kept row of the entity table with its 1:1 extensions (``LEFT JOIN``), the
  kept children counted per parent (degree attributes), the declared context of the rows its
  links point at, and its parent entity's context attributes;
- each unit keeps at most ``MODEL_ROWS_PER_UNIT`` entity rows (``ROW_NUMBER() OVER (PARTITION BY
  unit ORDER BY hash, key)``, the order of ``per_unit_sample``);
- every attribute is coded in SQL as :func:`pimento.synth._entity_rows.attr_codes` codes it, and
  the engine returns ``code_1, ..., code_d, COUNT(*)`` grouped by the codes: the joint table of the
  kept rows, from which every 1- and 2-way marginal is a sum.

An attribute the SQL cannot code identically (reals, integers bucketed to more than one unit,
integers and dates in an engine that does not type them, a column whose family the type test
changed, except TEXT to integer in DuckDB, a table without an integer key to hash) makes :meth:`EngineCounts.model_counts` return None, and the model is counted
in Python as before. Keys are assumed unique where declared (engines that do not enforce them:
a duplicated parent key would join a child twice, where Python matches its first row).
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any

import numpy as np
import sqlglot

from pimento.engines.base import Engine
from pimento.sql.quote import quote_identifier
from pimento.synth._encode import ColumnData, Encoding
from pimento.synth._state import Attr, SynthState

__all__ = ["EngineCounts", "TYPED_DATES"]

#: ``_types._DECIMAL`` for RE2's full match (Python's ``$`` also matches before a final newline).
_DECIMAL_RE = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?\n?"

#: Engines whose integer and date columns hold only integers and dates (numbers and dates are
#: bucketed in SQL only there; text and booleans everywhere).
TYPED_DATES = ("duckdb", "postgres")


def _q(name: str) -> str:
    return quote_identifier(name, "duckdb")


def _literal(x: Any) -> str | None:
    """``x`` as a DuckDB SQL literal, or None for a type the codes do not compare in SQL."""
    if isinstance(x, bool):
        return "TRUE" if x else "FALSE"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, float):
        return repr(x) if math.isfinite(x) else None
    if isinstance(x, str):
        return "'" + x.replace("'", "''") + "'"
    if isinstance(x, _dt.datetime):
        return f"TIMESTAMP '{x.isoformat(sep=' ')}'"
    if isinstance(x, _dt.date):
        return f"DATE '{x.isoformat()}'"
    return None


class EngineCounts:
    """SQL for the kept rows and the joint code table of each entity model, run on ``engine``."""

    def __init__(self, state: SynthState, engine: Engine):
        self.state = state
        self.engine = engine
        self.name = str(getattr(engine, "name", ""))
        self.dialect = str(getattr(engine, "dialect", "duckdb"))
        self._ctes: dict[str, str | None] = {}
        self._cte_sql: list[str] = []
        self._units: dict[str, int] = {}
        # (ancestor table, column) pairs that derived keys are compared with, carried down the tree.
        self._anc: list[tuple[str, str]] = []
        for t in state.forest.order:
            for dfk, anc in state.forest.tables[t].derived:
                for c in dfk.ref_columns:
                    if (anc, c) not in self._anc:
                        self._anc.append((anc, c))

    # ------------------------------------------------------------------ kept rows

    def kept(self, table: str) -> str | None:
        """The name of the CTE of ``table``'s kept rows (None where they cannot be chosen in SQL)."""
        if table in self._ctes:
            return self._ctes[table]
        st = self.state
        tp = st.forest.tables[table]
        keys = st.rank_keys.get(table)
        name: str | None = None
        if keys is not None:
            h = st.row_hash.sql([f"c.{_q(k)}" for k in keys])
            order = ", ".join([h, *(f"c.{_q(k)}" for k in keys)])
            lineage = [table, *st.forest.ancestors(table)]
            own = [f"c.{_q(c)} AS __a{i}" for i, (a, c) in enumerate(self._anc) if a == table]
            if tp.parent is None:
                units = [f"c.{_q(k)} AS __u{j}" for j, k in enumerate(keys)]
                self._units[table] = len(keys)
                sql = f"SELECT c.*, {h} AS __h, {', '.join(units + own)} FROM {_q(table)} c"
            else:
                parent = self.kept(tp.parent)
                fk = tp.parent_fk
                assert fk is not None
                if parent is None:
                    self._ctes[table] = None
                    return None
                n_units = self._units[tp.parent]
                self._units[table] = n_units
                inherited = [f"p.__a{i}" for i, (a, _c) in enumerate(self._anc) if a in lineage[1:]]
                join = " AND ".join(f"c.{_q(f)} = p.{_q(r)}" for f, r in zip(fk.columns, fk.ref_columns))
                where = []
                for dfk, anc in tp.derived:
                    own_null = " OR ".join(f"c.{_q(d)} IS NULL" for d in dfk.columns)
                    same = " AND ".join(f"c.{_q(d)} = p.__a{self._anc.index((anc, r))}" for d, r in zip(dfk.columns, dfk.ref_columns))
                    where.append(f"(({own_null}) OR ({same}))")
                cols = ["c.*", f"{h} AS __h", *(f"p.__u{j}" for j in range(n_units)), *inherited, *own]
                part = ", ".join(f"c.{_q(f)}" for f in fk.columns)
                inner = (
                    f"SELECT {', '.join(cols)}, ROW_NUMBER() OVER (PARTITION BY {part} ORDER BY {order}) AS __rn "
                    f"FROM {_q(table)} c JOIN {parent} p ON {join}" + (f" WHERE {' AND '.join(where)}" if where else "")
                )
                sql = f"SELECT * FROM ({inner}) s WHERE __rn <= {int(st.caps[table])}"
            name = f"__kept{len(self._cte_sql)}"  # after the parent's: CTEs are listed parents first
            self._cte_sql.append(f"{name} AS ({sql})")
        self._ctes[table] = name
        return name

    def kept_rows_sql(self, table: str) -> str | None:
        """A query of the key columns and unit of ``table``'s kept rows (for tests and checks)."""
        name = self.kept(table)
        keys = self.state.rank_keys.get(table)
        if name is None or keys is None:
            return None
        units = ", ".join(f"__u{j}" for j in range(self._units[table]))
        return self._render(f"SELECT {', '.join(_q(k) for k in keys)}, {units} FROM {name}")

    def _render(self, body: str) -> str:
        sql = (f"WITH {', '.join(self._cte_sql)} " if self._cte_sql else "") + body
        if self.dialect == "duckdb":
            return sql
        return sqlglot.transpile(sql, read="duckdb", write=self.dialect)[0]

    # ------------------------------------------------------------------ entity rows and their codes

    def _entity_from(self, e: str, prefix: str) -> tuple[list[str], dict[str, str]] | None:
        """FROM clause of entity ``e``'s rows (its kept rows and 1:1 extensions) and the alias of each table."""
        st = self.state
        tables = st.entities[e].tables
        base = self.kept(e)
        if base is None:
            return None
        alias = {e: f"{prefix}0"}
        parts = [f"{base} {prefix}0"]
        for i, tt in enumerate(tables[1:], start=1):
            cte = self.kept(tt)
            tp = st.forest.tables[tt]
            fk = tp.parent_fk
            if cte is None or fk is None or tp.parent not in alias:
                return None
            alias[tt] = f"{prefix}{i}"
            on = " AND ".join(f"{prefix}{i}.{_q(f)} = {alias[tp.parent]}.{_q(r)}" for f, r in zip(fk.columns, fk.ref_columns))
            parts.append(f"LEFT JOIN {cte} {prefix}{i} ON {on}")
        return parts, alias

    def _code(self, a: Attr, alias: dict[str, str], joins: list[str], prefix: str) -> str | None:
        """SQL for ``attr_codes`` of attribute ``a`` (None where it cannot be coded identically)."""
        st = self.state
        x = alias.get(a.table)
        if x is None:
            return None
        present = f"{x}.__h IS NOT NULL"
        if a.kind == "has":
            return f"CASE WHEN {present} THEN 1 ELSE 0 END"
        if a.kind == "deg":
            child = a.child
            assert child is not None
            cte = self.kept(child)
            fk = st.forest.tables[child].parent_fk
            if cte is None or fk is None:
                return None
            d = f"{prefix}d{len(joins)}"
            fcols = ", ".join(_q(f) for f in fk.columns)
            on = " AND ".join(f"{d}.{_q(f)} = {x}.{_q(r)}" for f, r in zip(fk.columns, fk.ref_columns))
            joins.append(f"LEFT JOIN (SELECT {fcols}, COUNT(*) AS __c FROM {cte} GROUP BY {fcols}) {d} ON {on}")
            return f"CASE WHEN {present} THEN COALESCE({d}.__c, 0) ELSE 0 END"
        if a.kind == "linknull":
            assert a.column is not None
            return f"CASE WHEN {present} THEN (CASE WHEN {x}.{_q(a.column)} IS NULL THEN 1 ELSE 0 END) ELSE 1 END"
        enc = a.encoding
        assert enc is not None
        absent = enc.null_code if enc.nullable else 0
        if a.kind == "link":
            assert a.column is not None
            default = enc.null_code if enc.nullable else 0
            arms = []
            for i, k in enumerate(enc.keys):
                lit = _literal(k)
                if lit is None:
                    return None
                arms.append(f"WHEN {lit} THEN {i}")
            value = f"{x}.{_q(a.column)}"
            inner = f"CASE {value} {' '.join(arms)} ELSE {default} END" if arms else str(default)
            return f"CASE WHEN NOT ({present}) THEN {absent} WHEN {value} IS NULL THEN {default} ELSE {inner} END"
        if a.kind == "col":
            assert a.column is not None
            value = f"{x}.{_q(a.column)}"
            if (a.table, a.column) in st.changed_families():
                declared = st.cat.table(a.table).column(a.column).type
                if not (self.name == "duckdb" and declared == "text" and enc.family == "integer"):
                    return None
                # A TEXT column of numbers modelled as integers: ``_types.coerce`` (canonical
                # decimals only, at most 40 characters; Python's ``$`` also takes a final newline).
                value = (
                    f"(CASE WHEN length({value}) <= 40 AND regexp_full_match({value}, '{_DECIMAL_RE}') "
                    f"THEN CAST({value} AS DOUBLE) END)"
                )
        elif a.kind == "ctx":
            fk = a.fk
            assert fk is not None and a.ref_column is not None
            r = f"{prefix}r{len(joins)}"
            on = " AND ".join(f"{r}.{_q(rc)} = {x}.{_q(c)}" for c, rc in zip(fk.columns, fk.ref_columns))
            joins.append(f"LEFT JOIN {_q(fk.ref_table)} {r} ON {on}")
            if (fk.ref_table, a.ref_column) in st.changed_families():
                return None
            value = f"{r}.{_q(a.ref_column)}"
        else:
            return None
        bucket = self._bucket(enc, value)
        if bucket is None:
            return None
        null = int(enc.encode(ColumnData(enc.family, np.array([None], dtype=object), np.array([True])))[0])
        return f"CASE WHEN NOT ({present}) THEN {absent} WHEN {value} IS NULL THEN {null} ELSE {bucket} END"

    def _bucket(self, enc: Encoding, value: str) -> str | None:
        """SQL for the code of a non-NULL ``value`` (``Encoding.encode``), or None."""
        other = enc.other_code if enc.has_other else 0
        fam = enc.family
        typed = self.name in TYPED_DATES
        if enc.level == "public":
            if fam not in ("text", "boolean") and not typed:
                return None
            expr = value
            lits = [_literal(k) for k in enc.keys]
        elif fam == "text" and enc.level == "fine":
            expr = value
            lits = [_literal(k) if isinstance(k, str) else None for k in enc.keys]
        elif fam == "integer" and enc.level in ("fine", "coarse") and typed:
            # Fine: the value rounded half to even (``np.round``); coarse: 3 significant digits,
            # in SQL only where every kept bucket is one unit wide (values below 1,000 in size).
            if enc.level == "fine":
                expr = f"round_even({value}, 0)" if self.name == "duckdb" else value
            else:
                expr = f"(CASE WHEN abs({value}) < 1000 THEN floor({value}) END)"
            lits = [_literal(int(complex(k).real)) if complex(k).imag == 1 else None for k in enc.keys]
        elif fam in ("date", "timestamp") and typed:
            if enc.level == "fine":
                expr = f"((EXTRACT(YEAR FROM {value}) - 1970) * 12 + EXTRACT(MONTH FROM {value}) - 1)"
            else:
                expr = f"(EXTRACT(YEAR FROM {value}) - 1970)"
            lits = [str(int(k)) for k in enc.keys]
        else:
            return None
        if any(lit is None for lit in lits):
            return None
        if not lits:
            return str(other)
        arms = " ".join(f"WHEN {lit} THEN {i}" for i, lit in enumerate(lits))
        return f"CASE {expr} {arms} ELSE {other} END"

    def model_counts(self, e: str, names: list[str], model_rows: int) -> tuple[dict[str, np.ndarray], np.ndarray] | None:
        """The joint table of the codes ``names`` (attributes of entity ``e``, ``^name`` for its
        parent entity's) over its kept rows, at most ``model_rows`` per unit: each distinct code
        combination and its number of rows. None where SQL cannot count them identically."""
        st = self.state
        info = st.entities[e]
        built = self._entity_from(e, "x")
        if built is None:
            return None
        parts, alias = built
        joins: list[str] = []
        exprs: list[str] = []
        by_name = {a.name: a for a in info.attrs}
        parent_names = [n[1:] for n in names if n.startswith("^")]
        for n in names:
            if n.startswith("^"):
                continue
            code = self._code(by_name[n], alias, joins, "x")
            if code is None:
                return None
            exprs.append(f"{code} AS {_q(n)}")
        if parent_names:
            sub = self._parent_context(e, parent_names)
            if sub is None:
                return None
            sub_sql, on = sub
            joins.append(f"LEFT JOIN ({sub_sql}) pc ON {on}")
            exprs += [f"pc.{_q('^' + n)}" for n in parent_names]
        keys = st.rank_keys[e]
        assert keys is not None
        n_units = self._units[e]
        thin = model_rows < info.unit_rows
        select = list(exprs)
        if thin:
            part = ", ".join(f"x0.__u{j}" for j in range(n_units))
            order = ", ".join(["x0.__h", *(f"x0.{_q(k)}" for k in keys)])
            select.append(f"ROW_NUMBER() OVER (PARTITION BY {part} ORDER BY {order}) AS __m")
        inner = f"SELECT {', '.join(select) or '1 AS __one'} FROM {' '.join(parts + joins)}"
        codes_out = ", ".join(f"q.{_q(n)}" for n in names)
        where = f" WHERE q.__m <= {int(model_rows)}" if thin else ""
        if names:
            body = f"SELECT {codes_out}, COUNT(*) AS __n FROM ({inner}) q{where} GROUP BY {codes_out}"
        else:
            body = f"SELECT COUNT(*) AS __n FROM ({inner}) q{where}"
        rows = self.engine.execute(self._render(body)).rows
        weights = np.array([r[-1] for r in rows], dtype=float)
        codes = {n: np.array([r[i] for r in rows], dtype=np.int64) for i, n in enumerate(names)}
        return codes, weights

    def _parent_context(self, e: str, names: list[str]) -> tuple[str, str] | None:
        """A subquery of the parent entity's context codes ``names`` by the key ``e`` references."""
        st = self.state
        parent = st.forest.parent_of(e)
        pent = st.forest.entity_of(parent)
        built = self._entity_from(pent, "y")
        if built is None:
            return None
        parts, alias = built
        fk = st.forest.tables[e].parent_fk
        assert fk is not None
        joins: list[str] = []
        exprs = []
        by_name = {a.name: a for a in st.entities[pent].attrs}
        for n in names:
            code = self._code(by_name[n], alias, joins, "y")
            if code is None:
                return None
            exprs.append(f"{code} AS {_q('^' + n)}")
        exprs += [f"{alias[parent]}.{_q(r)} AS __pk{j}" for j, r in enumerate(fk.ref_columns)]
        on = " AND ".join(f"pc.__pk{j} = x0.{_q(f)}" for j, f in enumerate(fk.columns))
        return f"SELECT {', '.join(exprs)} FROM {' '.join(parts + joins)}", on
