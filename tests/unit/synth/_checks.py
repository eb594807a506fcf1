"""Independent checks that every declared constraint holds in a synthetic database."""

from __future__ import annotations

import duckdb


def violations(path: str, catalog) -> list[str]:
    """PK/UNIQUE duplicates, NOT NULL violations, dangling FKs and FD violations, by plain SQL."""
    con = duckdb.connect(path, read_only=True)
    out: list[str] = []
    try:
        for t in catalog.tables:
            q = f'"{t.name}"'
            for c in t.columns:
                if not c.nullable:
                    n = con.execute(f'SELECT COUNT(*) FROM {q} WHERE "{c.name}" IS NULL').fetchone()[0]
                    if n:
                        out.append(f"{t.name}.{c.name}: {n} NULLs")
            for key in [t.primary_key, *t.unique]:
                if not key:
                    continue
                cols = ", ".join(f'"{c}"' for c in key)
                n = con.execute(
                    f"SELECT COUNT(*) FROM (SELECT {cols} FROM {q} WHERE " + " AND ".join(f'"{c}" IS NOT NULL' for c in key)
                    + f" GROUP BY {cols} HAVING COUNT(*) > 1)"
                ).fetchone()[0]
                if n:
                    out.append(f"{t.name}{key}: {n} duplicated keys")
        for fk in catalog.foreign_keys:
            cond = " AND ".join(f'c."{a}" = p."{b}"' for a, b in zip(fk.columns, fk.ref_columns))
            notnull = " AND ".join(f'c."{a}" IS NOT NULL' for a in fk.columns)
            n = con.execute(
                f'SELECT COUNT(*) FROM "{fk.table}" c WHERE {notnull} AND NOT EXISTS (SELECT 1 FROM "{fk.ref_table}" p WHERE {cond})'
            ).fetchone()[0]
            if n:
                out.append(f"{fk}: {n} dangling")
        for fd in catalog.functional_dependencies:
            lhs = ", ".join(f'"{c}"' for c in fd.lhs)
            for r in fd.rhs:
                n = con.execute(
                    f'SELECT COUNT(*) FROM (SELECT {lhs} FROM "{fd.table}" GROUP BY {lhs} HAVING COUNT(DISTINCT "{r}") > 1)'
                ).fetchone()[0]
                if n:
                    out.append(f"{fd}: {n} violations")
    finally:
        con.close()
    return out
