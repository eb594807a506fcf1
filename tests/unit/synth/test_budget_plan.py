from __future__ import annotations

from fractions import Fraction

import pytest
from alloc_support import CONVERSION_BYTES, refusal_peak

from pimento.errors import CatalogError, ConfigError, PrivacyParameterError
from pimento.schema import Catalog, Column, ForeignKey, Table
from pimento.synth._budget import Accountant, check_budget, eps_from_rho, rho_from_eps_delta
from pimento.synth._units import unit_forest


@pytest.mark.parametrize("eps,delta", [("1.6", "1e-6"), ("0.1", "1e-9"), ("8", "1e-5")])
def test_rho_conversion_never_overspends(eps, delta):
    rho = rho_from_eps_delta(Fraction(eps), Fraction(delta))
    assert 0 < rho
    assert eps_from_rho(rho, float(Fraction(delta))) <= float(Fraction(eps))
    # and it is tight to within 1e-5 relative
    assert eps_from_rho(rho * (1 + 1e-5), float(Fraction(delta))) > float(Fraction(eps)) * (1 - 1e-5)


@pytest.mark.parametrize("eps,delta", [(0, "1e-6"), (-1, "1e-6"), ("nan", "1e-6"), (1, 0), (1, 1), (1, "0.5"), ("x", 1)])
def test_invalid_budgets_are_refused(eps, delta):
    with pytest.raises(PrivacyParameterError):
        check_budget(eps, delta)


def test_a_huge_exponent_is_refused_by_its_text_before_any_conversion():
    # Fraction("1e9999999") builds a ten-million-digit integer (seconds of CPU) before any check.
    for value in ("1e9999999", "1e-9999999"):
        # refused from its text: converting it builds 10**9999999, 4 MB (alloc_support)
        assert refusal_peak(lambda: check_budget(value, "1e-6"), PrivacyParameterError) < CONVERSION_BYTES


def test_accountant_refuses_overspend():
    acc = Accountant(Fraction(1), Fraction(1, 10**6), noise_seed=1)
    acc.spend("a", acc.rho_total * 0.6)
    with pytest.raises(Exception, match="overspent"):
        acc.spend("b", acc.rho_total * 0.6)
    acc.scope = "other component"
    acc.spend("c", acc.rho_total * 0.6)  # disjoint component: parallel composition


def _t(name, cols, pk=(), unique=(), private=True):
    return Table(name, tuple(Column(c, "integer", "INTEGER", c not in pk) for c in cols), tuple(pk), tuple(unique), private)


def _hospital():
    tables = (
        _t("Patient", ["pat_id", "age"], ["pat_id"]),
        _t("Employee", ["employee_id"], ["employee_id"]),
        _t("Dx", ["code"], ["code"], private=False),
        _t("Visit", ["visit_id", "pat_id", "attending_id", "code"], ["visit_id"]),
        _t("Orders", ["order_id", "visit_id", "pat_id"], ["order_id"]),
        _t("Rx", ["rx_id", "order_id", "pat_id", "prescriber_id"], ["rx_id"], unique=(("order_id",),)),
    )
    fks = (
        ForeignKey("Visit", ("pat_id",), "Patient", ("pat_id",)),
        ForeignKey("Visit", ("attending_id",), "Employee", ("employee_id",)),
        ForeignKey("Visit", ("code",), "Dx", ("code",)),
        ForeignKey("Orders", ("visit_id",), "Visit", ("visit_id",)),
        ForeignKey("Orders", ("pat_id",), "Patient", ("pat_id",)),
        ForeignKey("Rx", ("order_id",), "Orders", ("order_id",)),
        ForeignKey("Rx", ("pat_id",), "Patient", ("pat_id",)),
        ForeignKey("Rx", ("prescriber_id",), "Employee", ("employee_id",)),
    )
    return Catalog(tables, fks)


def test_plan_structure_of_a_hospital():
    forest = unit_forest(_hospital(), "patient")
    assert forest.components == ["Patient", "Employee"]
    assert forest.tables["Orders"].parent == "Visit"  # the deepest parent, not Patient
    assert [str(fk) for fk, _ in forest.tables["Orders"].derived] == ["Orders(pat_id) -> Patient(pat_id)"]
    assert forest.tables["Rx"].kind == "extension" and forest.entity_of("Rx") == "Orders"
    assert {fk.ref_table for fk in forest.tables["Rx"].links} == {"Employee"}
    assert forest.tables["Dx"].kind == "public"
    assert forest.tables["Employee"].component == "Employee"


def test_missing_root_is_a_clear_error():
    with pytest.raises(CatalogError, match="root relation 'Patients' does not exist"):
        unit_forest(_hospital(), "Patients")
    with pytest.raises(ConfigError, match="no root"):
        unit_forest(_hospital(), None)


def test_public_root_is_refused():
    with pytest.raises(ConfigError, match="public"):
        unit_forest(_hospital(), "Dx")


def test_cyclic_foreign_keys_are_refused():
    tables = (_t("A", ["id", "b"], ["id"]), _t("B", ["id", "a"], ["id"]))
    fks = (ForeignKey("A", ("b",), "B", ("id",)), ForeignKey("B", ("a",), "A", ("id",)))
    with pytest.raises(CatalogError, match="cyclic foreign keys"):
        unit_forest(Catalog(tables, fks), "A")


def test_public_table_referencing_private_is_refused():
    tables = (_t("P", ["id"], ["id"]), _t("Pub", ["id", "p"], ["id"], private=False))
    with pytest.raises(CatalogError, match="public table 'Pub' references private table 'P'") as info:
        unit_forest(Catalog(tables, (ForeignKey("Pub", ("p",), "P", ("id",)),)), "P")
    assert "declare 'Pub' private" in info.value.one_line()
