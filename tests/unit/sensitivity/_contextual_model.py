"""A pure-Python model of tiny databases, contexts and contextual neighbours (issue 16 brute force).

Independent of the engine: join counts by enumeration, T_E by definition, per-tuple
multiplicities by counting with the relation replaced by the tuple, and contextual neighbours
enumerated over a small finite domain. Authorization is per tuple: ``phi`` (a set of rows, or
every row) decides whether the tuple's ``cols`` cells are
authorized; A_c is compared by cell provenance (alias, tuple id, column) and value.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from pimento.sensitivity.contextual import RelationFacts, contextual_rs
from pimento.sensitivity.envelope import maximize_envelope
from pimento.sensitivity.neighbourhood import Neighbourhood

Row = tuple[int, ...]


@dataclass(frozen=True)
class Auth:
    """Authorization of one relation: tuples in ``phi`` get ``cols`` authorized.

    ``phi``: a set of values of the columns ``on`` (None: of the whole row), or None for every row. A
    predicate on the authorized columns only (``on`` within ``cols``, e.g. sigma_{b=0} pi_b) lets a change
    of the other columns keep the tuple's authorized cells; a predicate on the whole row does not.
    """

    phi: frozenset[Row] | None = frozenset()
    cols: tuple[str, ...] = ()
    whole: bool = False  # Pub: every tuple it could hold is wholly authorized
    on: tuple[str, ...] | None = None

    def authorized(self, columns: tuple[str, ...], row: Row) -> tuple[str, ...]:
        if self.whole:
            return columns
        if not self.cols:
            return ()
        if self.phi is None:
            return self.cols
        key = tuple(row) if self.on is None else tuple(row[columns.index(c)] for c in self.on)
        return self.cols if key in self.phi else ()


@dataclass(frozen=True)
class Schema:
    rels: dict[str, tuple[str, ...]]
    joins: tuple[tuple[str, str, str, str], ...]
    private: tuple[str, ...]
    sel: dict[str, tuple[str, int]] = field(default_factory=dict)
    keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    fks: tuple[tuple[str, tuple[str, ...], str, tuple[str, ...]], ...] = ()
    auth: dict[str, Auth] = field(default_factory=dict)
    domain: tuple[int, ...] = (0, 1, 2)

    @property
    def aliases(self) -> tuple[str, ...]:
        return tuple(sorted(self.rels))

    def var_of(self) -> dict[tuple[str, str], int]:
        cached = self.__dict__.get("_var_cache")
        if cached is None:
            cached = self._union_find()
            object.__setattr__(self, "_var_cache", cached)
        return cached

    def _union_find(self) -> dict[tuple[str, str], int]:
        parent: dict[tuple[str, str], tuple[str, str]] = {}

        def find(x):
            parent.setdefault(x, x)
            while parent[x] != x:
                x = parent[x]
            return x

        for a1, c1, a2, c2 in self.joins:
            parent[find((a1, c1))] = find((a2, c2))
        roots = sorted({find(x) for x in list(parent)})
        return {x: roots.index(find(x)) for x in list(parent)}

    def join_cols(self, alias: str) -> tuple[str, ...]:
        v = self.var_of()
        return tuple(c for c in self.rels[alias] if (alias, c) in v)

    def boundary_cols(self, alias: str) -> tuple[str, ...]:
        cols = set(self.join_cols(alias))
        if alias in self.sel:
            cols.add(self.sel[alias][0])
        return tuple(c for c in self.rels[alias] if c in cols)

    def auth_of(self, alias: str) -> Auth:
        return self.auth.get(alias, Auth())


Instance = dict[str, tuple[tuple[int, Row], ...]]  # alias -> ((tid, row), ...)


def passes(schema: Schema, alias: str, row: Row) -> bool:
    if alias not in schema.sel:
        return True
    col, value = schema.sel[alias]
    return row[schema.rels[alias].index(col)] == value


def join_results(schema: Schema, inst: Instance, aliases: tuple[str, ...]) -> Iterator[dict[str, Row]]:
    aliases = tuple(aliases)
    lists = [[r for _, r in inst[a] if passes(schema, a, r)] for a in aliases]
    inside = set(aliases)
    conds = [(a1, schema.rels[a1].index(c1), a2, schema.rels[a2].index(c2))
             for a1, c1, a2, c2 in schema.joins if a1 in inside and a2 in inside]
    for combo in itertools.product(*lists):
        binding = dict(zip(aliases, combo))
        if all(binding[a1][i1] == binding[a2][i2] for a1, i1, a2, i2 in conds):
            yield binding


def count(schema: Schema, inst: Instance) -> int:
    return sum(1 for _ in join_results(schema, inst, schema.aliases))


def components(schema: Schema, subset) -> list[tuple[str, ...]]:
    subset = set(subset)
    out, seen = [], set()
    for start in sorted(subset):
        if start in seen:
            continue
        comp, stack = set(), [start]
        while stack:
            a = stack.pop()
            if a in comp:
                continue
            comp.add(a)
            for a1, _, a2, _ in schema.joins:
                if a1 == a and a2 in subset:
                    stack.append(a2)
                if a2 == a and a1 in subset:
                    stack.append(a1)
        seen |= comp
        out.append(tuple(sorted(comp)))
    return out


def _vars(schema: Schema, aliases) -> dict[int, list[tuple[str, int]]]:
    v = schema.var_of()
    out: dict[int, list[tuple[str, int]]] = {}
    for a in aliases:
        for i, c in enumerate(schema.rels[a]):
            if (a, c) in v:
                out.setdefault(v[(a, c)], []).append((a, i))
    return out


def te(schema: Schema, inst: Instance, subset) -> int:
    subset = frozenset(subset)
    if not subset:
        return 1
    outside = [a for a in schema.aliases if a not in subset]
    out_vars = set(_vars(schema, outside))
    total = 1
    for comp in components(schema, subset):
        cv = _vars(schema, comp)
        bvars = sorted(set(cv) & out_vars)
        groups: dict[tuple, int] = {}
        for b in join_results(schema, inst, comp):
            key = tuple(b[cv[x][0][0]][cv[x][0][1]] for x in bvars)
            groups[key] = groups.get(key, 0) + 1
        total *= max(groups.values(), default=0)
    return total


def all_te(schema: Schema, inst: Instance) -> dict[frozenset[str], int]:
    names = schema.aliases
    return {frozenset(c): te(schema, inst, c) for r in range(len(names) + 1) for c in itertools.combinations(names, r)}


def multiplicity(schema: Schema, inst: Instance, alias: str, row: Row) -> int:
    return count(schema, {**inst, alias: ((-1, row),)})


def is_public(schema: Schema, alias: str, row: Row) -> bool:
    auth = schema.auth_of(alias)
    granted = set(auth.authorized(schema.rels[alias], row))
    return set(schema.boundary_cols(alias)) <= granted and bool(granted)


def unique_boundary(schema: Schema, alias: str) -> bool:
    key = schema.keys.get(alias)
    return bool(key) and set(key) <= set(schema.join_cols(alias))


def m_unocc(schema: Schema, inst: Instance, alias: str) -> int:
    """Largest multiplicity of a boundary value (join variables of alias) that no tuple occupies."""
    cols = schema.join_cols(alias)
    idx = [schema.rels[alias].index(c) for c in cols]
    occupied = {tuple(r[i] for i in idx) for _, r in inst[alias]}
    best = 0
    width = len(schema.rels[alias])
    for values in itertools.product(schema.domain, repeat=len(cols)):
        if values in occupied:
            continue
        row = [schema.domain[0]] * width
        for i, v in zip(idx, values):
            row[i] = v
        # ignore alias's own selection: an upper bound
        s2 = replace(schema, sel={k: v for k, v in schema.sel.items() if k != alias})
        best = max(best, multiplicity(s2, inst, alias, tuple(row)))
    return best


def t_free(schema: Schema, inst: Instance, alias: str) -> int:
    """Largest residual multiplicity (own selection ignored) of a join value no public tuple occupies."""
    cols = schema.join_cols(alias)
    idx = [schema.rels[alias].index(c) for c in cols]
    public = {tuple(r[i] for i in idx) for _, r in inst[alias] if is_public(schema, alias, r)}
    width = len(schema.rels[alias])
    s2 = replace(schema, sel={k: v for k, v in schema.sel.items() if k != alias})
    best = 0
    for values in itertools.product(schema.domain, repeat=len(cols)):
        if values in public:
            continue
        row = [schema.domain[0]] * width
        for i, v in zip(idx, values):
            row[i] = v
        best = max(best, multiplicity(s2, inst, alias, tuple(row)))
    return best


def facts(schema: Schema, inst: Instance, t: dict[frozenset[str], int]) -> dict[str, RelationFacts]:
    out = {}
    names = frozenset(schema.aliases)
    for a in schema.private:
        auth = schema.auth_of(a)
        ls = t[names - {a}]
        if auth.whole:
            out[a] = RelationFacts(a, ls, "whole")
            continue
        free = [multiplicity(schema, inst, a, r) for _, r in inst[a] if not is_public(schema, a, r)]
        anypub = len(free) < len(inst[a]) or bool(auth.cols)
        out[a] = RelationFacts(
            a, ls, "tuples" if anypub else "none", len(free), max(free, default=0), min(free, default=0),
            m_unocc(schema, inst, a) if unique_boundary(schema, a) else None,
            t_free(schema, inst, a) if unique_boundary(schema, a) else None,
        )
    return out


def crs(schema: Schema, inst: Instance, beta: float, neighbourhood: Neighbourhood = Neighbourhood.ADD_REMOVE, variant: str = "paper",
        t: dict[frozenset[str], int] | None = None):
    t = all_te(schema, inst) if t is None else t
    rs = maximize_envelope(schema.aliases, schema.private, t, beta).rs
    return contextual_rs(schema.aliases, schema.private, t, beta, facts(schema, inst, t), neighbourhood=neighbourhood,
                         rs=rs, variant=variant)


# ---------------------------------------------------------------- constraints and neighbours
def valid(schema: Schema, inst: Instance) -> bool:
    for a, key in schema.keys.items():
        idx = [schema.rels[a].index(c) for c in key]
        seen = [tuple(r[i] for i in idx) for _, r in inst[a]]
        if len(seen) != len(set(seen)):
            return False
    for fa, fcols, ta, tcols in schema.fks:
        fi = [schema.rels[fa].index(c) for c in fcols]
        ti = [schema.rels[ta].index(c) for c in tcols]
        targets = {tuple(r[i] for i in ti) for _, r in inst[ta]}
        if any(tuple(r[i] for i in fi) not in targets for _, r in inst[fa]):
            return False
    return True


def cells(schema: Schema, inst: Instance) -> frozenset:
    """A_c by provenance: (alias, tid, column, value) of every authorized cell."""
    out = set()
    for a in schema.aliases:
        for tid, row in inst[a]:
            for c in schema.auth_of(a).authorized(schema.rels[a], row):
                out.add((a, tid, c, row[schema.rels[a].index(c)]))
    return frozenset(out)


def value_cells(schema: Schema, inst: Instance) -> frozenset:
    """A_c read as a set of values (the literal reading the issue rejects)."""
    return frozenset((a, c, v) for a, _, c, v in cells(schema, inst))


def neighbours(schema: Schema, inst: Instance, model: Neighbourhood = Neighbourhood.ADD_REMOVE, *, contextual: bool = True,
               by_values: bool = False) -> Iterator[Instance]:
    """Neighbours of ``inst`` that satisfy the constraints (and keep A_c, when ``contextual``)."""
    base = (value_cells if by_values else cells)(schema, inst)
    fresh = 1 + max((tid for a in schema.aliases for tid, _ in inst[a]), default=0)
    for a in schema.private:
        rows = inst[a]
        width = len(schema.rels[a])
        cands: list[tuple[tuple[int, Row], ...]] = []
        if model in (Neighbourhood.ADD_REMOVE, Neighbourhood.BOTH):
            for j in range(len(rows)):
                cands.append(rows[:j] + rows[j + 1:])
            for row in itertools.product(schema.domain, repeat=width):
                cands.append(rows + ((fresh, row),))
        if model in (Neighbourhood.CHANGE, Neighbourhood.BOTH):
            for j, (tid, old) in enumerate(rows):
                for row in itertools.product(schema.domain, repeat=width):
                    if row != old:
                        cands.append(rows[:j] + ((tid, row),) + rows[j + 1:])
        for cand in cands:
            other = {**inst, a: cand}
            if not valid(schema, other):
                continue
            if contextual and (value_cells if by_values else cells)(schema, other) != base:
                continue
            yield other


def cls(schema: Schema, inst: Instance, model: Neighbourhood = Neighbourhood.ADD_REMOVE, **kw) -> int:
    q = count(schema, inst)
    return max((abs(q - count(schema, o)) for o in neighbours(schema, inst, model, **kw)), default=0)


def split_parts(schema: Schema, inst: Instance) -> tuple[int, int]:
    """(exact part, remainder): join results whose private tuples are all public, and the rest."""
    exact = 0
    total = 0
    for b in join_results(schema, inst, schema.aliases):
        total += 1
        if all(is_public(schema, a, b[a]) for a in schema.private):
            exact += 1
    return exact, total - exact


def make(schema: Schema, rows: dict[str, list[Row]]) -> Instance:
    tid = itertools.count(1)
    return {a: tuple((next(tid), tuple(r)) for r in rows.get(a, [])) for a in schema.aliases}


# ---------------------------------------------------------------- the properties checked by brute force
def canonical(schema: Schema, inst: Instance) -> tuple:
    """The instance without tuple ids (CRS, counts and multiplicities do not read them)."""
    return tuple(tuple(sorted(r for _, r in inst[a])) for a in schema.aliases)


class Cached:
    """CRS and T_E of one schema, memoised by instance content (a sweep revisits instances as neighbours)."""

    def __init__(self, schema: Schema):
        self.schema = schema
        self.memo: dict[tuple, object] = {}
        self.te_memo: dict[tuple, dict[frozenset[str], int]] = {}

    def te(self, inst: Instance) -> dict[frozenset[str], int]:
        key = canonical(self.schema, inst)
        if key not in self.te_memo:
            self.te_memo[key] = all_te(self.schema, inst)
        return self.te_memo[key]

    def __call__(self, inst: Instance, beta: float, model: Neighbourhood, variant: str):
        key = (canonical(self.schema, inst), beta, model, variant)
        if key not in self.memo:
            self.memo[key] = crs(self.schema, inst, beta, model, variant, self.te(inst))
        return self.memo[key]


def check_properties(schema: Schema, inst: Instance, model: Neighbourhood, beta: float, variants: str | tuple[str, ...] = "paper",
                     stats: dict | None = None, crs_of: Cached | None = None) -> None:
    """For every contextual neighbour I' under ``model`` and each variant: (i) CRS >= |q(I) - q(I')| and each
    relation's rule bound >= what one edit of it moves, (ii) CRS(I) <= e^beta CRS(I') both ways, (iii) CRS
    <= RS; the tight variant <= the paper's; for the tight variant under add/remove the growth lemma of T^c;
    under add/remove the split properties."""
    import math

    variants = (variants,) if isinstance(variants, str) else tuple(variants)
    crs_of = crs_of or Cached(schema)
    stats = stats if stats is not None else {}
    here = {v: crs_of(inst, beta, model, v) for v in variants}
    for v, h in here.items():
        assert h.crs <= h.rs, f"(iii) CRS above RS ({v})"
        if v == "tight":
            assert h.crs <= crs_of(inst, beta, model, "paper").crs, "tight above the paper's CRS"
    q = count(schema, inst)
    bound = math.exp(beta) * (1 + 1e-12)
    ell = {v: {r.alias: r.ell for r in h.rules} for v, h in here.items()}
    t = crs_of.te(inst)
    names = frozenset(schema.aliases)
    for other in neighbours(schema, inst, model):
        stats["neighbours"] = stats.get("neighbours", 0) + 1
        moved = abs(q - count(schema, other))
        (edited,) = [a for a in schema.aliases if other[a] != inst[a]]
        for v, h in here.items():
            assert moved <= h.crs, f"(i) CRS below CLS ({v})"
            assert moved <= ell[v][edited], f"rule of {edited} below the change an edit of it makes ({v})"
            if v == "tight" and model is Neighbourhood.ADD_REMOVE:
                # the lemma behind the tight variant: T^c_{E_i} moves by at most T_{E_i - j} per edit of R_j
                t2 = crs_of.te(other)
                for f in h.facts:
                    if f.t_free is None:
                        continue
                    assert f.t_free >= 0 and ell[v][f.alias] <= f.t_free
                    moved_tc = t_free(schema, other, f.alias) - f.t_free
                    if edited == f.alias:
                        assert moved_tc == 0, "T^c of R_i moved under an edit of R_i"
                    else:
                        cap = names - {f.alias, edited}
                        assert abs(moved_tc) <= t[cap] and abs(moved_tc) <= t2[cap], "T^c grew faster than T_{E_i - j}"
            there = crs_of(other, beta, model, v)
            assert float(h.crs) <= bound * float(there.crs), f"(ii) CRS not beta-smooth ({v})"
            assert float(there.crs) <= bound * float(h.crs), f"(ii) CRS not beta-smooth ({v})"
    if model is Neighbourhood.ADD_REMOVE:
        exact, rest = split_parts(schema, inst)
        for other in neighbours(schema, inst, Neighbourhood.ADD_REMOVE, contextual=False):
            e2, r2 = split_parts(schema, other)
            assert abs(rest - r2) <= abs((exact + rest) - (e2 + r2)), "split remainder moves more than the count"
        for other in neighbours(schema, inst, Neighbourhood.ADD_REMOVE):
            assert split_parts(schema, other)[0] == exact, "split exact part moved on a contextual neighbour"
    for v in variants:
        stats["instances"] = stats.get("instances", 0) + 1
        stats[f"{v}/{model}"] = stats.get(f"{v}/{model}", 0) + 1
