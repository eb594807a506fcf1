"""Issue 27, POLICY14: the custodian's review page shows a *role* question (a recipient grounded only weakly) with
its proposal and the tables an edit may name, and takes confirm, edit (``Table`` or ``Table where col = 'value'``)
and drop. A hand-written draft on a scratch home-care schema (no shipped domain's words); the answers go through
:func:`pimento.policy.review.apply_review`."""

from __future__ import annotations

from typing import Any

import duckdb
import pytest
import yaml

from service_support import TESTCLIENT_WARNING, review_form, signed_in

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)

DRAFT, REVIEWED = "policy.draft.yaml", "policy.draft.reviewed.yaml"
SQL = [
    "CREATE TABLE Client (client_id INTEGER PRIMARY KEY, name VARCHAR, phone VARCHAR)",
    "CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, role VARCHAR)",
    "CREATE TABLE Courier (courier_id INTEGER PRIMARY KEY, firm VARCHAR)",
    "INSERT INTO Client VALUES (1, 'A', '555')",
    "INSERT INTO Staff VALUES (1, 'nurse'), (2, 'clerk')",
    "INSERT INTO Courier VALUES (1, 'express')",
]
DOCUMENT: dict[str, Any] = {
    "version": 1, "name": "care",
    "grounding": {
        "principals": {"client": {"relation": "Client", "key": "client_id"}},
        "subject_principal": "client",
        "roles": {"client": {"principal": "client"}},
        "data_types": {"phone": {"locations": [{"relation": "Client", "attribute": "phone"}]}},
        "purposes": {}, "conditions": {},
    },
    "norms": [{"id": "W1", "sign": "permit", "subject": "client", "data": ["phone"]}],
    "review": [{
        "clause": "W2", "source": "A care worker may view a client's phone number.",
        "norm": {"id": "W2", "sign": "permit", "subject": "client", "data": ["phone"]},
        "questions": [{"id": "W2.1", "kind": "role", "var": "recipient", "phrase": "care worker",
                       "reason": "the recipient is grounded only weakly (partial)", "evidence": "partial",
                       "proposal": {"principal": "Staff", "where": None},
                       "principals": {"Client": "client_id", "Staff": "staff_id", "Courier": "courier_id"}}],
    }],
}


@pytest.fixture()
def care(tmp_path):
    from pimento.service.deployment import Deployment

    con = duckdb.connect(str(tmp_path / "care.duckdb"))
    for sql in SQL:
        con.execute(sql)
    con.close()
    (tmp_path / DRAFT).write_text(yaml.safe_dump(DOCUMENT, sort_keys=False), encoding="utf-8")
    (tmp_path / "pimento.toml").write_text(f'[policy]\ndraft = "{DRAFT}"\n', encoding="utf-8")
    return Deployment(tmp_path / "care.duckdb"), tmp_path


def _recipient(folder):
    doc = yaml.safe_load((folder / REVIEWED).read_text(encoding="utf-8"))
    norm = next((n for n in doc["norms"] if n["id"] == "W2"), None)
    if norm is None:
        return None
    spec = doc["grounding"]["roles"][norm["recipient"]]
    return doc["grounding"]["principals"][spec["principal"]]["relation"], spec.get("where")


def test_the_page_shows_a_role_question_with_its_proposal(care) -> None:
    deployment, _ = care
    page = signed_in(deployment).get("/custodian/policy/review").text
    assert 'id="q-W2.1"' in page and "role: the recipient)" in page
    assert "Phrase <b>care worker</b>" in page and "Proposal: <code>Staff</code>" in page
    assert 'id="confirm-W2.1"' in page and 'id="drop-W2.1"' in page and 'id="edit-W2.1"' in page
    assert 'id="role-W2.1"' in page and "<code>Client, Staff, Courier</code>" in page
    assert 'id="confirm-W2.1" checked' not in page  # a held permit: nothing pre-selected
    assert 'id="columns-W2.1"' not in page and 'id="sql-W2.1"' not in page


def test_the_page_takes_confirm_edit_and_drop_of_a_role(care) -> None:
    deployment, folder = care
    client = signed_in(deployment)
    page = client.get("/custodian/policy/review").text
    saved = client.post("/custodian/policy/review", data=review_form(page, **{"action-W2.1": "confirm"}))
    assert saved.status_code == 200 and 'id="saved"' in saved.text, saved.text
    assert _recipient(folder) == ("Staff", None)
    saved = client.post("/custodian/policy/review",
                        data=review_form(page, **{"action-W2.1": "edit", "role-W2.1": "Staff where role = 'nurse'"}))
    assert saved.status_code == 200 and _recipient(folder) == ("Staff", "role = 'nurse'")
    saved = client.post("/custodian/policy/review", data=review_form(page, **{"action-W2.1": "drop"}))
    assert saved.status_code == 200 and _recipient(folder) is None


def test_a_bad_role_edit_writes_nothing(care) -> None:
    deployment, folder = care
    client = signed_in(deployment)
    page = client.get("/custodian/policy/review").text
    for role, message in ((" ", "edit names the role"), ("Nurse", "unknown principal table"),
                          ("Staff where role =", "does not parse")):
        r = client.post("/custodian/policy/review", data=review_form(page, **{"action-W2.1": "edit", "role-W2.1": role}))
        assert r.status_code == 422 and message in r.text, (role, r.text)
        assert not (folder / REVIEWED).exists()
