"""merge_catalog: private marking and declared constraints applied to an introspected catalog."""

from __future__ import annotations

import pytest

from pimento.config import settings_from_dict
from pimento.errors import CatalogError
from pimento.schema import Catalog, Column, ForeignKey, FunctionalDependency, Table
from pimento.schema.merge import (
    declared_constraints,
    merge_catalog,
    parse_column_ref,
    privacy_marks,
    private_relations,
)


def _catalog() -> Catalog:
    return Catalog(
        (
            Table("Patient", (Column("patient_id", "integer"), Column("Name"), Column("zip")), ("patient_id",)),
            Table("Employee", (Column("employee_id", "integer"), Column("email")), ("employee_id",)),
            Table(
                "Prescription",
                (Column("patient_id", "integer"), Column("Employee_ID", "integer"), Column("drug")),
            ),
            Table("DxCategory", (Column("diagnosis"), Column("hivstatus"), Column("code"))),
        ),
        (ForeignKey("Prescription", ("patient_id",), "Patient", ("patient_id",)),),
    )


def _settings(**sections):
    return settings_from_dict(sections)


def test_parse_column_ref_single_and_group() -> None:
    assert parse_column_ref("Patient.zip") == ("Patient", ("zip",))
    assert parse_column_ref(" Visit . ( a ,b ) ") == ("Visit", ("a", "b"))


@pytest.mark.parametrize("bad", ["Patient", "Patient.", "Patient.(a,,b)", "a.b.c", ".zip", "Patient.(a b)"])
def test_parse_column_ref_rejects_malformed(bad: str) -> None:
    with pytest.raises(CatalogError, match="Table.column"):
        parse_column_ref(bad)


def test_without_settings_every_relation_is_private_and_nothing_changes() -> None:
    merged = merge_catalog(_catalog(), _settings())
    assert merged.private_tables == ("Patient", "Employee", "Prescription", "DxCategory")
    assert merged.foreign_keys == _catalog().foreign_keys
    assert merged.functional_dependencies == ()


def test_private_list_alone_leaves_unlisted_relations_private() -> None:
    # Before: a relation the custodian listed in neither privacy.private nor privacy.public became
    # public silently (Employee and DxCategory here). Only privacy.public makes a relation public.
    merged = merge_catalog(_catalog(), _settings(privacy={"private": ["patient", "PRESCRIPTION"]}))
    assert merged.private_tables == ("Patient", "Employee", "Prescription", "DxCategory")


def test_public_list_marks_the_rest_private() -> None:
    merged = merge_catalog(_catalog(), _settings(privacy={"public": ["dxcategory"]}))
    assert merged.private_tables == ("Patient", "Employee", "Prescription")


def test_private_and_public_lists_leave_the_unlisted_private() -> None:
    settings = _settings(privacy={"private": ["Patient"], "public": ["Employee"]})
    assert merge_catalog(_catalog(), settings).private_tables == ("Patient", "Prescription", "DxCategory")


def test_marks_say_why_each_relation_is_private_or_public() -> None:
    settings = _settings(privacy={"private": ["Patient"], "public": ["Employee", "DxCategory"]})
    marks = {m.relation: m for m in privacy_marks(_catalog(), settings, private=["dxcategory"])}
    assert (marks["Patient"].private, marks["Patient"].reason) == (True, "listed in privacy.private")
    assert (marks["Employee"].private, marks["Employee"].reason) == (False, "listed in privacy.public")
    assert marks["Prescription"].private and "private by default" in marks["Prescription"].reason
    assert marks["DxCategory"].private and "--private" in marks["DxCategory"].reason
    assert marks["Patient"].to_dict() == {"relation": "Patient", "private": True, "reason": "listed in privacy.private"}


def test_caller_private_only_adds_to_the_custodians_marking() -> None:
    # Before: private= replaced [privacy], so --private DxCategory made Patient and Visit public.
    settings = _settings(privacy={"private": ["Patient", "Prescription"], "public": ["Employee", "DxCategory"]})
    merged = merge_catalog(_catalog(), settings, private=["DxCategory"])
    assert merged.private_tables == ("Patient", "Prescription", "DxCategory")
    assert merge_catalog(_catalog(), settings, private=["Patient"]).private_tables == ("Patient", "Prescription")
    assert merge_catalog(_catalog(), settings, private=None).private_tables == ("Patient", "Prescription")


def test_unknown_caller_private_relation_is_a_clear_error() -> None:
    with pytest.raises(CatalogError) as info:
        merge_catalog(_catalog(), _settings(), private=["Patient", "Patinet"])
    line = info.value.one_line()
    assert "--private" in line and "'Patinet'" in line and "did you mean 'Patient'" in line


def test_relation_both_private_and_public_is_an_error() -> None:
    with pytest.raises(CatalogError, match="both"):
        merge_catalog(_catalog(), _settings(privacy={"private": ["Patient"], "public": ["patient"]}))


def test_unknown_private_relation_names_entry_and_suggests() -> None:
    with pytest.raises(CatalogError) as info:
        merge_catalog(_catalog(), _settings(privacy={"private": ["Patient", "Patinet"]}))
    assert "privacy.private[1]" in info.value.one_line()
    assert "did you mean 'Patient'" in info.value.one_line()


