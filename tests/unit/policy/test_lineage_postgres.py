"""Lineage and enforcement on PostgreSQL with quoted mixed-case names.

PostgreSQL folds unquoted names to lower case, so a table created as ``"Patient"`` is named
``Patient`` and only ``"Patient"`` names it. Lineage gave sqlglot the catalog's names unquoted,
which it folded to ``patient``: a query naming ``"Name"`` of ``"Patient"`` could not be resolved
("Column 'Name' could not be resolved"), so CI mode refused every such query.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.postgres

psycopg = pytest.importorskip("psycopg")

from pg_support import fresh_database  # noqa: E402

PATIENTS = [(1, "Ann", 30), (2, "Bob", 40), (3, "Cy", 50)]
VISITS = [(10, 1, "flu"), (11, 1, "cold"), (12, 3, "flu")]

POLICY = {
    "version": 1,
    "name": "mixed-case",
    "grounding": {
        "principals": {"patient": {"relation": "Patient", "key": "PatientId"}},
        "subject_principal": "patient",
        "roles": {"any_patient": {"principal": "patient"}},
        "data_types": {
            "name": {"locations": [{"relation": "Patient", "attribute": "Name"}]},
            "reason": {"locations": [{"relation": "Visit", "attribute": "Reason"}]},
            "ids": {"locations": [{"relation": "Patient", "attribute": "PatientId"}, {"relation": "Visit", "attribute": "PatientId"}]},
        },
        "purposes": {"care": {"values": ["care"]}},
    },
    "norms": [{"id": "P1", "sign": "permit", "data": ["name", "reason", "ids"], "purpose": "care"}],
}


@pytest.fixture(scope="module")
def engine():
    from pimento.engines.postgres_engine import PostgresEngine

    with fresh_database("pimento_lineage") as dsn:
        with psycopg.connect(dsn, autocommit=True) as con:
            con.execute('CREATE TABLE "Patient" ("PatientId" INTEGER PRIMARY KEY, "Name" TEXT, age INTEGER)')
            con.execute('CREATE TABLE "Visit" (id INTEGER PRIMARY KEY, "PatientId" INTEGER REFERENCES "Patient"("PatientId"), '
                        '"Reason" TEXT)')
            for row in PATIENTS:
                con.execute('INSERT INTO "Patient" VALUES (%s, %s, %s)', row)
            for row in VISITS:
                con.execute('INSERT INTO "Visit" VALUES (%s, %s, %s)', row)
        eng = PostgresEngine(dsn)
        try:
            yield eng
        finally:
            eng.close()


def test_lineage_resolves_quoted_mixed_case_names(engine):
    from pimento.policy.lineage import analyze_query

    catalog = engine.introspect()
    assert {t.name for t in catalog.tables} == {"Patient", "Visit"}
    q = analyze_query('SELECT p."Name", age FROM "Patient" p WHERE "PatientId" = 1', catalog, dialect="postgres")
    assert q.referenced == {"Patient": frozenset({"Name", "age", "PatientId"})}
    assert q.returned == (("Name", frozenset({("Patient", "Name")})), ("age", frozenset({("Patient", "age")})))
    # the table named by itself, and a join through the mixed-case key
    q = analyze_query('SELECT "Patient"."Name", v."Reason" FROM "Patient" JOIN "Visit" v ON v."PatientId" = "Patient"."PatientId"',
                      catalog, dialect="postgres")
    assert q.referenced == {"Patient": frozenset({"Name", "PatientId"}), "Visit": frozenset({"Reason", "PatientId"})}
    # as on the engine, an unquoted name folds to lower case: "Name" is not name
    from pimento.errors import SqlError

    with pytest.raises(SqlError, match="cannot be resolved"):
        analyze_query('SELECT Name FROM "Patient"', catalog, dialect="postgres")


def test_ci_answers_on_quoted_mixed_case_names(engine):
    from pimento.policy import Enforcer, compile_policy
    from pimento.policy.model import policy_from_dict

    catalog = engine.introspect()
    compiled = compile_policy(policy_from_dict(POLICY), catalog, engine)
    enforcer = Enforcer(compiled, engine, catalog)
    care = enforcer.context("patient:1", "patient:2", "care")
    auth = enforcer.authorize(care, 'SELECT "Name", age FROM "Patient" ORDER BY "PatientId"')
    # the name is permitted for care, the age is in no norm: withheld
    assert list(auth.rows) == [(name, None) for _, name, _ in PATIENTS]
    joined = enforcer.authorize(
        care, 'SELECT p."Name", v."Reason" FROM "Visit" v JOIN "Patient" p ON p."PatientId" = v."PatientId" ORDER BY v.id'
    )
    names = dict((pid, name) for pid, name, _ in PATIENTS)
    assert list(joined.rows) == [(names[pid], reason) for _, pid, reason in VISITS]


def test_lineage_and_ci_answers_on_hostile_mixed_case_names():
    """Quotes, spaces, keywords, non-ASCII letters and mixed case in one PostgreSQL table."""
    from pimento.engines.postgres_engine import PostgresEngine
    from pimento.policy import Enforcer, compile_policy
    from pimento.policy.lineage import analyze_query
    from pimento.policy.model import policy_from_dict

    table = 'We"ird Table'
    policy = {
        "version": 1,
        "name": "hostile-mixed-case",
        "grounding": {
            "principals": {"customer": {"relation": table, "key": "Id"}},
            "subject_principal": "customer",
            "roles": {"any_customer": {"principal": "customer"}},
            "data_types": {"region": {"locations": [{"relation": table, "attribute": "Select"}]}},
            "purposes": {"care": {"values": ["care"]}},
        },
        "norms": [{"id": "P1", "sign": "permit", "data": ["region"], "purpose": "care"}],
    }
    with fresh_database("pimento_hostile") as dsn:
        with psycopg.connect(dsn, autocommit=True) as con:
            con.execute('CREATE TABLE "We""ird Table" ("Id" INTEGER PRIMARY KEY, "Select" TEXT, "Naïve Col" INTEGER)')
            con.execute('INSERT INTO "We""ird Table" VALUES (1, \'north\', 5), (2, \'south\', 7)')
        engine = PostgresEngine(dsn)
        try:
            catalog = engine.introspect()
            sql = 'SELECT t."Select", "Naïve Col" FROM "We""ird Table" AS t WHERE t."Id" > 0'
            q = analyze_query(sql, catalog, dialect="postgres")
            assert q.referenced == {table: frozenset({"Select", "Naïve Col", "Id"})}
            assert [name for name, _ in q.returned] == ["Select", "Naïve Col"]
            enforcer = Enforcer(compile_policy(policy_from_dict(policy), catalog, engine), engine, catalog)
            care = enforcer.context("customer:1", "customer:2", "care")
            rows = enforcer.authorize(care, 'SELECT "Select", "Naïve Col" FROM "We""ird Table" ORDER BY "Select"').rows
            assert list(rows) == [("north", None), ("south", None)]  # the score is in no norm
        finally:
            engine.close()
