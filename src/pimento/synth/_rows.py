"""Reading the private database and comparing key values (shared by the synthesis passes).

Every read here goes through the engine the caller opened on the private database; the passes
that call these helpers charge for what they measure (PRIVACY.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pimento.engines.base import Engine
from pimento.schema import Catalog
from pimento.sql.quote import quote_identifier, quote_identifiers
from pimento.synth._encode import ColumnData

__all__ = ["read_table", "read_check_domains", "public_keys", "key_tuples", "norm", "lookup", "match_keys", "keys_agree", "MAX_PUBLIC_KEYS"]

#: Public link keys modelled as categories (larger public tables: uniform choice).
MAX_PUBLIC_KEYS = 200


def read_table(engine: Engine, catalog: Catalog, table: str) -> dict[str, ColumnData]:
    t = catalog.table(table)
    cols = [c.name for c in t.columns]
    dialect = getattr(engine, "dialect", "duckdb")
    sql = f"SELECT {quote_identifiers(cols, dialect)} FROM {quote_identifier(t.name, dialect)}"
    con = getattr(engine, "connection", None)
    out: dict[str, ColumnData] = {}
    if con is not None and getattr(engine, "name", "") == "duckdb":
        data = con.execute(sql).fetchnumpy()
        for c in t.columns:
            v = data[c.name]
            null = np.ma.getmaskarray(v) if isinstance(v, np.ma.MaskedArray) else np.zeros(len(v), dtype=bool)
            raw = np.ma.getdata(v)
            if raw.dtype.kind == "M":
                raw = raw.astype("datetime64[us]")
            elif raw.dtype.kind in "iub" and c.type != "boolean":
                raw = raw.astype(np.int64)
            if c.type == "boolean" or raw.dtype.kind not in "iufM":
                vals = np.empty(len(raw), dtype=object)
                vals[:] = _shared(raw)
                vals[null] = None
                raw = vals
            out[c.name] = ColumnData(c.type, raw, null)
        return out
    rows = engine.execute(sql).rows
    for i, c in enumerate(t.columns):
        vals = np.empty(len(rows), dtype=object)
        vals[:] = [r[i] for r in rows]
        null = np.array([x is None for x in vals], dtype=bool)
        if c.type in ("integer", "real"):
            num = np.zeros(len(rows), dtype=float)
            ok = ~null
            try:
                num[ok] = np.array([float(x) for x in vals[ok]], dtype=float)
            except (TypeError, ValueError):
                # Some stored value is not a number (engines that do not enforce types): keep
                # the stored values; keys compare them as stored, and a modelled column is
                # coerced to its family later (``decide_column_types``), non-numbers becoming NULL.
                out[c.name] = ColumnData(c.type, vals, null)
                continue
            if c.type == "integer" and np.all(num[ok] == np.round(num[ok])):
                num = num.astype(np.int64)
            out[c.name] = ColumnData(c.type, num, null)
        else:
            # Dates stay as stored (a DATE column may hold integers or text in SQLite); a
            # modelled column is coerced to its family by ``decide_column_types``.
            out[c.name] = ColumnData(c.type, vals, null)
    return out


def _shared(values: np.ndarray) -> list[Any]:
    """The values with equal ones sharing one object (the driver makes one string per row:
    about 60 bytes each, most of the memory of a table of repeated labels)."""
    seen: dict[Any, Any] = {}
    out = []
    for x in values.tolist():
        try:
            out.append(seen.setdefault((type(x), x), x))  # 1, 1.0 and True stay apart
        except TypeError:  # unhashable (a list or a map value): kept as it is
            out.append(x)
    return out


def key_tuples(data: dict[str, ColumnData], cols: tuple[str, ...], idx: np.ndarray | None = None) -> list[tuple | None]:
    arrays = [data[c].values if idx is None else data[c].values[idx] for c in cols]
    nulls = [data[c].null if idx is None else data[c].null[idx] for c in cols]
    n = len(arrays[0])
    out: list[tuple | None] = []
    lists = [a.tolist() for a in arrays]
    nl = [m.tolist() for m in nulls]
    for i in range(n):
        if any(m[i] for m in nl):
            out.append(None)
        else:
            out.append(tuple(norm(lst[i]) for lst in lists))
    return out


def norm(x: Any) -> Any:
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, (bytes, bytearray)):
        return bytes(x)
    return x


def lookup(parent_keys: list[tuple | None], child_keys: list[tuple | None]) -> np.ndarray:
    index: dict[tuple, int] = {}
    for i, k in enumerate(parent_keys):
        if k is not None and k not in index:
            index[k] = i
    return np.fromiter((index.get(k, -1) if k is not None else -1 for k in child_keys), dtype=np.int64, count=len(child_keys))


def _int_key(data: dict[str, ColumnData], cols: tuple[str, ...]) -> ColumnData | None:
    """The column of a one-column key stored as integers (the vectorized case), else None."""
    if len(cols) != 1:
        return None
    col = data[cols[0]]
    return col if col.values.dtype.kind in "iu" else None


def match_keys(
    parent: dict[str, ColumnData], parent_cols: tuple[str, ...], child: dict[str, ColumnData], child_cols: tuple[str, ...],
    idx: np.ndarray | None = None,
) -> np.ndarray:
    """``lookup(key_tuples(parent, parent_cols), key_tuples(child, child_cols, idx))``: for each
    child row (of ``idx``), the first parent row with an equal key, -1 where none or a key part is
    NULL. One-column integer keys are matched with a sort (no Python tuple per row)."""
    p, c = _int_key(parent, parent_cols), _int_key(child, child_cols)
    if p is None or c is None:
        return lookup(key_tuples(parent, parent_cols), key_tuples(child, child_cols, idx))
    cvals = c.values if idx is None else c.values[idx]
    cnull = c.null if idx is None else c.null[idx]
    rows = np.flatnonzero(~p.null)
    order = rows[np.argsort(p.values[rows], kind="stable")]  # equal keys: first row first
    keys = p.values[order]
    pos = np.searchsorted(keys, cvals, side="left")
    safe = np.minimum(pos, max(len(keys) - 1, 0))
    hit = (pos < len(keys)) & ~cnull
    if len(keys):
        hit &= keys[safe] == cvals
    out = np.full(len(cvals), -1, dtype=np.int64)
    out[hit] = order[safe[hit]]
    return out


def keys_agree(
    anc: dict[str, ColumnData], anc_cols: tuple[str, ...], anc_idx: np.ndarray, mine: dict[str, ColumnData], cols: tuple[str, ...]
) -> np.ndarray:
    """For each row: ``anc_idx >= 0`` and its own key (``cols``) is NULL or equals the ancestor
    row's key (``anc_cols``), compared as :func:`key_tuples` compares them."""
    a, m = _int_key(anc, anc_cols), _int_key(mine, cols)
    if a is None or m is None:
        akeys = key_tuples(anc, anc_cols)
        own = key_tuples(mine, cols)
        return np.array([i >= 0 and (k is None or akeys[i] == k) for i, k in zip(anc_idx.tolist(), own)], dtype=bool)
    safe = np.maximum(anc_idx, 0)
    same = ~a.null[safe] & (a.values[safe] == m.values)
    return (anc_idx >= 0) & (m.null | same)


