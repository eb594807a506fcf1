"""Runtime enforcement on the demo hospital: who sees what, exact CI-mode semantics, injection."""

from __future__ import annotations

import pytest

from pimento.errors import PolicyError, SqlError
from pimento.policy import Enforcer


@pytest.fixture(scope="module")
def enforcer(compiled, hospital):
    return Enforcer(compiled, hospital.engine, hospital.catalog)


N1_PAIRS = """
WITH RECURSIVE sup(a, b) AS (SELECT supervisor_id, supervisee_id FROM Supervises UNION
  SELECT sup.a, s.supervisee_id FROM sup JOIN Supervises s ON s.supervisor_id = sup.b)
SELECT sup.a, sup.b, COUNT(*) FILTER (WHERE d.hivstatus <> 'unknown') AS hiv, COUNT(*) AS n
FROM sup JOIN Employee e ON e.employee_id = sup.b AND e.role = 'resident'
JOIN Employee p ON p.employee_id = sup.a AND p.role = 'physician'
JOIN TreatingRelationship t ON t.employee_id = sup.a AND t.role = 'attending'
JOIN (SELECT m.employee_id, a.pat_id FROM CareTeamMember m JOIN TeamAssignment a USING (team_id)) c
  ON c.employee_id = sup.b AND c.pat_id = t.pat_id
JOIN Visit v ON v.pat_id = t.pat_id JOIN DxCategory d ON d.diagnosis = v.diagnosis
GROUP BY sup.a, sup.b ORDER BY hiv DESC, n DESC, sup.a, sup.b LIMIT 1
"""


@pytest.fixture(scope="module")
def n1(enforcer, hospital):
    """A supervising attending and a resident on the care team of patients with HIV visits."""
    a, b, hiv, _ = hospital.engine.execute(N1_PAIRS).rows[0]
    assert hiv > 0
    return enforcer.context(f"employee:{a}", f"employee:{b}", "treatment")


def _q(hospital, sql, params=()):
    return hospital.engine.execute(sql, list(params)).rows


def test_resident_sees_care_team_diagnoses_but_never_hiv(enforcer, n1, hospital) -> None:
    got = enforcer.authorize(n1, "SELECT visit_id, pat_id, diagnosis FROM Visit")
    assert got.rows, "the N1 witness context must see something"
    team = {r[0] for r in _q(hospital, "SELECT a.pat_id FROM CareTeamMember m JOIN TeamAssignment a USING (team_id) "
                                       "WHERE m.employee_id = ?", [int(n1.recipient.id)])}
    treated = {r[0] for r in _q(hospital, "SELECT pat_id FROM TreatingRelationship WHERE role = 'attending' "
                                          "AND employee_id = ?", [int(n1.sender.id)])}
    hiv = {r[0] for r in _q(hospital, "SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown'")}
    for visit_id, pat_id, diagnosis in got.rows:
        assert pat_id in team & treated
        assert diagnosis not in hiv
    assert any(d is not None for _, _, d in got.rows)


def test_unauthorized_context_sees_nothing(enforcer, hospital) -> None:
    nurse = _q(hospital, "SELECT employee_id FROM Employee WHERE role = 'nurse' LIMIT 1")[0][0]
    ctx = enforcer.context(f"employee:{nurse}", f"employee:{nurse}", "treatment")
    assert enforcer.authorize(ctx, "SELECT * FROM Visit").rows == ()
    assert enforcer.authorize(ctx, "SELECT COUNT(*) FROM Visit").rows == ((0,),)


def test_researcher_gets_study_patients_without_names(enforcer, compiled, hospital) -> None:
    w = compiled.checks["satisfiability"]["witnesses"]["N3"]
    ctx = enforcer.context(f"employee:{w['sender']}", f"researcher:{w['recipient']}", "research")
    study = {r[0] for r in _q(hospital, "SELECT p.pat_id FROM Study s JOIN StudyPatient p USING (study_id) "
                                        "WHERE s.approved AND s.researcher_id = ?", [int(w["recipient"])])}
    got = enforcer.authorize(ctx, "SELECT pat_id, name, sex FROM Patient")
    assert {r[0] for r in got.rows} == study
    assert all(r[1] is None and r[2] is not None for r in got.rows)
    wrong_purpose = enforcer.context(f"employee:{w['sender']}", f"researcher:{w['recipient']}", "treatment")
    assert enforcer.authorize(wrong_purpose, "SELECT pat_id FROM Patient").rows == ()


