"""Contextual residual sensitivity: the rules, the four corrections of issue 16, CRS <= RS."""

from __future__ import annotations

from fractions import Fraction

import pytest

from pimento.errors import InternalError
from pimento.sensitivity import contextual
from pimento.sensitivity.contextual import RelationFacts, RuleBound, apply_rule, contextual_rs
from pimento.sensitivity.envelope import maximize_envelope
from pimento.sensitivity.neighbourhood import Neighbourhood
from . import _contextual_model as m

CHAIN = dict(rels={"r1": ("a", "b"), "r2": ("b", "c")}, joins=(("r1", "b", "r2", "b"),))


# ------------------------------------------------------------------ the four counterexamples
def test_correction_1_authorized_information_by_cell_provenance():
    """Under change, a value-set reading of A_c lets (1,1) -> (0,2) through (b values {0,1} kept):
    the count moves 2 -> 1 while Prj-Chg says 0. By provenance the b cell of that tuple is fixed."""
    schema = m.Schema(**CHAIN, private=("r2",), auth={"r2": m.Auth(None, ("b",))})
    inst = m.make(schema, {"r1": [(1, 1)], "r2": [(0, 1), (1, 1), (1, 2)]})
    assert m.cls(schema, inst, Neighbourhood.CHANGE, by_values=True) == 1  # the literal reading's neighbour exists
    assert m.cls(schema, inst, Neighbourhood.CHANGE) == 0  # by provenance it is not a contextual neighbour
    result = m.crs(schema, inst, 0.5, Neighbourhood.CHANGE)
    assert [r.rule for r in result.rules] == ["Prj-Chg"]
    assert result.k0 == 0


def test_correction_2_mu_free_ranges_over_unauthorized_tuples():
    """R2 private, only (0,2) authorized. Over 'values that remain private' mu_free_1 = 1 and Sel
    gives 1; the unauthorized (0,1) has multiplicity 2 and changing it to (1,1) moves the count by 2."""
    schema = m.Schema(**CHAIN, private=("r2",), auth={"r2": m.Auth(frozenset({(0, 2)}), ("b", "c"))})
    inst = m.make(schema, {"r1": [(1, 0), (2, 0), (2, 2)], "r2": [(0, 1), (0, 2), (2, 1)]})
    assert m.cls(schema, inst, Neighbourhood.BOTH) == 2
    t = m.all_te(schema, inst)
    f = m.facts(schema, inst, t)["r2"]
    assert (f.mu_free_1, f.mu_free_min, f.unauthorized) == (2, 1, 2)
    literal = RelationFacts("r2", f.ls, "tuples", 1, 1, 1)  # values occupied by private tuples only: {2}
    assert apply_rule(literal, Neighbourhood.CHANGE).ell == 1 < 2  # the literal reading is unsound
    for model in (Neighbourhood.CHANGE, Neighbourhood.BOTH):
        assert m.crs(schema, inst, 0.5, model).k0 >= m.cls(schema, inst, model)


def test_correction_3_fk_into_the_relation_not_out_of_it():
    """R1(a) = {1} public, R2(a, b) private and empty, a unique in R2, FK R2.a -> R1.a: the paper's
    FK gives M_unocc = 0, but inserting (1, 1) moves the count 0 -> 1. M_unocc is read from the
    instance, so it is 1 here, and 0 when the FK goes R1.a -> R2.a."""
    rels = {"r1": ("a",), "r2": ("a", "b")}
    joins = (("r1", "a", "r2", "a"),)
    wrong = m.Schema(rels, joins, ("r2",), keys={"r2": ("a",)}, fks=(("r2", ("a",), "r1", ("a",)),))
    inst = m.make(wrong, {"r1": [(1,)], "r2": []})
    assert m.cls(wrong, inst) == 1
    result = m.crs(wrong, inst, 0.5)
    assert [r.rule for r in result.rules] == ["Sel-Unique"]
    assert result.k0 == 1
    right = m.Schema(rels, joins, ("r2",), keys={"r2": ("a",)}, fks=(("r1", ("a",), "r2", ("a",)),))
    inst = m.make(right, {"r1": [(1,)], "r2": [(1, 0)]})
    t = m.all_te(right, inst)
    assert m.facts(right, inst, t)["r2"].m_unocc == 0
    assert m.crs(right, inst, 0.5).k0 >= m.cls(right, inst)


