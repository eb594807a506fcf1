"""Issue 15: subjects along foreign-key paths, context variables in conditions, the purpose
hierarchy, engine parity (DuckDB, SQLite, PostgreSQL) and the schema fingerprint."""

from __future__ import annotations

import random
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from policy_testkit import COLUMNS, CONTEXT_PURPOSES, DDL, ORDER, PLAIN_DDL, QUERIES, load, make_engine, random_norms, \
    random_rows, reference, sort_rows

from pimento.errors import PolicyError
from pimento.policy import Enforcer, compile_policy, run_checks
from pimento.policy.lineage import analyze_query

ROWS = {
    "Agent": [{"aid": 1, "kind": "a"}, {"aid": 2, "kind": "b"}],
    "Person": [{"pid": 100, "grp": "g1"}, {"pid": 101, "grp": "g2"}],
    "Code": [{"code": "c1", "flag": "y"}],
    "Rec": [{"rid": 1, "pid": 100, "val": "v1", "code": "c1"}, {"rid": 2, "pid": 101, "val": "v2", "code": None},
            {"rid": 3, "pid": None, "val": "v3", "code": None}],
    "Edge": [{"src": 1, "dst": 2}],
    "Link": [{"aid": 1, "pid": 100}, {"aid": 2, "pid": 101}],
    "Note": [{"nid": 1, "rid": 1, "txt": "n1"}, {"nid": 2, "rid": 2, "txt": "n2"}, {"nid": 3, "rid": 3, "txt": "n2"},
             {"nid": 4, "rid": None, "txt": "n2"}],
    "Tag": [{"tid": 1, "aid": 1, "pid": 100, "tag": "t1"}, {"tid": 2, "aid": 2, "pid": 101, "tag": "t2"}],
    "Consent": [{"pid": 100, "purpose": "p1"}, {"pid": 101, "purpose": "p3"}],
}


def _enforcer(norms, rows=ROWS, engine=None):
    policy = load(norms)
    engine = engine or make_engine(rows)
    catalog = engine.introspect()
    compiled = compile_policy(policy, catalog, engine)
    compiled = run_checks(compiled, catalog, engine, policy=policy, require_satisfiable=False)
    return Enforcer(compiled, engine, catalog), compiled


def _ask(enforcer, purpose, sql):
    return enforcer.authorize(enforcer.context("agent:1", "agent:2", purpose), sql).rows


def test_subject_via_foreign_key_path() -> None:
    """Note reaches its person only through Rec (grounding.subjects: via rid -> Rec.pid): a norm
    about person_g1 applies to notes of g1 records; unresolved paths (NULL rid, NULL person) fail closed."""
    enforcer, compiled = _enforcer([{"id": "P", "sign": "permit", "data": ["d_note"], "subject": "person_g1"}])
    assert "__p_s1" in compiled.locations["d_note#1"].subject_sql  # a path, not NO_SUBJECT
    assert _ask(enforcer, "p2", "SELECT nid, txt FROM Note ORDER BY nid") == ((1, "n1"),)
    enforcer, _ = _enforcer([{"id": "P", "sign": "permit", "data": ["d_note"]},
                             {"id": "D", "sign": "deny", "data": ["d_note"], "subject": "person_g1"}])
    # note 2 (person 101, g2) stays; note 1 (g1) is prohibited; notes 3, 4 (no person) fail closed
    assert _ask(enforcer, "p2", "SELECT nid, txt FROM Note ORDER BY nid") == ((None, "n2"),)  # nid: only n1 governed


def test_multi_column_subject_path_and_implication() -> None:
    enforcer, compiled = _enforcer([{"id": "P", "sign": "permit", "data": ["d_tag"], "subject": "person_g1"}])
    assert _ask(enforcer, "p2", "SELECT tag FROM Tag") == (("t1",),)
    # a prohibition of Link.pid (rows with aid > 1) extends to Tag.pid through the two-column key
    enforcer, compiled = _enforcer([{"id": "P", "sign": "permit", "data": ["d_tag"]},
                                    {"id": "D", "sign": "deny", "data": ["d_edge"]}])
    implied = {(i["norm"], i["location"]) for i in compiled.checks["information_implication"]}
    assert ("D", "Tag.pid") in implied


