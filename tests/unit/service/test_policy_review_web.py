"""Issue 27: the custodian answers an extracted draft's open questions on the web page.

The school database of tests/policy_review_support.py: the draft holds K2 (a data phrase naming no column) and K3 (a condition no table grounds). The page is
the custodian's only (an analyst's session gets 403), every post carries the session's CSRF token,
the answers go through :func:`pimento.policy.review.apply_review`, and the reviewed policy (never
the draft) is written beside the draft and recorded in the audit log.
"""

from __future__ import annotations


import pytest
import yaml

from policy_review_support import REVIEWED, school_with_draft
from service_support import (
    CUSTODIAN_TOKEN, TESTCLIENT_WARNING, csrf_token, custodian_app_client, review_form, signed_in,
)

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)

@pytest.fixture(scope="module")
def school(tmp_path_factory):
    """(deployment, folder): the school database, its draft named by ``[policy] draft``."""
    from pimento.service.deployment import Deployment

    folder = tmp_path_factory.mktemp("review_web")
    return Deployment(school_with_draft(folder)), folder


def _reviewed(folder):
    path = folder / REVIEWED
    return yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None


def _columns(doc, norm_id):
    g = doc["grounding"]
    norm = next(n for n in doc["norms"] if n["id"] == norm_id)
    return {(loc["relation"], loc["attribute"]) for d in norm["data"] for loc in g["data_types"][d]["locations"]}


def test_an_analyst_never_reaches_the_review_page(school) -> None:
    deployment, folder = school
    _entry, key = deployment.add_key("ann-review", "staff:2")
    client = signed_in(deployment, key)
    assert client.get("/ask").status_code == 200  # signed in as an analyst
    assert client.get("/custodian/policy/review").status_code == 403
    csrf = csrf_token(client.get("/ask").text)
    r = client.post("/custodian/policy/review", data={"csrf": csrf, "action-K2.1": "confirm", "action-K3.1": "drop"})
    assert r.status_code == 403 and _reviewed(folder) is None
    anonymous = custodian_app_client(deployment)
    assert anonymous.get("/custodian/policy/review", follow_redirects=False).headers["location"] == "/login"


def test_the_custodian_edits_and_drops_and_the_reviewed_policy_is_written(school) -> None:
    from pimento.policy import load_policy

    deployment, folder = school
    client = signed_in(deployment, CUSTODIAN_TOKEN)
    page = client.get("/custodian/policy/review")
    assert page.status_code == 200
    assert 'id="q-K2.1"' in page.text and 'id="q-K3.1"' in page.text and "learner&#39;s records" in page.text
    assert 'value="Mark.score" checked' in page.text  # the proposal is preselected
    assert 'id="confirm-K3.1"' not in page.text  # a question without a proposal cannot be confirmed
    answers = {"action-K2.1": "edit", "columns-K2.1": ["Mark.score", "Mark.course"], "action-K3.1": "drop"}
    forged = client.post("/custodian/policy/review", data={**review_form(page.text, **answers), "csrf": "forged"})
    assert forged.status_code == 403 and _reviewed(folder) is None
    saved = client.post("/custodian/policy/review", data=review_form(page.text, **answers))
    assert saved.status_code == 200 and 'id="saved"' in saved.text, saved.text
    doc = _reviewed(folder)
    assert "review" not in doc and [n["id"] for n in doc["norms"]] == ["K1", "K2"]
    assert _columns(doc, "K2") == {("Mark", "score"), ("Mark", "course")}  # exactly the columns picked
    assert load_policy(str(folder / REVIEWED)).name  # an ordinary policy now
    with pytest.raises(Exception, match="open question"):
        load_policy(str(folder / "policy.draft.yaml"))  # the draft itself never is
    rows = deployment.audit(5)
    assert any(r.get("tool") == "policy review" for r in rows)


def test_a_condition_edited_with_sql_joins_the_permit(school) -> None:
    deployment, folder = school
    client = signed_in(deployment, CUSTODIAN_TOKEN)
    page = client.get("/custodian/policy/review").text
    sql = "SELECT staff_id AS recipient, learner_id AS subject FROM Staff, Learner WHERE staff_id = learner_id"
    saved = client.post("/custodian/policy/review",
                        data=review_form(page, **{"action-K2.1": "drop", "action-K3.1": "edit", "sql-K3.1": sql}))
    assert saved.status_code == 200, saved.text
    doc = _reviewed(folder)
    k3 = next(n for n in doc["norms"] if n["id"] == "K3")
    assert doc["grounding"]["conditions"][k3["condition"]]["sql"] == sql
    assert "K2" not in {n["id"] for n in doc["norms"]}


def test_unanswered_or_stale_reviews_write_nothing(school) -> None:
    deployment, folder = school
    client = signed_in(deployment, CUSTODIAN_TOKEN)
    target = folder / REVIEWED
    target.unlink(missing_ok=True)
    page = client.get("/custodian/policy/review").text
    r = client.post("/custodian/policy/review", data=review_form(page, **{"action-K2.1": "confirm"}))
    assert r.status_code == 422 and "K3.1" in r.text and not target.exists()
    r = client.post("/custodian/policy/review", data=review_form(page, **{"action-K2.1": "edit", "action-K3.1": "drop"}))
    assert r.status_code == 422 and "at least one column" in r.text and not target.exists()
    r = client.post("/custodian/policy/review", data=review_form(page, **{"action-K2.1": "confirm", "action-K3.1": "drop",
                                                                   "draft_sha256": "0" * 64}))
    assert r.status_code == 409 and not target.exists()


def test_no_draft_or_an_unreadable_one_is_said_plainly(tmp_path) -> None:
    from types import SimpleNamespace

    from pimento.config import settings_from_dict
    from pimento.errors import PolicyError
    from pimento.service.policy_review import load_draft, reviewed_path

    assert load_draft(SimpleNamespace(settings=settings_from_dict({}))) is None
    (tmp_path / "bad.yaml").write_text("norms: [unclosed", encoding="utf-8")
    bad = SimpleNamespace(settings=settings_from_dict({"policy": {"draft": "bad.yaml"}}, base_dir=str(tmp_path)))
    with pytest.raises(PolicyError, match="bad.yaml is not YAML"):
        load_draft(bad)
    missing = SimpleNamespace(settings=settings_from_dict({"policy": {"draft": "gone.yaml"}}, base_dir=str(tmp_path)))
    with pytest.raises(PolicyError, match="cannot be read"):
        load_draft(missing)
    assert reviewed_path(tmp_path / "p.draft.yaml").name == "p.draft.reviewed.yaml"