def test_correction_4_query_selection_attributes_are_boundary():
    """R1(a,b) = {(1,0)} join sigma_{c=1} R2(b,c) = {(0,0)}, pi_b R2 public: with B_2 = {b} Prj-Chg
    says 0, but (0,0) -> (0,1) keeps the b cell and moves the count 0 -> 1."""
    schema = m.Schema(**CHAIN, private=("r2",), sel={"r2": ("c", 1)}, auth={"r2": m.Auth(None, ("b",))})
    inst = m.make(schema, {"r1": [(1, 0)], "r2": [(0, 0)]})
    assert m.cls(schema, inst, Neighbourhood.CHANGE) == 1
    assert schema.boundary_cols("r2") == ("b", "c")
    result = m.crs(schema, inst, 0.5, Neighbourhood.CHANGE)
    assert result.k0 >= 1
    assert [r.rule for r in result.rules] == ["PrjSel-Chg"]


# ------------------------------------------------------------------ rules
def test_rules_add_remove():
    assert apply_rule(RelationFacts("r", 7)).rule == "Base"
    assert apply_rule(RelationFacts("r", 7)).ell == 7
    f = RelationFacts("r", 7, "tuples", 3, 2, 1)
    assert (apply_rule(f).rule, apply_rule(f).ell) == ("Ins", 7)  # Ins keeps LS_i
    u = RelationFacts("r", 7, "tuples", 3, 2, 1, m_unocc=3)
    assert (apply_rule(u).rule, apply_rule(u).ell) == ("Sel-Unique", 3)
    assert apply_rule(RelationFacts("r", 7, "whole")).ell == 0
    # never above LS_i, even with inconsistent facts
    assert apply_rule(RelationFacts("r", 2, "tuples", 1, 5, 5, m_unocc=9)).ell == 2


def test_rules_change():
    assert apply_rule(RelationFacts("r", 7, "tuples", 0), Neighbourhood.CHANGE).rule == "Prj-Chg"
    assert apply_rule(RelationFacts("r", 7, "tuples", 0), Neighbourhood.CHANGE).ell == 0
    assert apply_rule(RelationFacts("r", 7, "tuples", 2, 3, 2), Neighbourhood.CHANGE).ell == 5  # max(7 - 2, 3)
    assert apply_rule(RelationFacts("r", 7, "tuples", 2, 3, 2), Neighbourhood.BOTH).ell == 7
    with pytest.raises(InternalError):
        apply_rule(RelationFacts("r", 7), "swap")


def test_the_neighbourhood_is_the_one_enum_and_old_spellings_still_parse():
    """CRS takes a Neighbourhood (sensitivity/neighbourhood.py, its one home); the strings callers
    passed before it (``add_remove``) and its own values are read as that enum, and the custodian's
    audit row carries the one spelling every answer uses."""
    assert not hasattr(contextual, "NEIGHBOURHOODS")  # no second list of the names
    u = RelationFacts("r", 7, "tuples", 3, 2, 1, m_unocc=3)
    for spelling in (Neighbourhood.ADD_REMOVE, "add_remove", "add-remove"):
        assert apply_rule(u, spelling) == apply_rule(u) == RuleBound("r", "Sel-Unique", 3, 7)
    assert apply_rule(u, "change") == apply_rule(u, Neighbourhood.CHANGE)
    te = {frozenset(): 1}
    for spelling, want in (("add_remove", Neighbourhood.ADD_REMOVE), ("both", Neighbourhood.BOTH)):
        result = contextual_rs(("r",), ("r",), te, 0.5, {"r": u}, neighbourhood=spelling)
        assert result.neighbourhood is want
        assert result.custodian_dict()["neighbourhood"] == want.value
    assert contextual_rs(("r",), ("r",), te, 0.5, {"r": u}).custodian_dict()["neighbourhood"] == "add-remove"


