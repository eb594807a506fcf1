"""``pimento policy compile/show/explain`` and ``pimento authorize``: the analyst's answer holds
the authorized result only; the diagnostics are an audited custodian tool."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from pimento.cli.app import app
from policy_config import configure_policy
from pimento.engines.database import load_database
from pimento.mechanisms import Ledger
from pimento.policy import CompiledPolicy, Enforcer

runner = CliRunner()

#: The keys of the analyst's JSON answer: public inputs and the authorized result, nothing else.
ANALYST_KEYS = {"context", "policy", "sql", "columns", "rows"}


@pytest.fixture(scope="module")
def compiled_path(hospital_path, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("compiled") / "compiled.json"
    res = runner.invoke(app, ["policy", "compile", "example:hospital_hipaa", "--db", str(hospital_path),
                              "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    return out, json.loads(res.stdout)


def _authorize(db: Path, compiled: Path, sender: str, recipient: str, purpose: str, sql: str, *extra: str):
    configure_policy(db, compiled)
    return runner.invoke(app, ["authorize", "--db", str(db), "--sender", sender,
                               "--recipient", recipient, "--purpose", purpose, "--sql", sql, *extra])


def test_authorize_takes_no_policy_of_the_callers(hospital_path, compiled_path, tmp_path) -> None:
    """The policy is the custodian's: --policy and --config are gone, and without [policy] compiled it refuses."""
    out, _ = compiled_path
    for flag in ("--policy", "--config"):
        res = runner.invoke(app, ["authorize", "--db", str(hospital_path), flag, str(out), "--sender", "employee:1",
                                  "--recipient", "employee:2", "--purpose", "treatment", "--sql", "SELECT 1"])
        assert res.exit_code == 2 and "No such option" in res.output
    copy = tmp_path / "h"
    shutil.copytree(hospital_path.parent, copy)
    toml = copy / "pimento.toml"
    toml.write_text(toml.read_text(encoding="utf-8").split("\n[policy]\n")[0], encoding="utf-8")
    res = runner.invoke(app, ["authorize", "--db", str(copy / hospital_path.name), "--sender", "employee:1",
                              "--recipient", "employee:2", "--purpose", "treatment", "--sql", "SELECT 1"])
    assert res.exit_code == 2 and "no contextual-integrity policy is configured" in res.output


def test_compile_show_authorize(hospital_path, compiled_path) -> None:
    out, report = compiled_path
    res = runner.invoke(app, ["policy", "compile", "--help"])
    assert "Custodian tool: shows private data" in " ".join(res.stdout.split())
    with load_database(hospital_path) as database:
        with Ledger.for_database(str(database.location), database.settings) as ledger:
            assert any(r.get("tool") == "policy compile" for r in ledger.audit_rows())
    assert report["checks"]["coverage"]["ok"]
    assert any(i["location"] == "Visit.diagnosis" for i in report["checks"]["information_implication"])
    res = runner.invoke(app, ["policy", "show", str(out), "--norm", "N1"])
    assert res.exit_code == 0 and "WITH RECURSIVE" in res.stdout
    w = report["checks"]["satisfiability"]["witnesses"]["N3"]
    res = _authorize(hospital_path, out, f"employee:{w['sender']}", f"researcher:{w['recipient']}", "research",
                     "SELECT pat_id, name FROM Patient", "--json")
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert set(payload) == ANALYST_KEYS
    assert payload["policy"] == "hospital-hipaa" and payload["sql"] == "SELECT pat_id, name FROM Patient"
    assert payload["rows"] and all(r[1] is None for r in payload["rows"])
    # the option that listed prohibited values with their row keys is gone from the analyst's tool
    res = _authorize(hospital_path, out, f"employee:{w['sender']}", f"researcher:{w['recipient']}", "research",
                     "SELECT pat_id FROM Patient", "--cells", "5")
    assert res.exit_code == 2 and "No such option" in res.output


def _with_more_hiv_visits(src: Path, dst: Path, study: list[int], others: list[int]) -> int:
    """A copy of the demo hospital with HIV visits added: for study patients (their diagnosis is
    prohibited to the researcher by N4 through implication) and for patients outside the study."""
    shutil.copytree(src.parent, dst)
    con = duckdb.connect(str(dst / src.name))
    try:
        top, attending = con.execute("SELECT MAX(visit_id), MIN(attending_id) FROM Visit").fetchone()
        added = study[:3] + others[:4]
        for i, pat in enumerate(added):
            con.execute("INSERT INTO Visit VALUES (?, ?, ?, DATE '2023-05-01', 'HIV disease', 'follow-up')",
                        [top + 1 + i, pat, attending])
        con.execute("CHECKPOINT")  # the file alone holds the rows (no WAL beside it)
    finally:
        con.close()
    return len(added)


