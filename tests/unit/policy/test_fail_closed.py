"""Finding 5 of issue 18: a norm that cannot be evaluated on a cell denies it (fail closed).

A deny norm that tests the data subject's role never applied to cells whose subject cannot
be resolved (a column with no subject, a NULL subject), while the compile report said it
governed the column; with a broad permit, an analyst received the cells the deny norm was
written to prohibit (310 on the demo hospital). Here the same scenario on the small
test-kit schema, where ``Code`` has no column referencing the subject principal ``Person``.
"""

from __future__ import annotations

from typing import Any

from policy_testkit import PLAIN_DDL, load, make_engine, reference, sort_rows

from pimento.policy import Enforcer, compile_policy, run_checks


def _rows() -> dict[str, list[dict[str, Any]]]:
    return {
        "Agent": [{"aid": 1, "kind": "a"}],
        "Person": [{"pid": 100, "grp": "g1"}, {"pid": 101, "grp": "g2"}],
        "Code": [{"code": f"c{i}", "flag": "x"} for i in range(1, 6)] + [{"code": "c6", "flag": "y"}],
        "Rec": [
            {"rid": 1, "pid": 100, "val": "v1", "code": "c6"},
            {"rid": 2, "pid": None, "val": "v2", "code": "c6"},  # a record whose subject is not known
            {"rid": 3, "pid": 101, "val": "v3", "code": None},
        ],
        "Edge": [],
        "Link": [],
    }


#: A broad permit, and a prohibition of the flag "about any person" (a subject-role test).
NORMS = [
    {"id": "P", "sign": "permit", "data": ["d_flag", "d_val", "d_code"]},
    {"id": "D", "sign": "deny", "subject": "person_all", "data": ["d_flag"]},
]


def _setup(norms: list[dict[str, Any]], rows: dict[str, list[dict[str, Any]]] | None = None):
    rows = rows or _rows()
    policy = load(norms)
    engine = make_engine(rows)
    catalog = engine.introspect()
    compiled = compile_policy(policy, catalog, engine)
    compiled = run_checks(compiled, catalog, engine, policy=policy)
    report = compiled.checks_report()
    return rows, policy, compiled, report, Enforcer(compiled, engine, catalog)


def test_deny_on_subjectless_cells_fails_closed() -> None:
    rows, policy, compiled, report, enforcer = _setup(NORMS)
    ctx = enforcer.context("agent:1", "agent:1", "p1")
    got = enforcer.authorize(ctx, "SELECT code, flag FROM Code ORDER BY code")
    # D prohibits every 'x' flag (and, by the FD, the codes that determine it); before the fix
    # all 5 flags 'x' (and their codes) reached the analyst through P
    assert got.rows == ()  # was 5 rows (NULL, 'x'): the prohibited flags
    assert not any(a == "flag" and rel == "Code" for rel, _, a in enforcer.authorized_cells(ctx, "SELECT flag FROM Code"))
    # the custodian's diagnostics name the norm that failed closed
    flags = [d for d in enforcer.decisions(ctx, "SELECT flag FROM Code") if d["value"] == "x"]
    assert len(flags) == 5 and all(d["failed_closed_by"] == ["D"] and not d["authorized"] for d in flags)
    # the reference evaluator agrees
    expected = reference(policy).answer(rows, PLAIN_DDL, "SELECT code, flag FROM Code ORDER BY code",
                                        ("agent", "1"), ("agent", "1"), "p1", {"Code": frozenset({"code", "flag"})})
    assert sort_rows(got.rows) == sort_rows(expected)


def test_compile_report_names_the_cells_a_norm_cannot_evaluate() -> None:
    _, _, _, report, _ = _setup(NORMS)
    entries = {(u["norm"], u["location"]): u for u in report["unresolved_subjects"]}
    assert entries[("D", "Code.flag")]["cells"] == 5 and entries[("D", "Code.flag")]["sign"] == "deny"
    assert "fail closed" in entries[("D", "Code.flag")]["effect"]
    assert entries[("D", "Code.code")]["cells"] == 5  # implied by the FD Code.code -> Code.flag
    # Rec.code is implied through the FK too, but no Rec row with a flagged code lacks a subject
    assert ("D", "Rec.code") not in entries
    assert not any(u["norm"] == "P" for u in report["unresolved_subjects"])  # P does not test the subject


def test_deny_on_a_null_subject_fails_closed_and_is_reported() -> None:
    norms = [{"id": "P", "sign": "permit", "data": ["d_val"]},
             {"id": "D", "sign": "deny", "data": ["d_val"], "condition": {"subject_role": "person_g1"}}]
    rows, policy, _, report, enforcer = _setup(norms)
    got = enforcer.authorize(enforcer.context("agent:1", "agent:1", "p2"), "SELECT val FROM Rec ORDER BY val")
    # D: "val may not flow unless the subject is in g1": v1 (g1) flows, v3 (g2) does not, v2
    # (its subject unknown) cannot be evaluated and does not flow either (it used to)
    assert got.rows == (("v1",),)
    assert [(u["norm"], u["location"], u["cells"]) for u in report["unresolved_subjects"]] == [("D", "Rec.val", 1)]
    expected = reference(policy).answer(rows, PLAIN_DDL, "SELECT val FROM Rec ORDER BY val", ("agent", "1"),
                                        ("agent", "1"), "p2", {"Rec": frozenset({"val"})})
    assert sort_rows(got.rows) == sort_rows(expected)