def test_bad_subject_path_names_the_clause() -> None:
    raw_norms = [{"id": "P", "sign": "permit", "data": ["d_note"]}]
    policy = load(raw_norms)
    bad = policy.raw
    bad["grounding"]["subjects"] = {"Note": "via (rid, txt) -> Rec.pid"}
    from pimento.policy import policy_from_dict

    engine = make_engine(ROWS)
    with pytest.raises(PolicyError, match="grounding.subjects.Note.*no foreign key"):
        compile_policy(policy_from_dict(bad), engine.introspect(), engine)


def test_purpose_hierarchy_inherits_permits_and_prohibitions() -> None:
    """p1 includes p3: a permit for p1 applies to p3, and so does a deny; not the other way round."""
    enforcer, _ = _enforcer([{"id": "P", "sign": "permit", "data": ["d_val"], "purpose": "p1"}])
    assert len(_ask(enforcer, "p3", "SELECT val FROM Rec")) == 3
    assert _ask(enforcer, "p2", "SELECT val FROM Rec") == ()
    enforcer, _ = _enforcer([{"id": "P", "sign": "permit", "data": ["d_val"], "purpose": "p3"}])
    assert _ask(enforcer, "p1", "SELECT val FROM Rec") == ()
    enforcer, _ = _enforcer([{"id": "P", "sign": "permit", "data": ["d_val"]},
                             {"id": "D", "sign": "deny", "data": ["d_val"], "purpose": "p1"}])
    assert _ask(enforcer, "p3", "SELECT val FROM Rec") == ()
    assert len(_ask(enforcer, "p2", "SELECT val FROM Rec")) == 3


def test_purpose_hierarchy_cycle_is_refused() -> None:
    policy = load([{"id": "P", "sign": "permit", "data": ["d_val"]}])
    raw = policy.raw
    raw["grounding"]["purposes"]["p3"]["includes"] = ["p1"]
    from pimento.policy import policy_from_dict

    engine = make_engine(ROWS)
    with pytest.raises(PolicyError, match="cycle"):
        compile_policy(policy_from_dict(raw), engine.introspect(), engine)


def test_condition_reads_the_context_purpose() -> None:
    """consent(subject, purpose): person 100 consented to p1 (covers p3), person 101 to p3 only."""
    enforcer, _ = _enforcer([{"id": "P", "sign": "permit", "data": ["d_val"], "condition": "consent"}])
    assert sort_rows(_ask(enforcer, "p1", "SELECT val FROM Rec")) == [("v1",)]
    assert sort_rows(_ask(enforcer, "p3", "SELECT val FROM Rec")) == [("v1",), ("v2",)]
    assert _ask(enforcer, "p2", "SELECT val FROM Rec") == ()


def _sqlite_copy(rows, path: Path):
    con = sqlite3.connect(path)
    for rel in ORDER:
        con.execute(DDL[rel])
        cols = COLUMNS[rel]
        con.executemany(f'INSERT INTO "{rel}" VALUES ({", ".join("?" for _ in cols)})',
                        [[r[c] for c in cols] for r in rows[rel]])
    con.commit()
    con.close()
    from pimento.engines.sqlite_engine import SQLiteEngine

    return SQLiteEngine(str(path))