def test_aggregates_count_authorized_data_only(enforcer, n1) -> None:
    """Rows are visible iff a referenced cell is authorized; aggregates see authorized values only."""
    rows = enforcer.authorize(n1, "SELECT visit_id, diagnosis FROM Visit").rows
    count = enforcer.authorize(n1, "SELECT COUNT(*), COUNT(visit_id), COUNT(diagnosis) FROM Visit").rows[0]
    assert count == (len(rows), len(rows), sum(1 for _, d in rows if d is not None))
    # the witness resident has HIV visits on the care team (fixture n1): they are absent, not
    # visible with a NULL diagnosis (N4 withholds the whole row, issue 23 finding 5)
    assert count[2] == count[0]
    only_dx = enforcer.authorize(n1, "SELECT COUNT(*), COUNT(diagnosis) FROM Visit").rows[0]
    assert only_dx == (count[2], count[2])


def test_filters_on_prohibited_cells_do_not_match(enforcer, n1) -> None:
    got = enforcer.authorize(n1, "SELECT COUNT(*) FROM Visit WHERE diagnosis LIKE '%HIV%'")
    assert got.rows == ((0,),)
    got = enforcer.authorize(
        n1, "SELECT COUNT(*) FROM Visit v JOIN DxCategory d ON v.diagnosis = d.diagnosis WHERE d.hivstatus = 'positive'")
    assert got.rows == ((0,),)


def test_decisions_name_the_norms(enforcer, n1) -> None:
    sql = "SELECT diagnosis FROM Visit"
    decisions = enforcer.decisions(n1, sql, limit=None)
    assert any(d["prohibited_by"] == ["N4"] and not d["authorized"] for d in decisions)
    assert all(d["authorized"] == (bool(d["permitted_by"]) and not d["prohibited_by"]) for d in decisions)
    assert {(d["relation"], d["row_key"], d["attribute"]) for d in decisions if d["authorized"]} == \
        enforcer.authorized_cells(n1, sql)


@pytest.mark.parametrize(
    ("value", "words", "verify"),
    [
        ("employee:999999", "unknown sender 'employee:999999'", True),
        ("employee:1' OR '1'='1", "unknown sender", True),
        ("nobody:1", "unknown sender 'nobody:1'", False),
        ("nobody:1", "unknown sender 'nobody:1'", True),
        ("employee:", "has no identifier", False),
        ("", "the sender is empty", False),
        ("1", "write KIND:ID", False),
    ],
)
def test_bad_sender_is_named(enforcer, value, words, verify) -> None:
    with pytest.raises(PolicyError) as err:
        enforcer.context(value, "employee:1", "treatment", verify=verify)
    assert words in err.value.message


def test_ambiguous_bare_identifier(enforcer) -> None:
    with pytest.raises(PolicyError, match="ambiguous sender '1'"):
        enforcer.context("1", "employee:1", "treatment", verify=True)


def test_analyst_cannot_probe_who_exists(enforcer, compiled, hospital) -> None:
    """An identity is never checked against the data on the analyst's path: whether patient N
    (or employee N) exists is private. An existing and a missing id give the same answer."""
    top = _q(hospital, "SELECT MAX(pat_id) FROM Patient")[0][0]
    w = compiled.checks["satisfiability"]["witnesses"]["N3"]
    answers = []
    for pat in (top, top + 1000):
        ctx = enforcer.context(f"patient:{pat}", f"researcher:{w['recipient']}", "research")
        answers.append(enforcer.authorize(ctx, "SELECT pat_id, sex FROM Patient").to_dict()["rows"])
    assert answers[0] == answers[1] == []
    ghost = enforcer.context("employee:999999", "employee:999998", "treatment")  # holds no role: nothing
    assert enforcer.authorize(ghost, "SELECT COUNT(diagnosis) FROM Visit").rows == ((0,),)