def test_permit_that_cannot_be_evaluated_does_not_permit() -> None:
    """Three-valued: NOT(unknown) is unknown, so 'permit unless the subject is in g1' does not
    permit a cell whose subject is unknown (two-valued logic made it NOT FALSE = TRUE)."""
    norms = [{"id": "P", "sign": "permit", "data": ["d_val"], "condition": {"not": {"subject_role": "person_g1"}}}]
    rows, policy, _, report, enforcer = _setup(norms)
    got = enforcer.authorize(enforcer.context("agent:1", "agent:1", "p1"), "SELECT val FROM Rec ORDER BY val")
    assert got.rows == (("v3",),)
    assert [(u["norm"], u["location"], u["cells"]) for u in report["unresolved_subjects"]] == [("P", "Rec.val", 1)]
    assert reference(policy).authorized_cells(rows, ("agent", "1"), ("agent", "1"), "p1", {("Rec", "val")}) == \
        {("Rec", "3", "val")}


def test_a_deny_decided_without_the_subject_still_applies_exactly() -> None:
    """Fail closed only where the unknown subject matters: a deny whose other parts are false
    (here its purpose) does not apply, whatever the subject."""
    norms = [{"id": "P", "sign": "permit", "data": ["d_flag"]},
             {"id": "D", "sign": "deny", "subject": "person_all", "data": ["d_flag"], "purpose": "p2"}]
    _, _, _, _, enforcer = _setup(norms)
    got = enforcer.authorize(enforcer.context("agent:1", "agent:1", "p1"), "SELECT flag FROM Code WHERE flag = 'x'")
    assert len(got.rows) == 5
    got = enforcer.authorize(enforcer.context("agent:1", "agent:1", "p2"), "SELECT flag FROM Code WHERE flag = 'x'")
    assert got.rows == ()


def test_dangling_subject_is_unresolved() -> None:
    """A subject column without a foreign key can name no subject-principal row: that subject
    is unresolved, like a NULL one, in the rewrite, the provenance path and the reference."""
    from pimento.engines.duckdb_engine import DuckDBEngine
    from pimento.policy.model import policy_from_dict
    from pimento.policy.reference import RefLocation, ReferencePolicy, RefRole

    engine = DuckDBEngine(":memory:", read_only=False)
    engine.execute("CREATE TABLE Person (pid INTEGER PRIMARY KEY, grp TEXT)")
    engine.execute("CREATE TABLE Note (nid INTEGER PRIMARY KEY, who INTEGER, txt TEXT)")  # no foreign key
    engine.execute("INSERT INTO Person VALUES (100, 'g1'), (101, 'g2')")
    engine.execute("INSERT INTO Note VALUES (1, 100, 'a'), (2, 101, 'b'), (3, 999, 'c'), (4, NULL, 'd')")
    norms = [{"id": "P", "sign": "permit", "data": ["note"], "condition": {"not": {"subject_role": "g1"}}}]
    policy = policy_from_dict({
        "version": 1, "name": "dangling",
        "grounding": {
            "principals": {"person": {"relation": "Person", "key": "pid"}},
            "subject_principal": "person",
            "roles": {"g1": {"principal": "person", "where": "grp = 'g1'"}},
            "data_types": {"note": {"locations": [{"relation": "Note", "attribute": "txt", "subject": "who"}]}},
            "purposes": {"p": {"values": ["p"]}},
        },
        "norms": norms,
    })
    catalog = engine.introspect()
    compiled = compile_policy(policy, catalog, engine)
    compiled = run_checks(compiled, catalog, engine, policy=policy)
    report = compiled.checks_report()
    enforcer = Enforcer(compiled, engine, catalog)
    ctx = enforcer.context("person:100", "person:100", "p")
    sql = "SELECT txt FROM Note ORDER BY txt"
    # only note 2 (person 101, not in g1) is permitted; 999 and NULL cannot be evaluated
    assert enforcer.authorize(ctx, sql).rows == (("b",),)  # two-valued logic also gave c and d
    assert enforcer.authorized_cells(ctx, sql) == {("Note", "2", "txt")}
    assert [(u["norm"], u["location"], u["cells"]) for u in report["unresolved_subjects"]] == [("P", "Note.txt", 2)]
    ref = ReferencePolicy(
        principals={"person": ("Person", "pid")}, subject_kind="person",
        roles={"g1": RefRole("person", lambda r: r["grp"] == "g1")}, conditions={},
        data_types={"note": [RefLocation("Note", "txt", subject="who")]}, purposes={"p": ["p"]},
        norms=list(policy.norms), keys={"Person": ("pid",), "Note": ("nid",)},
        columns={"Person": ["pid", "grp"], "Note": ["nid", "who", "txt"]},
    )
    rows = {"Person": [{"pid": 100, "grp": "g1"}, {"pid": 101, "grp": "g2"}],
            "Note": [{"nid": 1, "who": 100, "txt": "a"}, {"nid": 2, "who": 101, "txt": "b"},
                     {"nid": 3, "who": 999, "txt": "c"}, {"nid": 4, "who": None, "txt": "d"}]}
    assert ref.authorized_cells(rows, ("person", "100"), ("person", "100"), "p") == {("Note", "2", "txt")}
