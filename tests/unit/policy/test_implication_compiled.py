"""Information implication is a step of compilation (issue 15/17 area).

A policy compiled with ``compile_policy`` alone, without ``run_checks``, used to miss the
prohibitions that functional dependencies and foreign keys imply, and the enforcer applied it
silently: a benchmark leaked 4.0% of its answers that way. Every compiled policy is now ``P+``,
and a compiled file that does not record implication (written by an older version) is refused.

The database: ``Dx(code, hiv)`` says which diagnosis codes are HIV codes (declared dependency
``Dx.code -> Dx.hiv``), ``Visit.code`` references ``Dx.code``. A norm denies HIV status
(``Dx.hiv``) to everyone; another permits clinicians the visits, ``Visit.code`` included. The
code of a visit reveals the patient's HIV status (code -> Dx row -> hiv), so it is withheld.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pimento.engines.database import load_database
from pimento.errors import PolicyError, UserError
from pimento.policy import CompiledPolicy, Enforcer, compile_policy, load_compiled_policy, policy_from_dict, run_checks

POLICY: dict[str, Any] = {
    "version": 1,
    "name": "hiv-codes",
    "grounding": {
        "principals": {"staff": {"relation": "Staff", "key": "sid"}, "patient": {"relation": "Patient", "key": "pid"}},
        "subject_principal": "patient",
        "roles": {"clinician": {"principal": "staff", "where": "role = 'clinician'"}},
        "data_types": {
            "visit": {"locations": [{"relation": "Visit", "attribute": a} for a in ("vid", "pid", "code", "day")]},
            "hiv_status": {"locations": [{"relation": "Dx", "attribute": "hiv"}]},
        },
        "purposes": {"care": {"values": ["care"]}},
        "dependencies": ["Dx.code -> Dx.hiv"],
    },
    "norms": [
        {"id": "P", "sign": "permit", "sender": "clinician", "recipient": "clinician", "data": ["visit"], "purpose": "care"},
        {"id": "D", "sign": "deny", "data": ["hiv_status"]},
    ],
}
SQL = "SELECT vid, pid, code, day FROM Visit ORDER BY vid"
CONTEXT = "sender=staff:1,recipient=staff:1,purpose=care"


def _database(path: Path, visit_1_code: str) -> Path:
    """A DuckDB file; ``visit_1_code`` is patient 1's visit code (B20: an HIV code, Z00: not)."""
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE Staff (sid INTEGER PRIMARY KEY, role TEXT)")
    con.execute("CREATE TABLE Patient (pid INTEGER PRIMARY KEY, name TEXT)")
    con.execute("CREATE TABLE Dx (code TEXT PRIMARY KEY, hiv TEXT)")
    con.execute("CREATE TABLE Visit (vid INTEGER PRIMARY KEY, pid INTEGER REFERENCES Patient(pid), "
                "code TEXT REFERENCES Dx(code), day TEXT)")
    con.execute("INSERT INTO Staff VALUES (1, 'clinician')")
    con.execute("INSERT INTO Patient VALUES (1, 'Ann'), (2, 'Bob')")
    con.execute("INSERT INTO Dx VALUES ('B20', 'positive'), ('Z00', 'negative')")
    con.execute("INSERT INTO Visit VALUES (1, 1, ?, 'mon'), (2, 2, 'Z00', 'tue')", [visit_1_code])
    con.close()
    return path


def _compiled_file(db: Path, out: Path) -> Path:
    """The policy compiled with ``compile_policy`` alone (no ``run_checks``), written as JSON."""
    database = load_database(db)
    try:
        compiled = compile_policy(policy_from_dict(POLICY), database.catalog, database.engine)
    finally:
        database.close()
    out.write_text(json.dumps(compiled.to_dict()), encoding="utf-8")
    return out


def _authorize(db: Path, compiled: CompiledPolicy) -> tuple[tuple[Any, ...], ...]:
    database = load_database(db)
    try:
        enforcer = Enforcer(compiled, database.engine, database.catalog)
        return enforcer.authorize(enforcer.context("staff:1", "staff:1", "care"), SQL).rows
    finally:
        database.close()


def _session_rows(db: Path, compiled_path: Path) -> tuple[tuple[Any, ...], ...]:
    from policy_config import configure_policy

    from pimento.release.session import Session

    configure_policy(db, compiled_path)
    with Session(db) as session:
        return session.release_sql(SQL, mode="ci", context=CONTEXT).rows


