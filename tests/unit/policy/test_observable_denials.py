"""Issue 23, finding 5: observable denials.

The hospital policy shipped before denied HIV-related diagnosis *cells* (N4), so a researcher saw
exactly the HIV visits as visits with a NULL diagnosis. The shipped policy now withholds such rows
whole; the check (:mod:`pimento.policy.observable`) finds no observable denial in it and still finds
them in the cell-only variant; the service refuses a policy with an observable denial the custodian
has not acknowledged, and ``GET /v1/policy`` and ``pimento policy show`` list them.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import duckdb
import pytest
import yaml
from typer.testing import CliRunner

from pimento.cli.app import app
from pimento.engines.database import load_database
from pimento.errors import PolicyError
from pimento.policy import Enforcer, compile_policy, example_policy_path, load_policy
from pimento.policy.observable import observable_denials, require_acknowledged
from policy_config import configure_policy

runner = CliRunner()

#: The cell-only HIV data type the hospital policy shipped with before issue 23.
CELL_ONLY_HIV = [
    {"relation": "DxCategory", "attribute": "hivstatus", "where": "hivstatus <> 'unknown'"},
    {"relation": "Visit", "attribute": "note",
     "where": "diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR lower(note) LIKE '%hiv%'"},
    {"relation": "MedicationOrders", "attribute": "medication",
     "where": "medication IN ('dolutegravir', 'tenofovir', 'emtricitabine')"},
    {"relation": "Prescription", "attribute": "medication",
     "where": "medication IN ('dolutegravir', 'tenofovir', 'emtricitabine')"},
]
HIV_VISITS = ("SELECT visit_id FROM Visit WHERE diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') "
              "OR lower(note) LIKE '%hiv%'")


def _variant(tmp_path: Path, edit) -> Path:
    """The shipped hospital policy with its ``hiv_status`` locations changed by ``edit(locations)``."""
    data = yaml.safe_load(Path(example_policy_path()).read_text(encoding="utf-8"))
    locations = copy.deepcopy(data["grounding"]["data_types"]["hiv_status"]["locations"])
    data["grounding"]["data_types"]["hiv_status"]["locations"] = edit(locations)
    path = tmp_path / "variant.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _compile(hospital, path: Path):
    return compile_policy(load_policy(path), hospital.catalog, hospital.engine)


@pytest.fixture(scope="module")
def cell_only(hospital, tmp_path_factory):
    return _compile(hospital, _variant(tmp_path_factory.mktemp("cell_only"), lambda _locs: copy.deepcopy(CELL_ONLY_HIV)))


def test_shipped_policy_has_no_observable_denial(compiled) -> None:
    """Every filtered location of N4 is withheld on the whole row, the implied ones included."""
    assert observable_denials(compiled) == []
    assert compiled.checks["observable_denials"] == ()
    assert require_acknowledged(compiled, []) == []


def test_cell_only_denials_are_reported(cell_only) -> None:
    """The check still finds what the old shipped policy had: a visit's diagnosis withheld (by
    implication from DxCategory) while N1-N3 leave its other columns visible."""
    found = {d["id"]: d for d in observable_denials(cell_only)}
    assert {"N4:Visit.diagnosis", "N4:Visit.note", "N4:Discharge.finaldiagnosis", "N4:MedicationOrders.medication",
            "N4:Prescription.medication", "N4:DxCategory.hivstatus"} <= set(found)
    visit = found["N4:Visit.diagnosis"]
    assert visit["norm"] == "N4" and visit["location"] == "Visit.diagnosis"
    assert set(visit["visible_through"]) == {"N1", "N2", "N3"} and "visit_id" in visit["columns"]


@pytest.mark.parametrize("edit, column", [
    # one column of the visit left out of the deny: it stays visible on HIV visits
    (lambda locs: [x for x in locs if (x["relation"], x["attribute"]) != ("Visit", "visit_date")], "visit_date"),
    # one column withheld on fewer rows (diagnosis-only filter, no note): a visit whose note alone
    # mentions HIV is visible through it
    (lambda locs: [({**x, "where": "diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown')"}
                    if (x["relation"], x["attribute"]) == ("Visit", "visit_date") else x) for x in locs], "visit_date"),
])
def test_a_row_withheld_in_part_is_reported(hospital, tmp_path, edit, column) -> None:
    compiled = _compile(hospital, _variant(tmp_path, edit))
    found = {d["id"]: d for d in observable_denials(compiled)}
    assert "N4:Visit.visit_id" in found and found["N4:Visit.visit_id"]["columns"] == [column]
    assert not any(d["location"].startswith(("Discharge.", "Prescription.")) for d in found.values())


def _study(hospital, researcher: int) -> list[int]:
    return [r[0] for r in hospital.engine.execute(
        "SELECT p.pat_id FROM Study s JOIN StudyPatient p USING (study_id) WHERE s.approved AND s.researcher_id = ? "
        "ORDER BY 1", [researcher]).rows]


def _answer(path: Path, compiled, ctx: tuple[str, str, str], sql: str):
    with load_database(path) as database:
        enforcer = Enforcer(compiled, database.engine, database.catalog)
        return enforcer.authorize(enforcer.context(*ctx), sql).rows


def _with_an_hiv_visit(src: Path, dst: Path, patient: int) -> None:
    """A neighbour: one more HIV visit of a study patient, with its discharge and an order."""
    shutil.copytree(src.parent, dst)
    con = duckdb.connect(str(dst / src.name))
    try:
        visit, attending = con.execute("SELECT MAX(visit_id) + 1, MIN(attending_id) FROM Visit").fetchone()
        con.execute("INSERT INTO Visit VALUES (?, ?, ?, DATE '2023-05-01', 'HIV disease', 'follow-up')",
                    [visit, patient, attending])
        con.execute("INSERT INTO Discharge VALUES ((SELECT MAX(discharge_id) + 1 FROM Discharge), ?, ?, "
                    "'HIV disease', DATE '2023-05-03')", [visit, patient])
        con.execute("INSERT INTO MedicationOrders VALUES ((SELECT MAX(order_id) + 1 FROM MedicationOrders), ?, ?, "
                    "'aspirin', 100)", [visit, patient])
        con.execute("CHECKPOINT")
    finally:
        con.close()


NEIGHBOUR_QUERIES = (
    "SELECT visit_id, pat_id, visit_date, diagnosis FROM Visit ORDER BY visit_id",
    "SELECT discharge_id, visit_id, finaldiagnosis FROM Discharge ORDER BY discharge_id",
    "SELECT order_id, visit_id, medication FROM MedicationOrders ORDER BY order_id",
    "SELECT COUNT(*), COUNT(diagnosis) FROM Visit",
)


def test_researcher_sees_no_null_diagnosis_pattern(hospital, hospital_path, compiled, cell_only, tmp_path) -> None:
    """Under the shipped policy a researcher's visits carry no NULL diagnosis, and one more HIV visit
    (with its discharge and order) changes no byte of the answer; under the cell-only policy the
    NULL diagnoses fall exactly on the HIV visits of the study, and the neighbour shows one more."""
    w = compiled.checks["satisfiability"]["witnesses"]["N3"]
    ctx = (f"employee:{w['sender']}", f"researcher:{w['recipient']}", "research")
    study = _study(hospital, int(w["recipient"]))
    hiv = {r[0] for r in hospital.engine.execute(HIV_VISITS).rows}
    rows = _answer(hospital_path, compiled, ctx, NEIGHBOUR_QUERIES[0])
    assert rows and all(r[3] is not None for r in rows)
    assert not {r[0] for r in rows} & hiv
    old = _answer(hospital_path, cell_only, ctx, NEIGHBOUR_QUERIES[0])
    nulls = {r[0] for r in old if r[3] is None}
    study_hiv = {r[0] for r in hospital.engine.execute(
        f"SELECT visit_id FROM Visit WHERE visit_id IN ({HIV_VISITS}) AND pat_id IN ({', '.join(map(str, study))})").rows}
    assert nulls and nulls == study_hiv  # the channel the shipped policy closed
    _with_an_hiv_visit(hospital_path, tmp_path / "neighbour", study[0])
    neighbour = tmp_path / "neighbour" / hospital_path.name
    for sql in NEIGHBOUR_QUERIES:
        assert _answer(hospital_path, compiled, ctx, sql) == _answer(neighbour, compiled, ctx, sql), sql
    assert _answer(hospital_path, cell_only, ctx, NEIGHBOUR_QUERIES[0]) != _answer(neighbour, cell_only, ctx, NEIGHBOUR_QUERIES[0])


# --------------------------------------------------------------------------- acknowledgement


def test_require_acknowledged_names_the_denials_and_the_setting(cell_only) -> None:
    ids = sorted(d["id"] for d in observable_denials(cell_only))
    with pytest.raises(PolicyError) as err:
        require_acknowledged(cell_only, ids[1:])
    assert ids[0] in str(err.value) and ids[1] not in str(err.value)
    assert "acknowledge_observable_denials" in (err.value.hint or "")
    marked = require_acknowledged(cell_only, ids)
    assert [d["id"] for d in marked] == [d["id"] for d in observable_denials(cell_only)]
    assert all(d["acknowledged"] for d in marked)


@pytest.fixture
def cell_only_deployment(hospital_path, cell_only, tmp_path) -> Path:
    """A copy of the demo hospital whose pimento.toml names the cell-only compiled policy."""
    shutil.copytree(hospital_path.parent, tmp_path / "d")
    db = tmp_path / "d" / hospital_path.name
    out = tmp_path / "cell_only.json"
    out.write_text(json.dumps(cell_only.to_dict(), default=str), encoding="utf-8")
    configure_policy(db, out)
    return db


def _acknowledge(db: Path, ids: list[str]) -> None:
    toml = db.parent / "pimento.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + f"acknowledge_observable_denials = {json.dumps(ids)}\n",
                    encoding="utf-8")


def test_serve_refuses_unacknowledged_observable_denials(cell_only_deployment, cell_only, monkeypatch) -> None:
    """`pimento serve` stops before listening; the error names the denials and the setting."""
    import uvicorn

    started: list[object] = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: started.append(a))
    res = runner.invoke(app, ["serve", "--db", str(cell_only_deployment)])
    assert res.exit_code != 0 and not started
    text = " ".join(res.output.split())
    assert "N4:Visit.diagnosis" in text and "acknowledge_observable_denials" in text
    _acknowledge(cell_only_deployment, [d["id"] for d in observable_denials(cell_only)])
    res = runner.invoke(app, ["serve", "--db", str(cell_only_deployment)])
    assert res.exit_code == 0, res.output
    assert started


@pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")
def test_service_lists_observable_denials(cell_only_deployment, cell_only) -> None:
    from fastapi.testclient import TestClient

    from pimento.service.app import ServiceOptions, create_app, token_digest
    from pimento.service.deployment import Deployment

    with pytest.raises(PolicyError, match="observable denial"):
        Deployment(cell_only_deployment)
    ids = [d["id"] for d in observable_denials(cell_only)]
    _acknowledge(cell_only_deployment, ids)
    deployment = Deployment(cell_only_deployment)
    token = "t" * 40
    client = TestClient(create_app(deployment, ServiceOptions(custodian_token_sha256=token_digest(token))))
    listed = client.get("/v1/policy", headers={"Authorization": f"Bearer {token}"}).json()["observable_denials"]
    assert [d["id"] for d in listed] == ids and all(d["acknowledged"] for d in listed)
    assert {"norm", "location", "filter", "visible_through", "columns"} <= set(listed[0])


def test_policy_show_lists_observable_denials(cell_only_deployment, compiled, tmp_path) -> None:
    from pimento.config import find_settings_file, load_settings

    config = find_settings_file(cell_only_deployment)
    assert config is not None
    policy = load_settings(config).policy.compiled
    res = runner.invoke(app, ["policy", "show", str(policy), "--json", "--config", str(config)])
    assert res.exit_code == 0, res.output
    listed = json.loads(res.stdout)["observable_denials"]
    assert "N4:Visit.diagnosis" in {d["id"] for d in listed} and not any(d["acknowledged"] for d in listed)
    res = runner.invoke(app, ["policy", "show", str(policy)])
    assert res.exit_code == 0 and "N4:Visit.diagnosis" in res.stdout and "acknowledgement not checked" in " ".join(res.stdout.split())
    shipped = tmp_path / "shipped.json"
    shipped.write_text(json.dumps(compiled.to_dict(), default=str), encoding="utf-8")
    res = runner.invoke(app, ["policy", "show", str(shipped), "--json"])
    assert json.loads(res.stdout)["observable_denials"] == []
    assert "observable denials: none" in runner.invoke(app, ["policy", "show", str(shipped)]).stdout
