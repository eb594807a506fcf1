"""Issue 26, the person unit's loose ends: a SQL preview under ``[privacy] unit = "Patient"`` estimates the noise of the
mechanism the release will use (truncation or R2T, chosen on the synthetic copy), not the tuple-level RS; a grouped or
summed query is refused before anything is spent, by the preview, ``pimento sql`` and ``POST /v1/sql`` alike.

On the small clinics of test_person_release.py (patient 1 has 6 HIV visits, on the data and on the copy).
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from neighbours import cli_json, cli_text
from test_person_release import DISTINCT, HIV, clinic, deploy, left

from pimento.errors import UnsupportedQuery
from pimento.mechanisms import Budget, GlobalLaplace
from pimento.release.session import Session

GROUPED = "SELECT diagnosis, COUNT(*) FROM Visit GROUP BY diagnosis"
TESTCLIENT_WARNING = "ignore:Using `httpx` with `starlette.testclient`"


def test_the_preview_under_the_person_unit_is_the_person_mechanisms_prediction(tmp_path):
    """On the copy, HIV's 6 visits all belong to patient 1: at epsilon 1 one threshold tau = 3 minimises the predicted
    error (bias 3 + scale 3), so the preview's 95% half-width is the bias 3 plus the Laplace 95% half-width at scale 3
    (the tuple-level preview said the global Laplace's +-3 of a one-relation count)."""
    db = deploy(tmp_path, clinic(), copy=clinic(seed=1))
    before = left(db)
    with Session(db) as s:
        shown = s.preview_sql(HIV, epsilon="1")
    choice = shown["person_release"]
    assert shown["unit"] == "Patient" and choice["mechanism"] == "truncated_laplace" and choice["thresholds"] == [3], choice
    noise = GlobalLaplace(Budget.spend("1"), gs=3).half_width(Fraction(3))
    assert Fraction(str(shown["estimated_half_width_95"])) == 3 + noise
    assert shown["cost"] == {"epsilon": "1", "delta": "0"}  # the person release's cost: pure epsilon
    assert "truncated_laplace" in shown["notes"][0] and "person mechanism" in shown["notes"][0]
    assert {row["mechanism"] for row in shown["planner"]} <= {"truncated_laplace", "r2t"} and len(shown["planner"]) >= 6
    assert left(db) == before  # nothing spent


def test_count_distinct_persons_previews_the_laplace_noise_alone(tmp_path):
    db = deploy(tmp_path, clinic(), copy=clinic(seed=1))
    with Session(db) as s:
        shown = s.preview_sql(DISTINCT, epsilon="1", epsilons=())
    assert Fraction(str(shown["estimated_half_width_95"])) == GlobalLaplace(Budget.spend("1"), gs=1).half_width(Fraction(1))


def test_a_grouped_query_is_refused_by_the_preview_and_the_release_nothing_spent(tmp_path):
    db = deploy(tmp_path, clinic(), copy=clinic(seed=1))
    before = left(db)
    with Session(db) as s:
        with pytest.raises(UnsupportedQuery, match="grouped and summed queries are not supported"):
            s.preview_sql(GROUPED, epsilon="1")
        with pytest.raises(UnsupportedQuery, match="grouped and summed queries are not supported"):
            s.release_sql(GROUPED, "1")
    for args in (["sql", "--db", str(db), "--sql", GROUPED, "--epsilon", "1"], ["sql", "--db", str(db), "--sql", GROUPED, "--epsilon", "1", "--preview"]):
        out = cli_text(args, 0)
        assert out["exit_code"] != 0 and "not supported under [privacy] unit = 'Patient'" in out["stderr"], out
    assert left(db) == before


@pytest.mark.filterwarnings(TESTCLIENT_WARNING)
def test_http_refuses_a_grouped_query_under_the_person_unit_and_previews_the_person_mechanism(tmp_path):
    from fastapi.testclient import TestClient

    from pimento.service.app import ServiceOptions, create_app
    from pimento.service.deployment import Deployment, SearchSettings

    db = deploy(tmp_path, clinic(), copy=clinic(seed=1))
    deployment = Deployment(db, search=SearchSettings(rollouts=2, k=5))
    _entry, key = deployment.add_key("person-http")
    headers = {"Authorization": f"Bearer {key}"}
    before = left(db)
    with TestClient(create_app(deployment, ServiceOptions(rate=1000.0, burst=1000)), raise_server_exceptions=False) as client:
        for path in ("/v1/sql", "/v1/sql/preview"):
            refused = client.post(path, headers=headers, json={"sql": GROUPED, "epsilon": "1"})
            assert refused.status_code == 422 and refused.json()["error"]["type"] == "UnsupportedQuery", refused.text
        assert left(db) == before
        shown = client.post("/v1/sql/preview", headers=headers, json={"sql": HIV, "epsilon": "1"}).json()
        assert shown["person_release"]["mechanism"] == "truncated_laplace" and shown["unit"] == "Patient"


def test_pimento_sql_warns_with_the_person_mechanisms_prediction(tmp_path):
    """At epsilon 0.05 the person mechanism's predicted error dwarfs the copy's count of 6: the warning comes on
    stderr before the charge, and the release goes on (the CLI warns, then spends)."""
    db = deploy(tmp_path, clinic(), copy=clinic(seed=1))
    before = left(db)
    out = cli_text(["sql", "--db", str(db), "--sql", HIV, "--epsilon", "0.05"], 0)
    assert out["exit_code"] == 0 and "mostly noise" in out["stderr"], out
    assert before.epsilon - left(db).epsilon == Fraction(1, 20)
    assert cli_json(["sql", "--db", str(db), "--sql", HIV, "--epsilon", "0.05", "--preview"], 0)["noise_warning"]


def test_a_questions_preview_under_the_person_unit_is_the_person_mechanisms_prediction(tmp_path):
    """The question's preview prices the reading as the SQL preview does: the search's predicted error under the person
    unit (truncation bias plus noise, 12 here), not the tuple-level global Laplace's +-3 of a one-relation count."""
    db = deploy(tmp_path, clinic(), copy=clinic(seed=1))
    before = left(db)
    with Session(db) as s:
        seen = s.preview("How many visits have diagnosis hiv?", epsilon="1")
        shown = s.preview_sql(seen.sql, epsilon="1", epsilons=())
    assert "person-level release" in seen.outcome.result.error_basis
    assert seen.estimated_half_width() == Fraction(str(shown["estimated_half_width_95"])) > 3
    assert left(db) == before


@pytest.mark.filterwarnings(TESTCLIENT_WARNING)
def test_a_cached_person_unit_answer_is_never_refused_as_mostly_noise(tmp_path):
    """The service's check before a spend knows the key a person-unit count is stored under (its unit's mode part): the
    answer already paid for comes back free without ``accept_noise`` (before: refused 409 as mostly noise again)."""
    from fastapi.testclient import TestClient

    from pimento.release.noise_check_cache import plain_count_key
    from pimento.service.app import ServiceOptions, create_app
    from pimento.service.deployment import Deployment, SearchSettings

    db = deploy(tmp_path, clinic(), copy=clinic(seed=1))
    deployment = Deployment(db, search=SearchSettings(rollouts=2, k=5))
    entry, key = deployment.add_key("person-cached")
    headers = {"Authorization": f"Bearer {key}"}
    body = {"sql": HIV, "epsilon": "0.05"}
    with TestClient(create_app(deployment, ServiceOptions(rate=1000.0, burst=1000)), raise_server_exceptions=False) as client:
        assert client.post("/v1/sql", headers=headers, json=body).status_code == 409  # mostly noise, not accepted
        spent = client.post("/v1/sql", headers=headers, json={**body, "accept_noise": True})
        assert spent.status_code == 200 and spent.json()["cached"] is False and spent.json()["unit"] == "Patient", spent.text
        again = client.post("/v1/sql", headers=headers, json=body)
        assert again.status_code == 200 and again.json()["cached"] is True and again.json()["value"] == spent.json()["value"], again.text
    request = deployment.request(entry, sql=HIV, epsilon="0.05", delta=None)
    with deployment.ledger() as ledger:
        found = plain_count_key(request, catalog=deployment.catalog, settings=deployment.settings, ledger=ledger,
                                location=deployment.location, analyst=entry.analyst, dialect=deployment.dialect)
        assert found is not None and ledger.cached_answer(found)["charge_id"] == spent.json()["charge_id"]