def test_compile_policy_alone_withholds_the_column_that_reveals_a_prohibited_value(tmp_path) -> None:
    """(a) compile_policy without run_checks, enforced through the Python API: Visit.code is withheld."""
    db = _database(tmp_path / "h.duckdb", "B20")
    database = load_database(db)
    try:
        compiled = compile_policy(policy_from_dict(POLICY), database.catalog, database.engine)
    finally:
        database.close()
    assert _authorize(db, compiled) == ((1, 1, None, "mon"), (2, 2, None, "tue"))
    implied = {(i["norm"], i["location"]) for i in compiled.implication or []}
    assert implied == {("D", "Dx.code"), ("D", "Visit.code")}
    # the same through the analyst's Session (the deployment's compiled file, CI mode)
    rows = _session_rows(db, _compiled_file(db, tmp_path / "compiled.json"))
    assert [r[2] for r in rows] == [None, None] and [r[3] for r in rows] == ["mon", "tue"]


def test_neighbours_differing_in_the_prohibited_fact_get_the_same_answer(tmp_path) -> None:
    """(c) Two databases that differ only in whether patient 1's visit has an HIV code: the same output."""
    answers = []
    for code in ("B20", "Z00"):
        folder = tmp_path / code
        folder.mkdir()
        db = _database(folder / "h.duckdb", code)
        answers.append(_session_rows(db, _compiled_file(db, folder / "compiled.json")))
    assert answers[0] == answers[1]
    assert answers[0] == ((1, 1, None, "mon"), (2, 2, None, "tue"))


def test_run_checks_reports_implication_without_applying_it_twice(tmp_path) -> None:
    db = _database(tmp_path / "h.duckdb", "B20")
    database = load_database(db)
    try:
        policy = policy_from_dict(POLICY)
        compiled = compile_policy(policy, database.catalog, database.engine)
        checked = run_checks(compiled, database.catalog, database.engine, policy=policy)
    finally:
        database.close()
    assert checked.checks["information_implication"] == compiled.implication == checked.implication
    assert len(checked.checks["information_implication"]) == 2
    assert checked.locations == compiled.locations and checked.norm_locations == compiled.norm_locations
    # round trip: the JSON records it, and reloading keeps it
    again = CompiledPolicy.from_dict(json.loads(json.dumps(checked.to_dict())))
    assert again.implication == checked.implication


def _old_file(tmp_path: Path, db: Path, *, checked: bool) -> Path:
    """A compiled file as an older version wrote it: no ``implication`` entry; ``checked``: the
    checks' report is in it (``pimento policy compile`` ran them, and they applied implication)."""
    data = json.loads(_compiled_file(db, tmp_path / "new.json").read_text(encoding="utf-8"))
    data.pop("implication", None)
    if checked:
        data["checks"] = {"information_implication": [{"norm": "D", "location": "Visit.code"}]}
    else:  # compile_policy alone: implication missing from the views too
        for norm, ids in data["norm_locations"].items():
            data["norm_locations"][norm] = [i for i in ids if data["locations"][i].get("implied_by") is None]
        data["locations"] = {k: v for k, v in data["locations"].items() if v.get("implied_by") is None}
    out = tmp_path / ("old_checked.json" if checked else "old.json")
    out.write_text(json.dumps(data), encoding="utf-8")
    return out


def test_an_old_compiled_file_without_implication_is_refused(tmp_path) -> None:
    """(b) An old file that does not record implication is refused with a clear error, everywhere it is loaded."""
    db = _database(tmp_path / "h.duckdb", "B20")
    old = _old_file(tmp_path, db, checked=False)
    with pytest.raises(PolicyError, match="information implication") as err:
        load_compiled_policy(old)
    assert isinstance(err.value, UserError) and "pimento policy compile" in (err.value.hint or "")
    compiled = CompiledPolicy.from_dict(json.loads(old.read_text(encoding="utf-8")))
    database = load_database(db)
    try:
        with pytest.raises(PolicyError, match="information implication"):
            Enforcer(compiled, database.engine, database.catalog)
    finally:
        database.close()
    with pytest.raises(PolicyError, match="information implication"):
        _session_rows(db, old)


def test_an_old_file_written_by_policy_compile_records_implication_and_is_accepted(tmp_path) -> None:
    db = _database(tmp_path / "h.duckdb", "B20")
    compiled = load_compiled_policy(_old_file(tmp_path, db, checked=True))
    assert list(compiled.implication or ()) == [{"norm": "D", "location": "Visit.code"}]
    assert _authorize(db, compiled) == ((1, 1, None, "mon"), (2, 2, None, "tue"))

