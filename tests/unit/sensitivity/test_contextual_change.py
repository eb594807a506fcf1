"""Brute force of the contextual rules under change and both neighbourhoods (issue 16, item 3).

``test_contextual_bruteforce.py`` draws all three neighbourhoods from one generator; there a change
edit rarely matters (a 3-value domain rarely joins, sigma_phi rarely names a row the instance holds).
Here every instance is built for change edits to matter: a 2-value domain (boundary values repeat),
a *focus* relation that is private, holds at least one tuple, and is authorized by rows taken from
the instance itself (so some of its tuples are public, others not, often with the same boundary
value) over a random subset of its columns (so a boundary is often only partly authorized); its
query selection, its unique key and a foreign key into or out of it are drawn with high probability.
Every instance is checked under change and under both, for the paper's CRS and the tight variant:
(i) CRS >= |q(I) - q(I')| and each relation's rule bound >= what one edit of it moves, (ii) CRS(I)
<= e^beta CRS(I') both ways, (iii) CRS <= RS, for every contextual neighbour I'
(``_contextual_model.check_properties``).

``test_exhaustive_chain`` sweeps deterministically over *every* instance of a two-relation chain on
{0, 1} (up to 3 rows in R1, 2 in R2) under a list of contexts chosen for the change rules.

CONTEXTUAL.md section 5 lists the planted errors these tests catch and after how many examples.
``PIMENTO_BRUTE_EXAMPLES`` raises the number of examples per shape (default 40 here).
"""

from __future__ import annotations

import itertools
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pimento.sensitivity.neighbourhood import Neighbourhood

from . import _contextual_model as m

