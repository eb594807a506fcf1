"""``pimento policy compile/show`` and ``pimento authorize``."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from pimento.cli.app import app

runner = CliRunner()


def test_compile_show_authorize(hospital_path, tmp_path) -> None:
    out = tmp_path / "compiled.json"
    res = runner.invoke(app, ["policy", "compile", "example:hospital_hipaa", "--db", str(hospital_path),
                              "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["checks"]["coverage"]["ok"]
    assert any(i["location"] == "Visit.diagnosis" for i in report["checks"]["information_implication"])
    res = runner.invoke(app, ["policy", "show", str(out), "--norm", "N1"])
    assert res.exit_code == 0 and "WITH RECURSIVE" in res.stdout
    w = report["checks"]["satisfiability"]["witnesses"]["N3"]
    res = runner.invoke(app, ["authorize", "--db", str(hospital_path), "--policy", str(out),
                              "--sender", f"employee:{w['sender']}", "--recipient", f"researcher:{w['recipient']}",
                              "--purpose", "research", "--sql", "SELECT pat_id, name FROM Patient", "--json",
                              "--cells", "5"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert payload["rows"] and all(r[1] is None for r in payload["rows"])
    assert payload["returned"] == {"pat_id": ["Patient.pat_id"], "name": ["Patient.name"]}
    assert {d["norm"] for d in payload["decided"]} == {"N3"}
    assert 1 <= len(payload["cells"]) <= 5 and all(c["permitted_by"] == ["N3"] for c in payload["cells"])


def test_errors_are_one_line(hospital_path, tmp_path) -> None:
    out = tmp_path / "compiled.json"
    assert runner.invoke(app, ["policy", "compile", "example:hospital_hipaa", "--db", str(hospital_path),
                               "--out", str(out)]).exit_code == 0
    res = runner.invoke(app, ["authorize", "--db", str(hospital_path), "--policy", str(out), "--sender", "employee:1",
                              "--recipient", "employee:2", "--purpose", "marketing", "--sql", "SELECT 1"])
    assert res.exit_code == 2
    assert "unknown purpose 'marketing'" in res.output and "Traceback" not in res.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ngrounding: {}\nnorms: []\n")
    res = runner.invoke(app, ["policy", "compile", str(bad), "--db", str(hospital_path)])
    assert res.exit_code == 2 and "Traceback" not in res.output