def test_root_must_be_private() -> None:
    with pytest.raises(CatalogError, match="privacy.root"):
        private_relations(_catalog(), _settings(privacy={"public": ["Patient"], "root": "Patient"}))


def test_declared_foreign_key_is_resolved_and_marked_declared() -> None:
    settings = _settings(
        constraints={"foreign_keys": [{"from": "prescription.employee_id", "to": "EMPLOYEE.Employee_Id"}]}
    )
    merged = merge_catalog(_catalog(), settings)
    declared = [fk for fk in merged.foreign_keys if fk.declared]
    assert declared == [ForeignKey("Prescription", ("Employee_ID",), "Employee", ("employee_id",), declared=True)]
    assert len(merged.foreign_keys) == 2


def test_declared_foreign_key_already_known_is_kept_once() -> None:
    settings = _settings(constraints={"foreign_keys": [{"from": "Prescription.patient_id", "to": "Patient.patient_id"}]})
    merged = merge_catalog(_catalog(), settings)
    assert merged.foreign_keys == _catalog().foreign_keys


def test_declared_foreign_key_must_reference_a_key() -> None:
    settings = _settings(constraints={"foreign_keys": [{"from": "Prescription.drug", "to": "DxCategory.code"}]})
    with pytest.raises(CatalogError, match="not the primary key or a unique key") as info:
        merge_catalog(_catalog(), settings)
    assert "constraints.unique" in info.value.one_line()


def test_declared_unique_makes_a_foreign_key_target_valid() -> None:
    settings = _settings(
        constraints={
            "unique": [{"columns": "DxCategory.code"}],
            "foreign_keys": [{"from": "Prescription.drug", "to": "DxCategory.code"}],
        }
    )
    merged = merge_catalog(_catalog(), settings)
    assert merged.table("DxCategory").unique == (("code",),)
    assert merged.table("DxCategory").is_key(["code"])
    assert ForeignKey("Prescription", ("drug",), "DxCategory", ("code",), declared=True) in merged.foreign_keys


def test_declared_unique_equal_to_primary_key_is_not_repeated() -> None:
    merged = merge_catalog(_catalog(), _settings(constraints={"unique": [{"columns": "Patient.(PATIENT_ID)"}]}))
    assert merged.table("Patient").unique == ()


def test_composite_foreign_key_arity_mismatch() -> None:
    settings = _settings(constraints={"foreign_keys": [{"from": "Prescription.(patient_id, drug)", "to": "Patient.patient_id"}]})
    with pytest.raises(CatalogError, match=r"constraints.foreign_keys\[0\].*2 column\(s\) reference 1"):
        merge_catalog(_catalog(), settings)


def test_declared_functional_dependency() -> None:
    settings = _settings(
        constraints={"functional_dependencies": [{"lhs": "dxcategory.Diagnosis", "rhs": "DxCategory.(hivstatus, code)"}]}
    )
    merged = merge_catalog(_catalog(), settings)
    assert merged.functional_dependencies == (FunctionalDependency("DxCategory", ("diagnosis",), ("hivstatus", "code")),)
    assert merged.dependencies_of("dxcategory") == merged.functional_dependencies


def test_functional_dependency_across_tables_is_an_error() -> None:
    settings = _settings(constraints={"functional_dependencies": [{"lhs": "Patient.zip", "rhs": "Employee.email"}]})
    with pytest.raises(CatalogError, match="within one table"):
        merge_catalog(_catalog(), settings)


@pytest.mark.parametrize(
    ("constraints", "entry", "suggestion"),
    [
        ({"unique": [{"columns": "Employe.email"}]}, "constraints.unique[0].columns", "'Employee'"),
        ({"foreign_keys": [{"from": "Prescription.employe_id", "to": "Employee.employee_id"}]},
         "constraints.foreign_keys[0].from", "'Employee_ID'"),
        ({"functional_dependencies": [{"lhs": "DxCategory.diagnosis", "rhs": "DxCategory.hivstats"}]},
         "constraints.functional_dependencies[0].rhs", "'hivstatus'"),
    ],
)
def test_unknown_names_name_the_entry_and_suggest(constraints: dict, entry: str, suggestion: str) -> None:
    with pytest.raises(CatalogError) as info:
        merge_catalog(_catalog(), _settings(constraints=constraints), source="/data/pimento.toml")
    line = info.value.one_line()
    assert line.startswith("/data/pimento.toml: " + entry)
    assert f"did you mean {suggestion}" in line


def test_declared_constraints_alone_do_not_include_engine_keys() -> None:
    declared = declared_constraints(_catalog(), _settings(constraints={"unique": [{"columns": "Employee.email"}]}))
    assert declared.unique == (("Employee", ("email",)),)
    assert declared.foreign_keys == ()


def test_merge_is_pure() -> None:
    catalog = _catalog()
    merge_catalog(catalog, _settings(privacy={"private": ["Patient"]}, constraints={"unique": [{"columns": "Employee.email"}]}))
    assert catalog == _catalog()