EXAMPLES = int(os.environ.get("PIMENTO_BRUTE_EXAMPLES", "40"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
DOMAIN = (0, 1)
BETAS = (0.1, 0.5, 1.0, 3.0)
MODELS = (Neighbourhood.CHANGE, Neighbourhood.BOTH)
VARIANTS = ("paper", "tight")

SHAPES = {
    "chain2": ({"r1": ("a", "b"), "r2": ("b", "c")}, (("r1", "b", "r2", "b"),)),
    "chain3": ({"r1": ("a", "b"), "r2": ("b", "c"), "r3": ("c", "d")}, (("r1", "b", "r2", "b"), ("r2", "c", "r3", "c"))),
    "star": ({"r1": ("a", "b"), "r2": ("a", "c"), "r3": ("b", "d")}, (("r1", "a", "r2", "a"), ("r1", "b", "r3", "b"))),
    "triangle": ({"r1": ("a", "b"), "r2": ("b", "c"), "r3": ("c", "a")},
                 (("r1", "b", "r2", "b"), ("r2", "c", "r3", "c"), ("r3", "a", "r1", "a"))),
}

CHECKED: dict[str, int] = {}


def _repair(rels, keys, fks, rows):
    """Drop key duplicates, then dangling references (a referenced relation is repaired first)."""
    for a, key in keys.items():
        idx = [rels[a].index(c) for c in key]
        seen, kept = set(), []
        for r in rows[a]:
            k = tuple(r[i] for i in idx)
            if k not in seen:
                seen.add(k)
                kept.append(r)
        rows[a] = kept
    for fa, fcols, ta, tcols in fks:
        targets = {tuple(r[rels[ta].index(c)] for c in tcols) for r in rows[ta]}
        rows[fa] = [r for r in rows[fa] if tuple(r[rels[fa].index(c)] for c in fcols) in targets]
    return rows


def _join_cols(joins, alias):
    return sorted({col for x, c, y, d in joins for (al, col) in ((x, c), (y, d)) if al == alias})


@st.composite
def _auth(draw, rels, alias, rows, focus):
    """An authorization for ``alias``: pi_B over a random column subset, for every row or for sigma_phi, phi a
    set of values (drawn from the instance's own rows, plus sometimes one it does not hold) of either the whole
    row or of some authorized columns (then a change of the other columns keeps the tuple's authorized cells)."""
    kinds = ["tuples", "tuples", "tuples", "all_rows", "none", "whole"] if focus else ["none", "none", "tuples", "all_rows", "whole"]
    kind = draw(st.sampled_from(kinds))
    if kind == "none":
        return None
    if kind == "whole":
        return m.Auth(None, rels[alias], whole=True)
    cols = tuple(sorted(draw(st.sets(st.sampled_from(rels[alias]), min_size=1))))
    if kind == "all_rows":
        return m.Auth(None, cols)
    on = None if draw(st.booleans()) else tuple(sorted(draw(st.sets(st.sampled_from(cols), min_size=1))))
    idx = [rels[alias].index(c) for c in (on or rels[alias])]
    values = sorted({tuple(r[i] for i in idx) for r in rows})
    phi = set(draw(st.sets(st.sampled_from(values), max_size=len(values)))) if values else set()
    if draw(st.integers(0, 3)) == 0:
        phi.add(tuple(draw(st.sampled_from(DOMAIN)) for _ in idx))
    return m.Auth(frozenset(phi), cols, on=on)


@st.composite
def change_scenarios(draw, shape: str):
    rels, joins = SHAPES[shape]
    names = sorted(rels)
    focus = draw(st.sampled_from(names))
    private = tuple(sorted({focus} | draw(st.sets(st.sampled_from(names)))))
    row = st.tuples(st.sampled_from(DOMAIN), st.sampled_from(DOMAIN))
    rows = {a: draw(st.lists(row, min_size=1 if a == focus else 0, max_size=3)) for a in names}
    sel = {}
    where = draw(st.sampled_from(["focus", "focus", "other", "none"]))
    if where != "none":
        a = focus if where == "focus" else draw(st.sampled_from(names))
        sel[a] = (draw(st.sampled_from(rels[a])), draw(st.sampled_from(DOMAIN)))
    keys, fks = {}, []
    if draw(st.booleans()):  # a unique boundary on the focus relation (Sel-Unique, T^c)
        keys[focus] = (draw(st.sampled_from(_join_cols(joins, focus))),)
    if draw(st.integers(0, 3)) == 0:
        a = draw(st.sampled_from(names))
        keys.setdefault(a, (draw(st.sampled_from(_join_cols(joins, a))),))
    if draw(st.integers(0, 2)) == 0:  # a foreign key into or out of the focus relation (FK-covered boundaries)
        x, c, y, d = draw(st.sampled_from([j for j in joins if focus in (j[0], j[2])]))
        fks.append((x, (c,), y, (d,)) if draw(st.booleans()) else (y, (d,), x, (c,)))
    rows = _repair(rels, keys, fks, rows)
    auth = {}
    for a in private:
        got = draw(_auth(rels, a, sorted(set(rows[a])), a == focus))
        if got is not None:
            auth[a] = got
    schema = m.Schema(rels, tuple(joins), private, sel, keys, tuple(fks), auth, DOMAIN)
    inst = m.make(schema, rows)
    assert m.valid(schema, inst)
    beta = draw(st.sampled_from(BETAS))
    return schema, inst, beta


def _check(schema, inst, beta):
    crs_of = m.Cached(schema)
    for model in MODELS:
        m.check_properties(schema, inst, model, beta, VARIANTS, CHECKED, crs_of)


@SETTINGS
@given(change_scenarios("chain2"))
def test_change_chain2(case):
    _check(*case)


@SETTINGS
@given(change_scenarios("chain3"))
def test_change_chain3(case):
    _check(*case)


@SETTINGS
@given(change_scenarios("star"))
def test_change_star(case):
    _check(*case)


@SETTINGS
@given(change_scenarios("triangle"))
def test_change_triangle(case):
    _check(*case)


# ------------------------------------------------------------------ the exhaustive sweep
CHAIN = SHAPES["chain2"]
_ROWS = tuple(itertools.product(DOMAIN, repeat=2))
#: R1 (a, b): every multiset of up to 3 rows (its b counts give residual multiplicities 0..3);
#: R2 (b, c), the focus: every set of up to 3 rows (boundary values repeat: (0, 0) and (0, 1))
R1_ALL = [c for n in range(4) for c in itertools.combinations_with_replacement(_ROWS, n)]
R2_ALL = [c for n in range(4) for c in itertools.combinations(_ROWS, n)]

#: name -> the context: R2's authorization (``all``: every row; ``row``: phi = {the instance's first / last
#: R2 row}; ``on``: phi = {the b (or c) value of that row}, the other column free to change; ``fixed``: a
#: given phi), the query selection, keys, foreign keys and the private relations (default R2 only)
CONTEXTS = {
    "pi_b public, sigma on c (correction 4)": dict(sel={"r2": ("c", 1)}, auth=("all", ("b",))),
    "pi_c public, b changes": dict(auth=("all", ("c",))),
    "sigma_{b=v} pi_b, sigma on c (a partly public boundary)": dict(sel={"r2": ("c", 1)}, auth=("on", "first", ("b",), ("b",))),
    "sigma_{c=v} pi_(b,c), b changes": dict(auth=("on", "last", ("c",), ("b", "c"))),
    "one row public (mu_free over tuples, correction 2)": dict(auth=("row", "first", ("b", "c"))),
    "one row public, sigma on c": dict(sel={"r2": ("c", 0)}, auth=("row", "last", ("b", "c"))),
    "a row it does not hold, sigma on c (mu_free_min)": dict(sel={"r2": ("c", 1)}, auth=("fixed", {(1, 0)}, ("b", "c"))),
    "b unique, sigma on c (Sel-Unique under change)": dict(sel={"r2": ("c", 0)}, keys={"r2": ("b",)},
                                                           auth=("row", "first", ("b", "c"))),
    "b unique, FK R1.b -> R2.b (FK-covered boundary)": dict(keys={"r2": ("b",)}, fks=(("r1", ("b",), "r2", ("b",)),),
                                                            auth=("row", "last", ("b", "c"))),
    "b unique, FK R2.b -> R1.b, sigma on R1": dict(sel={"r1": ("a", 1)}, keys={"r2": ("b",)},
                                                   fks=(("r2", ("b",), "r1", ("b",)),), auth=("on", "first", ("c",), ("c",))),
    "both private, one R2 row public": dict(private=("r1", "r2"), auth=("row", "first", ("b", "c"))),
    "both private, no authorization": dict(private=("r1", "r2"), sel={"r1": ("a", 0)}),
}


def _sweep_auth(spec, r2_rows):
    how = spec.get("auth")
    if how is None or (how[0] in ("row", "on") and not r2_rows):
        return {}
    cols = how[-1]
    if how[0] == "all":
        return {"r2": m.Auth(None, cols)}
    if how[0] == "fixed":
        return {"r2": m.Auth(frozenset(how[1]), cols)}
    row = r2_rows[0] if how[1] == "first" else r2_rows[-1]
    if how[0] == "row":
        return {"r2": m.Auth(frozenset({row}), cols)}
    on = how[2]
    return {"r2": m.Auth(frozenset({tuple(row[CHAIN[0]["r2"].index(c)] for c in on)}), cols, on=on)}


def test_exhaustive_chain():
    """Every instance of R1(a, b) join R2(b, c) on {0, 1} (R1_ALL x R2_ALL) that meets the constraints, under
    each context of CONTEXTS (beta cycling through BETAS), change and both, both variants."""
    rels, joins = CHAIN
    stats: dict[str, int] = {}
    for n, (name, spec) in enumerate(CONTEXTS.items()):
        cache: dict[object, m.Cached] = {}
        beta = BETAS[n % len(BETAS)]  # one per context: the neighbours' CRS are then memoised
        variants = VARIANTS if spec.get("keys") else ("paper",)  # the tight variant reads a unique boundary only
        for r1, r2 in itertools.product(R1_ALL, R2_ALL):
            auth = _sweep_auth(spec, list(r2))
            schema = m.Schema(rels, joins, spec.get("private", ("r2",)), spec.get("sel", {}), spec.get("keys", {}),
                              spec.get("fks", ()), auth, DOMAIN)
            inst = m.make(schema, {"r1": list(r1), "r2": list(r2)})
            if not m.valid(schema, inst):
                continue
            crs_of = cache.setdefault(auth.get("r2"), m.Cached(schema))
            for model in MODELS:
                try:
                    m.check_properties(schema, inst, model, beta, variants, stats, crs_of)
                except AssertionError as e:
                    raise AssertionError(f"{name}: R1={r1} R2={r2} {model} beta={beta}: {e}") from e
    assert stats["instances"] > 10000 and stats["neighbours"] > 10000, stats
    CHECKED["sweep checks"] = stats["instances"]
    CHECKED["sweep neighbours"] = stats["neighbours"]


def test_report_counts():
    """Runs last in this module: the brute force checked something (printed with -s)."""
    print("contextual change/both brute force: " + ", ".join(f"{k}: {v}" for k, v in sorted(CHECKED.items())))
    if CHECKED.get("instances"):
        assert CHECKED.get("neighbours", 0) > 0
