"""The analyst's view of the schema: GET /v1/catalog, the schema on the ask page, and the OpenAPI document.

The catalog is the public schema (tables, columns, keys, which relations are private, the
custodian's declarations): the same bytes on two neighbouring databases, and behind an analyst key.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neighbours import Clinic, clinics, few_examples, neighbours, run_pair
from service_support import CUSTODIAN_TOKEN, TESTCLIENT_WARNING

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)

#: Declarations of every kind the catalog reports, so that each is compared on D and D'.
CONFIG = """
[privacy]
public = ["Prescription"]
root = "Patient"

[[constraints.functional_dependencies]]
lhs = "Visit.visit_id"
rhs = "Visit.diagnosis"

[synth]
public_values = ["Visit.diagnosis"]
link_context = ["Patient.birth_year"]
caps = {Visit = 4}
"""


def _catalog_bytes(path: Path, _rng) -> tuple[int, bytes]:
    """GET /v1/catalog on a fresh service over ``path``: the status and the exact bytes of the body."""
    from fastapi.testclient import TestClient

    from pimento.service.app import ServiceOptions, create_app
    from pimento.service.deployment import Deployment

    deployment = Deployment(path)
    _entry, key = deployment.add_key("ann")
    client = TestClient(create_app(deployment, ServiceOptions(rate=1000, burst=1000)), raise_server_exceptions=False)
    response = client.get("/v1/catalog", headers={"Authorization": f"Bearer {key}"})
    return response.status_code, response.content


def _assert_same_bytes(d: Clinic, d_prime: Clinic, workdir: Path, what: str) -> bytes:
    (status, a), (status_prime, b) = run_pair(_catalog_bytes, d, d_prime, workdir, config=CONFIG)
    assert status == status_prime == 200, (status, a[:300])
    assert a == b, f"the catalog differs between neighbours ({what}):\nD:  {a!r}\nD': {b!r}"
    return a


def test_the_catalog_is_the_same_bytes_on_neighbouring_databases(tmp_path):
    patients = tuple((i, f"P{i}", 1950 + i) for i in range(1, 4))
    d = Clinic({"Patient": patients, "Visit": ((100, 1, "flu"), (101, 2, "hiv")), "Prescription": ((1000, 100, "insulin"),)})
    for what, d_prime in (("a visit added", d.with_row("Visit", (102, 3, "hiv"))),
                          ("a patient removed", d.without_row("Patient", (3, "P3", 1953))),
                          ("an empty database", Clinic({}))):
        body = _assert_same_bytes(d, d_prime, tmp_path / what.replace(" ", "-"), what)
    import json

    data = json.loads(body)
    assert [t["name"] for t in data["tables"]] == ["Patient", "Prescription", "Visit"]
    assert {t["name"]: t["private"] for t in data["tables"]} == {"Patient": True, "Prescription": False, "Visit": True}
    assert data["declared"] == {"root": "Patient", "public_values": ["Visit.diagnosis"], "link_context": ["Patient.birth_year"],
                                "fan_out_caps": {"Visit": 4}}
    assert {"table": "Visit", "lhs": ["visit_id"], "rhs": ["diagnosis"]} in data["functional_dependencies"]
    assert not re.search(rb"P\d|flu|hiv|insulin|195\d", body), "a value of the private rows is in the catalog"


@pytest.mark.slow
@few_examples(3)
@given(data=st.data())
def test_the_catalog_is_the_same_bytes_on_random_neighbours(tmp_path_factory, data):
    d = data.draw(clinics())
    what, d_prime = data.draw(neighbours(d))
    _assert_same_bytes(d, d_prime, tmp_path_factory.mktemp("catalog"), what)


def test_the_catalog_needs_an_analyst_key(client_for, analyst_key, served):
    _entry, _key, headers = analyst_key
    client = client_for()
    for sent in ({}, {"Authorization": "Bearer pmk_00000000_nope"}, {"Authorization": "Basic abc"}):
        r = client.get("/v1/catalog", headers=sent)
        assert r.status_code == 401 and r.json()["error"]["type"] == "Unauthorized" and r.headers["www-authenticate"] == "Bearer"
    # The custodian token is not an analyst key.
    assert client.get("/v1/catalog", headers={"Authorization": f"Bearer {CUSTODIAN_TOKEN}"}).status_code == 401
    r = client.get("/v1/catalog", headers=headers)
    assert r.status_code == 200
    data = r.json()
    assert [t["name"] for t in data["tables"]] == list(served.catalog.table_names)
    assert {t["name"] for t in data["tables"] if t["private"]} == set(served.catalog.private_tables)
    assert set(data) == {"tables", "foreign_keys", "functional_dependencies", "declared"}
    assert str(served.location) not in r.text  # the custodian's file is not the analyst's business


def test_the_ask_page_shows_the_schema(client_for, analyst_key, served):
    from test_web import sign_in

    _entry, key, _headers = analyst_key
    client = client_for()
    sign_in(client, key)
    page = client.get("/ask").text
    section = page[page.index('id="catalog"'):]
    for table in served.catalog.tables:
        row = section[section.index(f'id="catalog-{table.name}"'):]
        row = row[:row.index("</tr>")]
        assert ("private</span>" if table.private else "public</span>") in row, (table.name, row)
        assert all(f"<code>{c.name}</code>" in row for c in table.columns), row


def test_openapi_declares_the_bearer_schemes_and_the_catalogs_shape(client_for):
    spec = client_for().get("/openapi.json").json()
    schemes = spec["components"]["securitySchemes"]
    assert schemes["AnalystKey"] == {"type": "http", "scheme": "bearer", "description": schemes["AnalystKey"]["description"]}
    assert schemes["CustodianToken"]["scheme"] == "bearer"
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            want = {"analyst": "AnalystKey", "custodian": "CustodianToken"}.get(operation["tags"][0])
            assert operation.get("security") == ([{want: []}] if want else None), (method, path)
    catalog = spec["paths"]["/v1/catalog"]["get"]
    assert catalog["responses"]["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/CatalogResponse"}
    table = spec["components"]["schemas"]["CatalogTable"]
    assert {"name", "private", "private_reason", "primary_key", "columns"} <= set(table["required"])


def test_no_docs_pages_that_load_scripts_from_elsewhere(client_for):
    """FastAPI's /docs and /redoc pull their scripts from a CDN (blank offline, third-party code on this
    origin): /docs is the service's own rendering of /openapi.json, with no script (issue 28;
    test_analyst_view.py checks what it lists), and /redoc sends there."""
    client = client_for()
    for path in ("/docs", "/redoc"):
        r = client.get(path)
        assert r.status_code == 200 and "<script" not in r.text and 'href="/openapi.json"' in r.text
    assert client.get("/openapi.json").status_code == 200


def test_the_databases_comments_are_not_in_the_public_catalog(tmp_path):
    """``COMMENT ON`` text is the custodian's (it may quote example values): the catalog an analyst sees leaves it out."""
    import duckdb

    from pimento.config import Settings
    from pimento.engines import open_engine
    from pimento.service.deployment import public_catalog

    path = tmp_path / "c.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE Patient (id INTEGER PRIMARY KEY, name VARCHAR)")
    con.execute("COMMENT ON TABLE Patient IS 'one row per patient, e.g. Ana Baker'")
    con.execute("COMMENT ON COLUMN Patient.name IS 'full name, e.g. Ana Baker'")
    con.close()
    engine = open_engine(str(path))
    catalog = engine.introspect()
    engine.close()
    assert catalog.table("Patient").column("name").comment  # read from the database
    assert "Ana Baker" not in repr(public_catalog(catalog, Settings()))
