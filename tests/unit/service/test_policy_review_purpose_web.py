"""Issue 27: the custodian's review page answers a *purpose* question (a permit that states no purpose
while the text's other sentences name purposes), on the scratch gym schema of
tests/purpose_review_support.py: the page shows the proposal (any purpose) and the
purposes the text names, labels the question advisory (the permit is in the draft as read, any purpose;
confirm pre-selected), and an edit names the purposes the permit holds for."""

from __future__ import annotations


import duckdb
import pytest
import yaml

from purpose_review_support import GYM_SQL, GYM_TEXT
from service_support import TESTCLIENT_WARNING, review_form, signed_in

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)

DRAFT, REVIEWED = "policy.draft.yaml", "policy.draft.reviewed.yaml"


@pytest.fixture(scope="module")
def gym(tmp_path_factory):
    from pimento.engines.database import load_database
    from pimento.policy.extract_offline import extract_policy_offline
    from pimento.service.deployment import Deployment

    folder = tmp_path_factory.mktemp("purpose_web")
    con = duckdb.connect(str(folder / "gym.duckdb"))
    for sql in GYM_SQL:
        con.execute(sql)
    con.close()
    db = load_database(folder / "gym.duckdb")
    try:
        draft = extract_policy_offline(GYM_TEXT, db.catalog, engine=db.engine, year=2024)
    finally:
        db.close()
    (folder / DRAFT).write_text(draft.to_yaml(), encoding="utf-8")
    (folder / "pimento.toml").write_text(f'[policy]\ndraft = "{DRAFT}"\n', encoding="utf-8")
    return Deployment(folder / "gym.duckdb"), folder


def _purpose_of_g1(folder):
    doc = yaml.safe_load((folder / REVIEWED).read_text(encoding="utf-8"))
    norm = next(n for n in doc["norms"] if n["id"] == "G1")
    return doc["grounding"]["purposes"].get(norm["purpose"], norm["purpose"])


def test_the_page_shows_and_answers_a_purpose_question(gym) -> None:
    deployment, folder = gym
    client = signed_in(deployment)
    page = client.get("/custodian/policy/review").text
    assert 'id="q-G1.1"' in page and "purpose)" in page
    assert "Proposal: <code>any purpose</code>" in page and 'id="confirm-G1.1"' in page
    assert 'id="purposes-G1.1"' in page and "<code>nutrition</code>" in page
    # advisory: labelled so, its confirm (the draft's reading, any purpose) pre-selected
    assert "advisory purpose)" in page and 'id="advisory-G1.1"' in page
    assert "enforced as <code>any purpose</code> unless you narrow it" in page
    assert 'id="confirm-G1.1" checked' in page and 'id="drop-G1.1" checked' not in page
    empty = client.post("/custodian/policy/review", data=review_form(page, **{"action-G1.1": "edit", "purposes-G1.1": " "}))
    assert empty.status_code == 422 and not (folder / REVIEWED).exists()
    saved = client.post("/custodian/policy/review",
                        data=review_form(page, **{"action-G1.1": "edit", "purposes-G1.1": "coaching, rehab"}))
    assert saved.status_code == 200 and 'id="saved"' in saved.text, saved.text
    assert _purpose_of_g1(folder) == {"values": ["coaching", "rehab"]}
    saved = client.post("/custodian/policy/review", data=review_form(page, **{"action-G1.1": "confirm"}))
    assert saved.status_code == 200 and _purpose_of_g1(folder) == "any"