def test_analyst_output_is_identical_on_databases_differing_in_prohibited_cells(hospital_path, compiled_path,
                                                                                 tmp_path) -> None:
    """Finding 4 (issue 18): a researcher whose authorized answer was 0 also received "N4 deny 60",
    the hospital-wide number of HIV visits. Neighbour test: D' has more HIV visits, all of whose
    referenced cells are prohibited to this researcher; every byte the analyst receives, JSON and
    text, is the same on D and D', while the custodian's explanation does see the difference."""
    out, report = compiled_path
    w = report["checks"]["satisfiability"]["witnesses"]["N3"]
    with load_database(hospital_path) as db:
        study = [r[0] for r in db.engine.execute(
            "SELECT p.pat_id FROM Study s JOIN StudyPatient p USING (study_id) WHERE s.approved AND s.researcher_id = ? "
            "ORDER BY 1", [int(w["recipient"])]).rows]
        others = [r[0] for r in db.engine.execute(
            "SELECT pat_id FROM Patient WHERE pat_id NOT IN (SELECT pat_id FROM StudyPatient) ORDER BY 1").rows]
    assert study and others
    shutil.copytree(hospital_path.parent, tmp_path / "d")  # the custodian's tool writes to the ledger beside it
    d1 = tmp_path / "d" / hospital_path.name
    added = _with_more_hiv_visits(hospital_path, tmp_path / "neighbour", study, others)
    d2 = tmp_path / "neighbour" / hospital_path.name
    ctx = (f"employee:{w['sender']}", f"researcher:{w['recipient']}", "research")
    for sql in ("SELECT COUNT(*) FROM Visit WHERE diagnosis IN "
                "(SELECT diagnosis FROM DxCategory WHERE hivstatus = 'positive')",
                "SELECT diagnosis, COUNT(*) AS n FROM Visit GROUP BY diagnosis ORDER BY diagnosis NULLS FIRST"):
        for extra in (["--json"], []):
            a = _authorize(d1, out, *ctx, sql, *extra)
            b = _authorize(d2, out, *ctx, sql, *extra)
            assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
            assert a.stdout == b.stdout
            for word in ("N4", "N3", "deny", "decided", "prohibited"):
                assert word not in a.stdout
        payload = json.loads(_authorize(hospital_path, out, *ctx, sql, "--json").stdout)
        assert set(payload) == ANALYST_KEYS
    # the Python object the analyst API returns: equal values, nothing but public inputs and rows
    compiled = CompiledPolicy.from_dict(json.loads(out.read_text()))
    got = []
    for path in (d1, d2):
        with load_database(path) as database:
            enforcer = Enforcer(compiled, database.engine, database.catalog)
            got.append(enforcer.authorize(enforcer.context(*ctx), "SELECT diagnosis FROM Visit ORDER BY diagnosis"))
    assert got[0] == got[1]
    assert {f.name for f in dataclasses.fields(got[0])} == {"context", "policy", "sql", "columns", "rows"}
    first = json.loads(_authorize(hospital_path, out, *ctx, "SELECT COUNT(*) FROM Visit WHERE diagnosis IN "
                                  "(SELECT diagnosis FROM DxCategory WHERE hivstatus = 'positive')", "--json").stdout)
    assert first["rows"] == [[0]]
    # the difference is real: the custodian's tool counts the added prohibited cells
    sql = "SELECT diagnosis FROM Visit"
    explain = [json.loads(runner.invoke(app, ["policy", "explain", "--db", str(db_), "--policy", str(out),
                                              "--sender", ctx[0], "--recipient", ctx[1], "--purpose", ctx[2],
                                              "--sql", sql, "--json"]).stdout) for db_ in (d1, d2)]
    denied = [sum(d["cells"] for d in e["decided"] if d["norm"] == "N4" and d["attribute"] == "diagnosis")
              for e in explain]
    assert denied[1] == denied[0] + added  # N4 denies HIV diagnoses to everyone outside treatment


def test_explain_is_a_custodian_tool_and_is_audited(hospital_path, compiled_path, tmp_path) -> None:
    out, report = compiled_path
    copy = tmp_path / "h"
    shutil.copytree(hospital_path.parent, copy)
    db = copy / hospital_path.name
    res = runner.invoke(app, ["policy", "explain", "--help"])
    assert res.exit_code == 0 and "Custodian tool: shows private data" in " ".join(res.stdout.split())
    with load_database(db) as database:
        location, settings = str(database.location), database.settings
    with Ledger.for_database(location, settings) as ledger:
        before = len(ledger.audit_rows())
    w = report["checks"]["satisfiability"]["witnesses"]["N1"]
    args = ["policy", "explain", "--db", str(db), "--policy", str(out), "--sender", f"employee:{w['sender']}",
            "--recipient", f"employee:{w['recipient']}", "--purpose", "treatment", "--sql",
            "SELECT visit_id, diagnosis FROM Visit", "--cells", "3"]
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert payload["custodian_only"] is True
    assert {d["sign"] for d in payload["decided"]} >= {"permit"} and len(payload["cells"]) == 3
    assert all({"value", "permitted_by", "prohibited_by", "failed_closed_by"} <= set(c) for c in payload["cells"])
    res = runner.invoke(app, args)
    assert res.exit_code == 0 and "custodian tool" in res.output and "Decisions per column" in res.stdout
    with Ledger.for_database(location, settings) as ledger:
        rows = ledger.audit_rows()
    added = rows[before:] if before else rows
    assert len(added) == 2
    assert all(r.get("kind") == "custodian" and r.get("tool") == "policy explain" for r in added), added
    assert added[0]["details"]["sql"] == "SELECT visit_id, diagnosis FROM Visit"
    assert added[0]["details"]["recipient"] == f"employee:{w['recipient']}"


def test_errors_are_one_line(hospital_path, compiled_path, tmp_path) -> None:
    out, _ = compiled_path
    res = _authorize(hospital_path, out, "employee:1", "employee:2", "marketing", "SELECT 1")
    assert res.exit_code == 2
    assert "unknown purpose 'marketing'" in res.output and "Traceback" not in res.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ngrounding: {}\nnorms: []\n")
    res = runner.invoke(app, ["policy", "compile", str(bad), "--db", str(hospital_path)])
    assert res.exit_code == 2 and "Traceback" not in res.output
