"""Contextual residual sensitivity (CRS): the paper's Section 4.3 and appendix, read as issue 16 says.

A context ``c`` authorizes cells ``A_c`` (relation, tuple id, attribute) by provenance. Two
databases are *contextual neighbours* when they are neighbours (add/remove by default) and agree
on ``A_c`` cell by cell. For each private relation ``R_i`` of a counting query the inference
rules bound how much one contextual edit of ``R_i`` can change the count (``ell_i``); CRS is

    CRS = min( RS,  max( min(GS, max_{i in P_c} ell_i),                              k = 0
                         max_{k >= 1} e^{-beta k} min(GS, LS_hat_c^(k)) ) )            k >= 1

where ``P_c`` are the *contextually editable* private relations (all private relations but
those the rule Pub fixes) and ``LS_hat_c^(k)`` is the residual-sensitivity envelope with its
distance vectors restricted to ``P_c`` (the same T_E as RS, the same beta as the mechanism).

Multiplicities (see CONTEXTUAL.md beside this file for the proofs):

* the *boundary* ``B_i`` of ``R_i``: its join attributes **and the attributes its query
  selection reads** (a tuple failing the selection has multiplicity 0);
* ``m(t)``: the number of join results of the query that use tuple ``t`` of ``R_i``;
* a tuple is *public* when every cell of ``B_i`` in it is authorized in the context (cell
  provenance); all other tuples are *unauthorized*;
* ``mu_free_1`` / ``mu_free_min``: the largest / smallest ``m(t)`` over unauthorized tuples;
* ``M_unocc``: the largest multiplicity, in the residual join, of a boundary value that no
  tuple of ``R_i`` occupies. It is read from the instance, so a foreign key *into* ``R_i``
  covering ``B_i`` makes it 0 (the FK rule in the direction that holds);
* ``LS_i = T_{E_i}``.

Rules (add/remove is the default neighbourhood; change and both are options):

* **Pub** (the whole relation is public in the context, for every tuple it could hold): 0, and
  ``R_i`` leaves ``P_c``;
* **Sel-Unique** (add/remove only; a declared key of ``R_i`` lies within its join attributes):
  deleting an unauthorized tuple is at most ``mu_free_1``; an insertion lands on an unoccupied
  boundary value: ``max(mu_free_1, M_unocc)``. Under change it is *not* used (the brute force
  found it unsound there: a changed tuple keeps its own vacated boundary value and flips its
  query selection); the change rules apply instead;
* **Sel-Del** + **Ins** (add/remove): ``max(mu_free_1, LS_i) = LS_i``;
* **Prj-Chg** / **PrjSel-Chg** / **Sel** (change): 0 when no tuple is unauthorized, else
  ``max(LS_i - mu_free_min, mu_free_1)``;
* **Base**: ``LS_i``. Every ``ell_i`` is capped by ``LS_i`` explicitly.

Everything here is exact (integers and Fractions); the k >= 1 maximum is computed exactly by
enumerating the box ``[0, floor(1/beta) + 1]^d`` (which holds a maximiser, PROOF.md section 3)
when it is small, and otherwise replaced by the paper-free upper bound ``RS`` restricted to
``P_c`` (still a beta-smooth upper bound; CONTEXTUAL.md section 4).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal, localcontext
from fractions import Fraction
from typing import Any, cast

import numpy as np
import sqlglot
from sqlglot import exp

from pimento.engines.base import Engine
from pimento.errors import InternalError
from pimento.schema import Catalog
from pimento.sensitivity.envelope import check_beta, exp_neg_upper, maximize_envelope, round_up_float
from pimento.sensitivity.neighbourhood import Neighbourhood
from pimento.sensitivity.residual import compute_te, needed_subsets
from pimento.sensitivity.rs import private_relations, rs_from_te
from pimento.sql import CountQuery
from pimento.sql.quote import quote_identifier as _q

__all__ = [
    "VARIANTS",
    "AuthorizationView",
    "boundary_columns",
    "contextual_sensitivity",
    "ContextualSensitivity",
    "RelationFacts",
    "RuleBound",
    "apply_rule",
    "contextual_rs",
]

#: ``paper``: the appendix's CRS. ``tight``: authorization used at every distance for relations
#: with a unique boundary (T^c_{E_i} in place of T_{E_i}; add/remove only; CONTEXTUAL.md s. 6).
VARIANTS = ("paper", "tight")

#: Box points above which the exact k >= 1 enumeration gives way to RS restricted to P_c.
MAX_BOX_POINTS = 2_000_000

_PREC = 60
_MARGIN = 1e-9


@dataclass(frozen=True)
class RelationFacts:
    """What the rules read about one private relation on one instance (all private quantities).

    ``public``: ``"none"`` (no tuple of the relation is public), ``"tuples"`` (some are:
    sigma_phi, pi_B or pi_B sigma_phi in the paper's grammar, compared by cell provenance) or
    ``"whole"`` (the context authorizes the relation's boundary cells for every tuple it could
    hold: Pub). ``unauthorized``: how many tuples are not public. ``mu_free_1`` /
    ``mu_free_min``: the largest / smallest multiplicity over those tuples (0 when none).
    ``m_unocc``: the largest residual multiplicity of an unoccupied boundary value when the
    boundary is unique (a declared key within the join attributes), else ``None``.
    """

    alias: str
    ls: int
    public: str = "none"
    unauthorized: int = 0
    mu_free_1: int = 0
    mu_free_min: int = 0
    m_unocc: int | None = None
    #: T^c_{E_i}: the largest residual multiplicity of a boundary value no public tuple occupies,
    #: when the boundary is unique (else None). Used by the ``tight`` variant (CONTEXTUAL.md s. 6).
    t_free: int | None = None

    def __post_init__(self) -> None:
        if self.public not in ("none", "tuples", "whole"):
            raise InternalError(f"public must be none, tuples or whole, got {self.public!r}")
        for name in ("ls", "unauthorized", "mu_free_1", "mu_free_min"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InternalError(f"{name} must be a non-negative int, got {value!r}")


@dataclass(frozen=True)
class RuleBound:
    """The rule that bounds one relation's contextual edits, and its bound ``ell`` (<= ``ls``)."""

    alias: str
    rule: str
    ell: int
    ls: int


def _neighbourhood(value: Neighbourhood | str) -> Neighbourhood:
    """``value`` as a :class:`Neighbourhood`; an :class:`InternalError` when it names none.

    The enum is what callers pass; a string is parsed (``Neighbourhood.parse``: the old
    ``add_remove`` spelling included) for callers not yet moved to the enum.
    """
    parsed = Neighbourhood.parse(value)
    if parsed is None:
        raise InternalError(f"neighbourhood must be one of {[n.value for n in Neighbourhood]}, got {value!r}")
    return parsed


def apply_rule(facts: RelationFacts, neighbourhood: Neighbourhood | str = Neighbourhood.ADD_REMOVE) -> RuleBound:
    """The inference rule for one relation under ``neighbourhood`` (module docstring)."""
    neighbourhood = _neighbourhood(neighbourhood)
    f = facts
    if f.public == "whole":
        return RuleBound(f.alias, "Pub", 0, f.ls)
    free_1 = f.mu_free_1 if f.unauthorized else 0
    free_min = f.mu_free_min if f.unauthorized else 0
    if neighbourhood is Neighbourhood.ADD_REMOVE:
        if f.m_unocc is not None:
            # Sel-Unique: an insertion lands on an unoccupied boundary value, a deletion removes an
            # unauthorized tuple. Not under change: a changed tuple may keep its own (vacated)
            # boundary value and flip its selection (CONTEXTUAL.md, counterexample 5).
            ell, rule = max(free_1, f.m_unocc), "Sel-Unique"
        else:
            ell, rule = f.ls, ("Ins" if f.public == "tuples" else "Base")
    else:
        # change: the changed tuple is unauthorized (its boundary cells may move);
        # none unauthorized: every boundary cell is fixed (Prj-Chg)
        change = max(f.ls - free_min, free_1) if f.unauthorized else 0
        if neighbourhood is Neighbourhood.CHANGE:
            ell = change
            rule = {"none": "Base", "tuples": "PrjSel-Chg" if f.unauthorized else "Prj-Chg"}[f.public]
            if f.public == "none":
                ell = f.ls
        else:  # both: insertions are unrestricted
            ell, rule = max(change, f.ls), ("Ins" if f.public == "tuples" else "Base")
    return RuleBound(f.alias, rule, min(ell, f.ls), f.ls)


@dataclass(frozen=True)
class ContextualSensitivity:
    """CRS of a query in one context on one database: private (custodian-only) quantities.

    ``crs`` is an exact rational upper bound of the paper's CRS (never rounded down) and never
    above ``rs``; ``k1_exact`` says whether the k >= 1 part was computed exactly (else RS over
    the contextually editable relations stands in for it).
    """

    crs: Fraction
    rs: Fraction
    beta: float
    neighbourhood: Neighbourhood
    editable: tuple[str, ...]
    rules: tuple[RuleBound, ...]
    k0: int
    k1: Fraction
    k1_exact: bool
    gs: int | None = None
    facts: tuple[RelationFacts, ...] = field(default=(), repr=False)
    variant: str = "paper"

    @property
    def crs_float(self) -> float:
        return round_up_float(self.crs)

    def custodian_dict(self) -> dict[str, Any]:
        """For the custodian's audit row only: exact CRS, RS, rules and multiplicities."""
        return {
            "crs": str(self.crs),
            "rs": str(self.rs),
            "neighbourhood": str(self.neighbourhood),
            "editable": list(self.editable),
            "rules": [{"alias": r.alias, "rule": r.rule, "ell": r.ell, "ls": r.ls} for r in self.rules],
            "k0": self.k0,
            "k1": str(self.k1),
            "k1_exact": self.k1_exact,
            "variant": self.variant,
        }


def _coefficients(relations: Sequence[str], i: str, others: Sequence[str], te: Mapping[frozenset[str], int]) -> list[int]:
    """f_i(s) = sum over A within ``others`` of T_{E_i minus A} prod_{j in A} s_j, by bit mask of A."""
    e_i = frozenset(relations) - {i}
    out = []
    for mask in range(1 << len(others)):
        removed = {others[j] for j in range(len(others)) if (mask >> j) & 1}
        key = e_i - removed
        if key not in te:
            raise InternalError(f"T_E for {sorted(key)} is missing")
        out.append(int(te[key]))
    return out


def _exact(coeffs: Sequence[int], s: Sequence[int]) -> int:
    total = 0
    for mask, c in enumerate(coeffs):
        if c == 0:
            continue
        prod = c
        for j, x in enumerate(s):
            if (mask >> j) & 1:
                prod *= x
        total += prod
    return total


def _upper(beta: float, k: int, inner: int) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = _PREC
        ctx.rounding = ROUND_CEILING
        return exp_neg_upper(beta, k) * inner


def _k1(
    relations: Sequence[str], editable: Sequence[str], te: Mapping[frozenset[str], int], beta: float, gs: int | None,
    t_free: Mapping[str, int] | None = None,
) -> Fraction | None:
    """max over k >= 1 of e^{-beta k} min(GS, LS_hat_c^(k)), exactly; None when the box is too big.

    For problem i the distance vector has a coordinate per editable relation, i's own included
    (mass on s_i leaves f_i unchanged: s = e_i gives e^{-beta} T_{E_i}). The other coordinates
    range over the box [0, floor(1/beta) + 1]^d: lowering a coordinate above 1/beta never lowers
    e^{-beta k} min(GS, f_i) and keeps |s| >= 1.
    """
    d = len(editable) - 1
    top = math.floor(1 / beta) + 1
    if (top + 1) ** d * len(editable) > MAX_BOX_POINTS:
        return None
    best: Decimal | None = None
    grid = np.array(list(itertools.product(range(top + 1), repeat=d)), dtype=float).reshape(-1, d) if d else np.zeros((1, 0))
    ks = grid.sum(axis=1)
    for i in editable:
        others = [a for a in editable if a != i]
        coeffs = _coefficients(relations, i, others, te)
        if t_free and i in t_free:
            coeffs[0] = min(coeffs[0], t_free[i])  # tight variant: T^c_{E_i} in place of T_{E_i}
        candidates: list[tuple[int, tuple[int, ...]]] = []
        # s = e_i: k = 1, f_i = T_{E_i}
        candidates.append((1, tuple([0] * d)))
        if d:
            f = np.zeros(len(grid))
            for mask, c in enumerate(coeffs):
                if c == 0:
                    continue
                term = np.full(len(grid), float(c))
                for j in range(d):
                    if (mask >> j) & 1:
                        term = term * grid[:, j]
                f = f + term
            if gs is not None:
                f = np.minimum(f, float(gs))
            with np.errstate(divide="ignore"):
                logv = np.where(f > 0, np.log(np.where(f > 0, f, 1.0)) - beta * ks, -np.inf)
            logv[ks == 0] = -np.inf  # k = 0 is the other term
            if np.isfinite(logv).any():
                peak = logv.max()
                for idx in np.nonzero(logv >= peak + math.log1p(-_MARGIN))[0]:
                    candidates.append((int(ks[idx]), tuple(int(x) for x in grid[idx])))
        for k, s in candidates:
            inner = _exact(coeffs, s)
            if gs is not None:
                inner = min(inner, gs)
            value = _upper(beta, k, inner)
            if best is None or value > best:
                best = value
    return Fraction(best) if best is not None else Fraction(0)


def contextual_rs(
    relations: Sequence[str],
    private: Sequence[str],
    te: Mapping[frozenset[str], int],
    beta: float,
    facts: Mapping[str, RelationFacts],
    *,
    neighbourhood: Neighbourhood | str = Neighbourhood.ADD_REMOVE,
    gs: int | None = None,
    rs: Fraction | None = None,
    variant: str = "paper",
) -> ContextualSensitivity:
    """CRS from T_E (the same values RS reads) and the per-relation facts of the context.

    ``facts`` needs an entry for every private alias; ``rs`` (RS at the same beta over all
    private relations) is computed when not given, and CRS is never above it.
    """
    beta = check_beta(beta)
    neighbourhood = _neighbourhood(neighbourhood)
    values = dict(te)
    values.setdefault(frozenset(), 1)
    priv = [a for a in relations if a in set(private)]
    missing = [a for a in priv if a not in facts]
    if missing:
        raise InternalError(f"no contextual facts for {missing}")
    if rs is None:
        rs = maximize_envelope(relations, priv, values, beta, gs=gs).rs
    if variant not in VARIANTS:
        raise InternalError(f"variant must be one of {VARIANTS}, got {variant!r}")
    rules = tuple(apply_rule(facts[a], neighbourhood) for a in priv)
    t_free: dict[str, int] = {}
    if variant == "tight" and neighbourhood is Neighbourhood.ADD_REMOVE:
        t_free = {a: bound for a in priv if (bound := facts[a].t_free) is not None}
        rules = tuple(RuleBound(r.alias, r.rule, min(r.ell, t_free[r.alias]), r.ls) if r.alias in t_free else r for r in rules)
    editable = tuple(r.alias for r in rules if r.rule != "Pub")
    if not editable:
        return ContextualSensitivity(Fraction(0), rs, beta, neighbourhood, (), rules, 0, Fraction(0), True, gs,
                                     tuple(facts[a] for a in priv), variant)
    k0 = max(r.ell for r in rules if r.alias in editable)
    if gs is not None:
        k0 = min(k0, gs)
    k1 = _k1(relations, editable, values, beta, gs, t_free)
    exact = k1 is not None
    if k1 is None:
        # RS over P_c: max(min(GS, LS_c), k1) >= max(k0, k1), and beta-smooth under contextual neighbours
        crs = maximize_envelope(relations, editable, values, beta, gs=gs).rs
        k1 = crs
    else:
        crs = max(Fraction(k0), k1)
    crs = min(crs, rs)
    return ContextualSensitivity(crs, rs, beta, neighbourhood, editable, rules, k0, k1, exact, gs,
                                 tuple(facts[a] for a in priv), variant)


# --------------------------------------------------------------------------- on the engine


@dataclass(frozen=True)
class AuthorizationView:
    """The public information of a context, as SQL the engine evaluates (built by
    :func:`pimento.policy.authorized_tuples.authorization_view`).

    ``with_sql``: a ``WITH ...`` clause (or ``""``) whose CTEs the predicates read, with bound
    parameters ``params`` (``$1``, ``$2``, ...). ``public``: alias -> a SQL boolean over that
    alias's columns (qualified by the alias) that holds exactly for the tuples whose boundary
    cells are all authorized; an alias without an entry has no public tuple. ``whole``: aliases
    the context makes wholly public (Pub: every tuple the relation could hold).
    """

    with_sql: str = ""
    params: tuple[Any, ...] = ()
    public: Mapping[str, str] = field(default_factory=dict)
    whole: frozenset[str] = frozenset()


def boundary_columns(query: CountQuery, alias: str) -> tuple[str, ...]:
    """B_i of ``alias``: its join columns, the columns its query selection reads, and the counted
    column when it is ``alias``'s (``COUNT(col)`` filters on ``col IS NOT NULL``)."""
    cols: list[str] = []
    for klass in query.equivalence_classes:
        cols += [a.column for a in klass if a.alias == alias]
    predicate = query.selection_of(alias)
    if predicate is not None:
        for sel in query.selections:
            if sel.alias == alias:
                cols += [c.name for c in sel.expression().find_all(exp.Column)]
    if query.count.column is not None and query.count.column.alias == alias:
        cols.append(query.count.column.column)
    return tuple(dict.fromkeys(cols))


def _join_columns(query: CountQuery, alias: str) -> dict[int, list[str]]:
    """Equivalence classes shared with another relation -> ``alias``'s columns in them."""
    out: dict[int, list[str]] = {}
    for index, klass in enumerate(query.equivalence_classes):
        if any(a.alias != alias for a in klass):
            mine = sorted(a.column for a in klass if a.alias == alias)
            if mine:
                out[index] = mine
    return out


def _with(view: AuthorizationView, *ctes: str) -> str:
    if not ctes:
        return view.with_sql
    if view.with_sql:
        return view.with_sql + ",\n" + ",\n".join(ctes) + "\n"
    return "WITH " + ",\n".join(ctes) + "\n"


def _engine_facts(engine: Engine, query: CountQuery, catalog: Catalog, alias: str, ls: int, view: AuthorizationView,
                  timeout_s: float | None) -> RelationFacts:
    dialect = engine.dialect
    if alias in view.whole:
        return RelationFacts(alias, ls, "whole")
    table = query.relation(alias).table
    pub = view.public.get(alias)
    # per-tuple multiplicity: the query's join grouped by the tuple of `alias`
    tree = cast(exp.Select, sqlglot.parse_one(query.to_sql(dialect), read=dialect))  # a CountQuery renders a SELECT
    counted = tree.expressions[0]
    counted = counted.this if isinstance(counted, exp.Alias) else counted
    rid = exp.column("rowid", table=alias, quoted=True)
    tree.set("expressions", [exp.alias_(rid.copy(), "__c_rid"), exp.alias_(counted.copy(), "__c_m")])
    tree = tree.group_by(rid.copy())
    per_tuple = tree.sql(dialect=dialect)
    a = _q(alias)
    not_public = f"NOT COALESCE(({pub}), FALSE)" if pub else "TRUE"
    sql = (
        _with(view, f"__c_mult AS ({per_tuple})")
        + f"SELECT COUNT(*), MAX(COALESCE(m.__c_m, 0)), MIN(COALESCE(m.__c_m, 0)) FROM {_q(table)} AS {a} "
        f"LEFT JOIN __c_mult AS m ON m.__c_rid = {a}.rowid WHERE {not_public}"
    )
    row = engine.execute(sql, list(view.params) if view.params else None, timeout_s=timeout_s).rows[0]
    unauthorized = int(row[0] or 0)
    free_1 = int(row[1] or 0)
    free_min = int(row[2] or 0)
    total = int(engine.execute(f"SELECT COUNT(*) FROM {_q(table)}", timeout_s=timeout_s).scalar() or 0)
    kind = "tuples" if pub and unauthorized < total else "none"
    m_unocc = _unique_residual_max(engine, query, catalog, alias, None, timeout_s)
    t_free = _unique_residual_max(engine, query, catalog, alias, view, timeout_s) if m_unocc is not None else None
    if m_unocc is not None and t_free is None:
        t_free = ls  # no public tuple: every join value is free
    return RelationFacts(alias, ls, kind, unauthorized, free_1, free_min, m_unocc, t_free)


def _unique_residual_max(engine: Engine, query: CountQuery, catalog: Catalog, alias: str, view: AuthorizationView | None,
                         timeout_s: float | None) -> int | None:
    """Max residual multiplicity over join values of ``alias`` that no tuple (``view`` None) or no
    public tuple (``view`` given) occupies, when a declared key of ``alias``'s table lies within
    its join columns; else None.

    Computed when the residual join (the other relations) is one connected component; otherwise
    None (the rules that need it are not used: Ins gives LS_i, always sound). ``alias``'s own
    selection is ignored (an upper bound).
    """
    shared = _join_columns(query, alias)
    if not shared:
        return None
    table = catalog.table(query.relation(alias).table)
    mine = {c.lower() for cols in shared.values() for c in cols}
    keys = [k for k in (table.primary_key, *table.unique) if k]
    if not any({c.lower() for c in key} <= mine for key in keys):
        return None
    others = [x for x in query.aliases if x != alias]
    if len(query.components(others)) != 1:
        return None
    dialect = engine.dialect
    residual = query.restricted_to(others)
    tree = cast(exp.Select, sqlglot.parse_one(residual.to_sql(dialect), read=dialect))  # a CountQuery renders a SELECT
    reps = []
    for index in sorted(shared):
        outside = sorted(a for a in query.equivalence_classes[index] if a.alias != alias)
        reps.append(exp.column(outside[0].column, table=outside[0].alias, quoted=True))
    tree.set("expressions", [exp.alias_(r.copy(), f"__c_v{n}") for n, r in enumerate(reps)] + [exp.alias_(exp.Count(this=exp.Star()), "__c_m")])
    tree = tree.group_by(*[r.copy() for r in reps])
    a = _q(alias)
    conds = []
    not_null = []
    for n, index in enumerate(sorted(shared)):
        not_null.append(f"r.__c_v{n} IS NOT NULL")
        conds += [f"{a}.{_q(c)} = r.__c_v{n}" for c in shared[index]]
    params: list[Any] | None = None
    prefix = ""
    if view is not None:
        pub = view.public.get(alias)
        if not pub:
            return None  # no public tuple: T^c = T_{E_i}, nothing to gain
        conds.append(f"COALESCE(({pub}), FALSE)")
        prefix = view.with_sql + "\n" if view.with_sql else ""
        params = list(view.params) if view.params else None
    sql = (
        f"{prefix}SELECT MAX(r.__c_m) FROM ({tree.sql(dialect=dialect)}) AS r WHERE {' AND '.join(not_null)} AND NOT EXISTS "
        f"(SELECT 1 FROM {_q(table.name)} AS {a} WHERE {' AND '.join(conds)})"
    )
    return int(engine.execute(sql, params, timeout_s=timeout_s).scalar() or 0)


def contextual_sensitivity(
    engine: Engine,
    query: CountQuery,
    catalog: Catalog,
    beta: float,
    view: AuthorizationView,
    *,
    neighbourhood: Neighbourhood | str = Neighbourhood.ADD_REMOVE,
    gs: int | None = None,
    timeout_s: float | None = None,
    variant: str = "paper",
) -> ContextualSensitivity:
    """CRS of ``query`` on the database behind ``engine`` in the context ``view`` describes.

    T_E and RS as :func:`pimento.sensitivity.rs.residual_sensitivity` computes them (same beta,
    same GS default); the multiplicities the rules read are computed by the engine. A query the
    rules do not cover (``COUNT(DISTINCT ...)``, an engine without row ids) gets CRS = RS.
    """
    beta = check_beta(beta)
    neighbourhood = _neighbourhood(neighbourhood)
    priv = private_relations(query, catalog)
    counts = compute_te(engine, query, catalog, needed_subsets(query, priv, attribution=False), timeout_s=timeout_s)
    base = rs_from_te(query, priv, counts, beta, gs=gs, attribution=False)
    te = dict(counts.values)
    te.setdefault(frozenset(), 1)
    names = frozenset(query.aliases)
    supported = not query.count.distinct and engine.dialect in ("duckdb", "sqlite")
    facts = {}
    for alias in priv:
        ls = int(te[names - {alias}])
        if supported:
            facts[alias] = _engine_facts(engine, query, catalog, alias, ls, view, timeout_s)
        else:
            facts[alias] = RelationFacts(alias, ls)
    return contextual_rs(query.aliases, priv, te, beta, facts, neighbourhood=neighbourhood, gs=base.gs, rs=base.rs,
                         variant=variant)