def test_crs_never_above_rs_and_below_it_only_at_distance_zero():
    rels = ("a", "b", "c")
    te = {frozenset(): 1, frozenset("a"): 3, frozenset("b"): 4, frozenset("c"): 2,
          frozenset("ab"): 5, frozenset("bc"): 6, frozenset("ac"): 1, frozenset("abc"): 9}
    beta = 0.5
    rs = maximize_envelope(rels, rels, te, beta).rs
    base = {a: RelationFacts(a, te[frozenset(rels) - {a}]) for a in rels}
    same = contextual_rs(rels, rels, te, beta, base)
    assert same.crs == rs  # no authorization: CRS = RS
    low = {a: RelationFacts(a, f.ls, "tuples", 1, 0, 0, m_unocc=0) for a, f in base.items()}
    out = contextual_rs(rels, rels, te, beta, low)
    assert out.crs <= rs
    assert out.k0 == 0
    # the distance-1 envelope is at least T_{E_i}: CRS >= e^{-beta} LS
    assert float(out.crs) >= 0.6065306597 * max(f.ls for f in base.values()) - 1e-9
    whole = {a: RelationFacts(a, f.ls, "whole") for a, f in base.items()}
    assert contextual_rs(rels, rels, te, beta, whole).crs == 0
    # capped explicitly by the RS it is given
    assert contextual_rs(rels, rels, te, beta, base, rs=Fraction(1)).crs == 1


def test_k1_fallback_is_rs_over_editable_relations(monkeypatch):
    from pimento.sensitivity import contextual

    rels = ("a", "b", "c")
    te = {frozenset(): 1, frozenset("a"): 3, frozenset("b"): 4, frozenset("c"): 2,
          frozenset("ab"): 5, frozenset("bc"): 6, frozenset("ac"): 1, frozenset("abc"): 9}
    low = {a: RelationFacts(a, te[frozenset(rels) - {a}], "tuples", 1, 0, 0, m_unocc=0) for a in rels}
    exact = contextual_rs(rels, rels, te, 0.5, low)
    monkeypatch.setattr(contextual, "MAX_BOX_POINTS", 0)
    fallback = contextual_rs(rels, rels, te, 0.5, low)
    assert not fallback.k1_exact and exact.k1_exact
    assert fallback.crs >= exact.crs
    assert fallback.crs == maximize_envelope(rels, rels, te, 0.5).rs


def test_sel_unique_is_unsound_under_change_and_not_used_there():
    """Found by the brute force: R1(a, b) with b unique, sigma_{a=0} R1 = {} from {(1, 0)},
    R2 = {(0, 0)}. Changing (1, 0) to (0, 0) keeps b (its own value, vacated) and moves the
    count 0 -> 1, while max(mu_free_1, M_unocc) = max(0, 0) = 0."""
    schema = m.Schema(**CHAIN, private=("r1",), sel={"r1": ("a", 0)}, keys={"r1": ("b",)})
    inst = m.make(schema, {"r1": [(1, 0)], "r2": [(0, 0)]})
    assert m.cls(schema, inst, Neighbourhood.CHANGE) == 1
    t = m.all_te(schema, inst)
    f = m.facts(schema, inst, t)["r1"]
    assert max(f.mu_free_1, f.m_unocc) == 0  # what Sel-Unique would say
    for model in (Neighbourhood.CHANGE, Neighbourhood.BOTH):
        result = m.crs(schema, inst, 0.1, model)
        assert result.rules[0].rule != "Sel-Unique"
        assert result.k0 >= 1
    assert m.crs(schema, inst, 0.1, Neighbourhood.ADD_REMOVE).rules[0].rule == "Sel-Unique"


def test_tight_variant_uses_authorization_at_every_distance():
    """Two private relations, R2 unique on b with its heaviest value public: the paper's CRS keeps
    T_{E_2} at distance >= 1, the tight variant T^c (the free values only); never above the paper's."""
    rows = {"r1": [(a, 0) for a in range(3)] + [(0, 1)], "r2": [(0, 0), (1, 0)]}
    schema = m.Schema(**CHAIN, private=("r1", "r2"), keys={"r2": ("b",)},
                      auth={"r2": m.Auth(frozenset({(0, 0)}), ("b", "c"))})
    inst = m.make(schema, rows)
    t = m.all_te(schema, inst)
    f = m.facts(schema, inst, t)["r2"]
    assert f.ls == 3 and f.t_free == 1  # b = 0 (3 results) is public; b = 1 has 1
    for beta in (0.1, 1.0):
        paper = m.crs(schema, inst, beta)
        tight = m.crs(schema, inst, beta, variant="tight")
        assert tight.crs < paper.crs <= paper.rs
        assert tight.crs >= m.cls(schema, inst)
    with pytest.raises(InternalError):
        contextual_rs(("a",), ("a",), {frozenset(): 1}, 0.5, {"a": RelationFacts("a", 1)}, variant="loose")
