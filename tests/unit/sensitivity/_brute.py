"""Independent brute force for residual sensitivity: joins materialised in Python, s enumerated."""

from __future__ import annotations

import math
from itertools import combinations, product

# A schema: relation -> list of variable names (join columns) ; every relation also has a payload x.


def join_rows(schema, data, names, selections, count_col):
    """All combinations of rows of ``names`` that agree on shared variables (NULL never equal)."""
    occurrences: dict = {}
    for variables in schema.values():
        for v in variables:
            occurrences[v] = occurrences.get(v, 0) + 1
    out = [{}]
    for name in names:
        rows = [r for r in data[name] if _keep(name, r, schema, selections, count_col)]
        new = []
        for partial in out:
            for row in rows:
                ok = True
                for v, value in zip(schema[name], row[:-1], strict=True):
                    if value is None and occurrences[v] > 1:
                        ok = False
                        break
                    if occurrences[v] > 1 and v in partial and partial[v] != value:
                        ok = False
                        break
                if ok:
                    merged = dict(partial)
                    merged.update((v, x) for v, x in zip(schema[name], row[:-1], strict=True) if occurrences[v] > 1)
                    merged[f"{name}.x"] = row[-1]
                    new.append(merged)
        out = new
    return out


def _keep(name, row, schema, selections, count_col):
    if name in selections and not selections[name](row[-1]):
        return False
    if count_col is not None and count_col == name and row[-1] is None:
        return False
    return True


def count(schema, data, selections, count_col, distinct):
    rows = join_rows(schema, data, list(schema), selections, count_col)
    if count_col is None:
        return len(rows)
    values = [r[f"{count_col}.x"] for r in rows if r[f"{count_col}.x"] is not None]
    return len(set(values)) if distinct else len(values)


def t_e(schema, data, subset, selections, count_col):
    if not subset:
        return 1
    names = [n for n in schema if n in subset]
    inside = {v for n in names for v in schema[n]}
    outside = {v for n in schema if n not in subset for v in schema[n]}
    boundary = sorted(inside & outside)
    groups: dict = {}
    for r in join_rows(schema, data, names, selections, count_col):
        key = tuple(r[v] for v in boundary)
        groups[key] = groups.get(key, 0) + 1
    return max(groups.values(), default=0)


def compositions(k, d):
    if d == 0:
        if k == 0:
            yield ()
        return
    if d == 1:
        yield (k,)
        return
    for first in range(k + 1):
        for rest in compositions(k - first, d - 1):
            yield (first, *rest)


def rs_brute(relations, private, te, beta, gs=None, k_limit=None):
    priv = [a for a in relations if a in private]
    if not priv:
        return 0.0
    d = len(priv) - 1
    k_limit = k_limit if k_limit is not None else math.ceil(3 * (d + 1) / beta) + 5
    best = 0.0
    for k in range(k_limit + 1):
        lsk = 0
        for i in priv:
            others = [p for p in priv if p != i]
            e_i = frozenset(relations) - {i}
            for s in compositions(k, d):
                total = 0
                for size in range(d + 1):
                    for a in combinations(range(d), size):
                        total += te[e_i - {others[j] for j in a}] * math.prod(s[j] for j in a)
                lsk = max(lsk, total)
        if gs is not None:
            lsk = min(lsk, gs)
        best = max(best, math.exp(-beta * k) * lsk)
    return best


def local_sensitivity(schema, data, private, selections, count_col, distinct, domain):
    """max |q(I) - q(I')| over deleting one row or inserting one row (values from ``domain``)."""
    base = count(schema, data, selections, count_col, distinct)
    best = 0
    for name in private:
        rows = data[name]
        for idx in range(len(rows)):
            changed = dict(data)
            changed[name] = rows[:idx] + rows[idx + 1 :]
            best = max(best, abs(base - count(schema, changed, selections, count_col, distinct)))
        for row in product(domain, repeat=len(schema[name]) + 1):
            changed = dict(data)
            changed[name] = [*rows, row]
            best = max(best, abs(base - count(schema, changed, selections, count_col, distinct)))
    return best