def _parity(engine, rows, seed: int) -> None:
    rng = random.Random(seed)
    norms = random_norms(rng)
    policy = load(norms)
    catalog = engine.introspect()
    compiled = compile_policy(policy, catalog, engine)
    compiled = run_checks(compiled, catalog, engine, policy=policy, require_satisfiable=False)
    enforcer = Enforcer(compiled, engine, catalog)
    ref = reference(policy)
    aids = [a["aid"] for a in rows["Agent"]]
    for _ in range(4):
        s, r, purpose = str(rng.choice(aids)), str(rng.choice(aids)), rng.choice(CONTEXT_PURPOSES)
        sql = rng.choice([q for q in QUERIES if "DATE" not in q])
        ctx = enforcer.context(f"agent:{s}", f"agent:{r}", purpose)
        query = analyze_query(sql, catalog, dialect=engine.dialect)
        wanted = {(t, c) for t, cols in query.referenced.items() for c in (cols or compiled.tables[t]["columns"])}
        assert enforcer.authorized_cells(ctx, sql) == ref.authorized_cells(rows, ("agent", s), ("agent", r), purpose, wanted)
        expected = ref.answer(rows, PLAIN_DDL, sql, ("agent", s), ("agent", r), purpose, query.referenced)
        got = [tuple(None if v is None else str(v) for v in row) for row in enforcer.authorize(ctx, sql).rows]
        assert sort_rows(got) == sort_rows([tuple(None if v is None else str(v) for v in row) for row in expected])
        enforcer.explain(ctx, sql, cells=5)  # the custodian's diagnostics run on every engine too


@pytest.mark.parametrize("seed", range(6))
def test_sqlite_compiles_and_authorizes_like_the_reference(tmp_path, seed) -> None:
    """`authorize` on SQLite failed with `no such function: bool_or`; now the same SQL runs there."""
    rows = random_rows(random.Random(1000 + seed))
    _parity(_sqlite_copy(rows, tmp_path / "db.sqlite"), rows, seed)


def test_postgres_compiles_and_authorizes_like_the_reference() -> None:
    from pg_support import admin_dsn, with_dbname

    dsn = admin_dsn()
    import psycopg

    from pimento.engines.postgres_engine import PostgresEngine

    name = f"pimento_policy_{random.randrange(10**9)}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        rows = random_rows(random.Random(7))
        with psycopg.connect(with_dbname(dsn, name), autocommit=True) as con:
            for rel in ORDER:
                con.execute(DDL[rel].replace("INTEGER PRIMARY KEY", "INTEGER PRIMARY KEY"))
                cols = COLUMNS[rel]
                for r in rows[rel]:
                    con.execute(f'INSERT INTO "{rel}" VALUES ({", ".join("%s" for _ in cols)})', [r[c] for c in cols])
        engine = PostgresEngine(with_dbname(dsn, name))
        try:
            for seed in range(3):
                _parity(engine, rows, seed)
        finally:
            engine.close()
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_policy_compiled_for_another_database_is_refused(tmp_path) -> None:
    enforcer, compiled = _enforcer([{"id": "P", "sign": "permit", "data": ["d_val"]}])
    other = make_engine(ROWS)
    other.execute("ALTER TABLE Code ADD COLUMN extra TEXT")
    with pytest.raises(PolicyError, match="different database"):
        Enforcer(compiled, other, other.introspect())
    # the same schema in another engine is the same database (a SQLite original, its DuckDB copy)
    sqlite_engine = _sqlite_copy(ROWS, tmp_path / "db.sqlite")
    again = Enforcer(compiled, sqlite_engine, sqlite_engine.introspect())
    ctx = again.context("agent:1", "agent:2", "p2")
    assert sort_rows(again.authorize(ctx, "SELECT val FROM Rec").rows) == \
        sort_rows(enforcer.authorize(ctx, "SELECT val FROM Rec").rows)
    with pytest.raises(PolicyError, match="no schema fingerprint"):
        Enforcer(replace(compiled, fingerprint=""), enforcer.engine, enforcer.catalog)


def test_checks_report_progress() -> None:
    policy = load([{"id": "P", "sign": "permit", "data": ["d_val"]}, {"id": "Q", "sign": "permit", "data": ["d_code"]}])
    engine = make_engine(ROWS)
    catalog = engine.introspect()
    compiled = compile_policy(policy, catalog, engine)
    lines: list[str] = []
    compiled = run_checks(compiled, catalog, engine, policy=policy, progress=lines.append)
    assert any("satisfiability" in x and "P (1/2)" in x for x in lines)
    assert any("Q (2/2)" in x for x in lines)