def read_check_domains(engine: Engine, catalog: Catalog) -> dict[tuple[str, str], list[Any]]:
    import sqlglot
    from sqlglot import exp

    out: dict[tuple[str, str], list[Any]] = {}
    if getattr(engine, "name", "") != "duckdb":
        return out
    rows = engine.execute(
        "SELECT table_name, expression FROM duckdb_constraints() WHERE constraint_type = 'CHECK' AND schema_name = current_schema()"
    ).rows
    for table, expression in rows:
        try:
            tree = sqlglot.parse_one(expression, read="duckdb")
        except sqlglot.errors.ParseError:
            continue
        while isinstance(tree, exp.Paren):
            tree = tree.this
        if isinstance(tree, exp.In) and isinstance(tree.this, exp.Column) and tree.expressions:
            if all(isinstance(v, exp.Literal) for v in tree.expressions) and catalog.has_table(table):
                t = catalog.table(table)
                if t.has_column(tree.this.name):
                    col = t.column(tree.this.name)
                    vals = [v.this if v.is_string else (int(v.this) if col.type == "integer" else float(v.this)) for v in tree.expressions]
                    out[(t.name, col.name)] = vals
    return out



def public_keys(engine: Engine, table: str, column: str, limit: int = MAX_PUBLIC_KEYS) -> list[Any] | None:
    """The distinct non-NULL values of a public (or declared public) column, at most ``limit``."""
    dialect = getattr(engine, "dialect", "duckdb")
    col = quote_identifier(column, dialect)
    rows = engine.execute(f"SELECT DISTINCT {col} FROM {quote_identifier(table, dialect)} WHERE {col} IS NOT NULL").rows
    if len(rows) > limit:
        return None
    return sorted((norm(r[0]) for r in rows), key=lambda x: (str(type(x)), x))