@pytest.mark.parametrize("purpose", ["marketing", "treatment'; DROP TABLE Visit; --", "TREATMENT", "any"])
def test_unknown_purpose_is_named(enforcer, purpose) -> None:
    with pytest.raises(PolicyError) as err:
        enforcer.context("employee:1", "employee:1", purpose)
    assert repr(purpose) in err.value.message


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM Visit; DROP TABLE Visit",
        "DROP TABLE Visit",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM duckdb_tables()",
        "SELECT * FROM information_schema.tables",
        "SELECT * FROM __p_auth",
        "SELECT * FROM Visit WHERE pat_id = ?",
        "SELECT * FROM other.main.Visit",
        "SELECT * FROM NoSuchTable",
        "SELECT query('SELECT * FROM Visit')",
        "SELECT * FROM '/etc/passwd'",
        "SELECT * FROM Visit UNION ALL SELECT * FROM read_parquet('x.parquet')",
    ],
)
def test_hostile_analyst_sql_is_refused(enforcer, n1, sql) -> None:
    with pytest.raises(SqlError):
        enforcer.authorize(n1, sql)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT diagnosis FROM Visit -- ; DROP TABLE Visit",
        "SELECT diagnosis FROM Visit /* comment */ WHERE note <> 'x'' OR ''1''=''1'",
        "SELECT diagnosis FROM main.Visit",
        'SELECT "diagnosis" FROM "visit"',
        "SELECT v.diagnosis FROM (SELECT * FROM Visit) AS v",
        "WITH Visit AS (SELECT * FROM Visit) SELECT diagnosis FROM Visit",
    ],
)
def test_comments_quotes_and_aliases_stay_enforced(enforcer, n1, hospital, sql) -> None:
    allowed = {r[0] for r in enforcer.authorize(n1, "SELECT diagnosis FROM Visit").rows}
    got = {r[0] for r in enforcer.authorize(n1, sql).rows}
    assert got - {None} <= allowed  # SELECT * also shows rows whose diagnosis is NULL (prohibited)
    assert _q(hospital, "SELECT COUNT(*) FROM Visit")[0][0] > 0  # nothing was dropped


def test_context_values_are_bound_not_spliced(enforcer, n1) -> None:
    got = enforcer.explain(n1, "SELECT diagnosis FROM Visit")
    assert n1.sender.id in got.params and n1.recipient.id in got.params
    assert f"'{n1.recipient.id}'" not in got.rewritten_sql


def test_principal_kind_is_part_of_every_role_test(enforcer, compiled, hospital) -> None:
    """A ``patient:N`` sender whose id N is also an employee's holds no employee role: N3
    (workforce -> researcher of an approved study) must not apply. A role test that compares
    ids without the principal kind answers the study's patients here instead of nothing."""
    w = compiled.checks["satisfiability"]["witnesses"]["N3"]
    both = _q(hospital, "SELECT p.pat_id FROM Patient p JOIN Employee e ON e.employee_id = p.pat_id ORDER BY 1 LIMIT 1")
    assert both, "the demo hospital has an id that is both a patient's and an employee's"
    sql = "SELECT COUNT(*) FROM Patient"
    as_employee = enforcer.context(f"employee:{both[0][0]}", f"researcher:{w['recipient']}", "research")
    assert enforcer.authorize(as_employee, sql).rows[0][0] > 0  # the same id as an employee: N3 applies
    as_patient = enforcer.context(f"patient:{both[0][0]}", f"researcher:{w['recipient']}", "research")
    assert enforcer.authorize(as_patient, sql).rows == ((0,),)
    assert enforcer.authorized_cells(as_patient, sql) == set()


def test_plan_cache_distinguishes_purposes(compiled, hospital) -> None:
    """One enforcer, the same SQL, a permitted and then a forbidden purpose (and the reverse):
    the cached plan of one purpose is never used for the other."""
    w = compiled.checks["satisfiability"]["witnesses"]["N3"]
    sql = "SELECT pat_id, sex FROM Patient"
    for order in (("research", "treatment"), ("treatment", "research")):
        fresh = Enforcer(compiled, hospital.engine, hospital.catalog)
        got = {p: fresh.authorize(fresh.context(f"employee:{w['sender']}", f"researcher:{w['recipient']}", p), sql).rows
               for p in order}
        assert got["research"], "N3 permits the study's patients for research"
        assert got["treatment"] == ()
