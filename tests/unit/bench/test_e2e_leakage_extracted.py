"""RQ4's extracted-policy deployment (issue 27): extracted and compiled under the custodian's settings.

The benchmark copied the database for the extracted deployment and extracted and compiled its policy
before writing the copy's pimento.toml, so the catalog lacked the declared functional dependency
(DxCategory.diagnosis -> hivstatus) and information implication did not carry "HIV status" to the
diagnoses that reveal it: the two hospital leaks of the extracted policy (docs/benchmarks.md)."""

from __future__ import annotations

import pytest

import benchmarks.e2e_leakage as e2e


@pytest.mark.slow
def test_the_extracted_policy_is_compiled_with_the_declared_dependencies(tmp_path, monkeypatch):
    seen = []
    extract = e2e.extract_policy_offline

    def spy(text, catalog, **kwargs):
        seen.append(tuple(catalog.functional_dependencies))
        return extract(text, catalog, **kwargs)

    monkeypatch.setattr(e2e, "extract_policy_offline", spy)
    db, failed = e2e.prepare_extracted("hospital", tmp_path, size=12, seed=0)
    assert failed is None and db is not None
    assert seen and any(fd.table == "DxCategory" and fd.lhs == ("diagnosis",) for fd in seen[0])


@pytest.mark.slow
def test_each_review_reading_deploys_apart(tmp_path):
    paths = {r: e2e.prepare_extracted("hospital", tmp_path, size=12, seed=0, review=r)[0] for r in e2e.REVIEWS}
    assert len(set(paths.values())) == len(e2e.REVIEWS) and all(paths.values())
