"""Brute force of the contextual rules (issue 16, item 3) on tiny databases over small domains.

For every instance I (chains, stars, a triangle; selections, public relations, unique keys,
foreign keys; add/remove, change and both; beta 0.1, 0.5, 1) and every contextual neighbour I'
(each edit that keeps the constraints and the authorized cells, by provenance):

(i)   CRS(I) >= CLS(I)                         (CLS by enumeration)
(ii)  CRS(I) <= e^beta CRS(I')                 (smoothness under contextual neighbours)
(iii) CRS(I) <= RS(I)

for the paper's CRS and for the ``tight`` variant (T^c_{E_i} at every distance, add/remove), which
must also stay at or below the paper's,

and, for the split mode under add/remove: the remainder moves by at most what the whole count
moves on every (ordinary) neighbour, and the exact part does not move on contextual neighbours.

``PIMENTO_BRUTE_EXAMPLES`` raises the number of examples per shape (default 60).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pimento.sensitivity.neighbourhood import Neighbourhood

from . import _contextual_model as m

EXAMPLES = int(os.environ.get("PIMENTO_BRUTE_EXAMPLES", "60"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

SHAPES = {
    "chain2": ({"r1": ("a", "b"), "r2": ("b", "c")}, (("r1", "b", "r2", "b"),), (0, 1, 2)),
    "chain3": ({"r1": ("a", "b"), "r2": ("b", "c"), "r3": ("c", "d")},
               (("r1", "b", "r2", "b"), ("r2", "c", "r3", "c")), (0, 1)),
    "star": ({"r1": ("a", "b"), "r2": ("a", "c"), "r3": ("b", "d")},
             (("r1", "a", "r2", "a"), ("r1", "b", "r3", "b")), (0, 1)),
    "triangle": ({"r1": ("a", "b"), "r2": ("b", "c"), "r3": ("c", "a")},
                 (("r1", "b", "r2", "b"), ("r2", "c", "r3", "c"), ("r3", "a", "r1", "a")), (0, 1)),
}

CHECKED = {"instances": 0, "neighbours": 0}


@st.composite
def scenarios(draw, shape: str):
    rels, joins, domain = SHAPES[shape]
    names = sorted(rels)
    private = tuple(sorted(draw(st.sets(st.sampled_from(names), min_size=1))))
    rows_of = st.tuples(*[st.sampled_from(domain)] * 2)
    rows = {a: draw(st.lists(rows_of, max_size=3)) for a in names}
    sel = {}
    if draw(st.booleans()):
        a = draw(st.sampled_from(names))
        sel[a] = (draw(st.sampled_from(rels[a])), draw(st.sampled_from(domain)))
    keys, fks = {}, []
    if draw(st.booleans()):
        a = draw(st.sampled_from(names))
        jc = [c for x, c, y, d in joins for (al, col) in ((x, c), (y, d)) if al == a]
        keys[a] = (draw(st.sampled_from(sorted(set(jc)))),)
    if draw(st.booleans()):
        x, c, y, d = draw(st.sampled_from(joins))
        fks.append((x, (c,), y, (d,)) if draw(st.booleans()) else (y, (d,), x, (c,)))
    auth = {}
    for a in private:
        kind = draw(st.sampled_from(["none", "tuples", "all_rows", "whole"]))
        if kind == "none":
            continue
        if kind == "whole":
            auth[a] = m.Auth(None, rels[a], whole=True)
            continue
        cols = tuple(sorted(draw(st.sets(st.sampled_from(rels[a]), min_size=1))))
        phi = None if kind == "all_rows" else frozenset(draw(st.sets(rows_of, max_size=4)))
        auth[a] = m.Auth(phi, cols)
    schema = m.Schema(rels, tuple(joins), private, sel, keys, tuple(fks), auth, domain)
    # repair the instance to satisfy the constraints: drop key duplicates, then dangling references
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
    inst = m.make(schema, rows)
    assert m.valid(schema, inst)
    model = draw(st.sampled_from(list(Neighbourhood)))
    beta = draw(st.sampled_from([0.1, 0.5, 1.0, 3.0]))
    variant = draw(st.sampled_from(["paper", "tight"]))
    return schema, inst, model, beta, variant


def _check(schema, inst, model, beta, variant="paper"):
    m.check_properties(schema, inst, model, beta, variant, CHECKED)


@SETTINGS
@given(scenarios("chain2"))
def test_chain2(case):
    _check(*case)


@SETTINGS
@given(scenarios("chain3"))
def test_chain3(case):
    _check(*case)


@SETTINGS
@given(scenarios("star"))
def test_star(case):
    _check(*case)


@SETTINGS
@given(scenarios("triangle"))
def test_triangle(case):
    _check(*case)


def test_report_counts():
    """Runs last in this module: the brute force checked something (printed with -s)."""
    print(f"contextual brute force: {CHECKED['instances']} instances, {CHECKED['neighbours']} contextual neighbours; "
          + ", ".join(f"{k}: {v}" for k, v in sorted(CHECKED.items()) if "/" in k))
    if CHECKED["instances"]:
        assert CHECKED["neighbours"] > 0
