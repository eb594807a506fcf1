"""Table and column names with quotes, spaces, keywords and non-ASCII letters, end to end.

Identifiers are quoted by one function (``pimento.sql.quote``); before it, the synthesizer built
``f'"{c}"'`` without escaping, so a name with a double quote in it broke every read and the DDL.
"""

from __future__ import annotations

import random
import sqlite3

import duckdb
import pytest

from pimento.engines import open_engine
from pimento.sql.quote import quote_identifier, quote_identifiers
from pimento.synth import synthesize

ROOT = 'we"ird table'
CHILD = "Örders 2"
HOSTILE = [ROOT, CHILD, "select", "naïve col", "c id", "order", 'a "quoted" name', "semi;colon --", "日本"]


@pytest.mark.parametrize("dialect", ["duckdb", "sqlite", "postgres", "spark"])
@pytest.mark.parametrize("name", HOSTILE)
def test_quote_identifier_round_trips_through_sqlglot(name, dialect):
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(f"SELECT {quote_identifier(name, dialect)} FROM {quote_identifier(name, dialect)}", read=dialect)
    assert [c.name for c in tree.expressions] == [name]
    assert tree.find(exp.Table).name == name


@pytest.mark.parametrize("name", HOSTILE)
def test_quote_identifier_names_the_table_in_duckdb_and_sqlite(name):
    con = duckdb.connect()
    con.execute(f"CREATE TABLE {quote_identifier(name)} ({quote_identifier(name)} INTEGER, x INTEGER)")
    con.execute(f"INSERT INTO {quote_identifier(name)} ({quote_identifiers([name, 'x'])}) VALUES (1, 2)")
    assert con.execute("SELECT table_name FROM duckdb_tables()").fetchall() == [(name,)]
    lite = sqlite3.connect(":memory:")
    lite.execute(f"CREATE TABLE {quote_identifier(name, 'sqlite')} ({quote_identifier(name, 'sqlite')} INTEGER)")
    assert lite.execute("SELECT name FROM sqlite_master").fetchall() == [(name,)]
    assert [r[1] for r in lite.execute(f"PRAGMA table_info({quote_identifier(name, 'sqlite')})")] == [name]


def _rows(n: int = 300) -> tuple[list[tuple], list[tuple]]:
    rng = random.Random(1)
    root = [(i, rng.choice(["north", "south"]), i % 3) for i in range(n)]
    child = [(j, j % n, rng.choice(["a", "b"])) for j in range(2 * n)]
    return root, child


def _duckdb_source(path, n: int = 300) -> None:
    root, child = _rows(n)
    con = duckdb.connect(str(path))
    con.execute('CREATE TABLE "we""ird table" (id INTEGER PRIMARY KEY, "select" VARCHAR NOT NULL, "naïve col" INTEGER)')
    con.execute('CREATE TABLE "Örders 2" ("order" INTEGER PRIMARY KEY, "c id" INTEGER NOT NULL REFERENCES "we""ird table"(id), "group" VARCHAR)')
    con.executemany('INSERT INTO "we""ird table" VALUES (?, ?, ?)', root)
    con.executemany('INSERT INTO "Örders 2" VALUES (?, ?, ?)', child)
    con.close()


def _sqlite_source(path, n: int = 300) -> None:
    root, child = _rows(n)
    con = sqlite3.connect(str(path))
    con.execute('CREATE TABLE "we""ird table" (id INTEGER PRIMARY KEY, "select" TEXT NOT NULL, "naïve col" INTEGER)')
    con.execute('CREATE TABLE "Örders 2" ("order" INTEGER PRIMARY KEY, "c id" INTEGER NOT NULL REFERENCES "we""ird table"(id), "group" TEXT)')
    con.executemany('INSERT INTO "we""ird table" VALUES (?, ?, ?)', root)
    con.executemany('INSERT INTO "Örders 2" VALUES (?, ?, ?)', child)
    con.commit()
    con.close()


@pytest.mark.parametrize("kind", ["duckdb", "sqlite"])
def test_synth_copies_hostile_names(tmp_path, kind):
    """Reads (every table, a declared public value set), the generated DDL (SQLite source: the
    DDL comes from the catalog) and the inserts all name the tables and columns exactly."""
    src = tmp_path / ("src.duckdb" if kind == "duckdb" else "src.sqlite")
    (_duckdb_source if kind == "duckdb" else _sqlite_source)(src)
    engine = open_engine(str(src), read_only=True)
    catalog = engine.introspect()
    out = tmp_path / "syn.duckdb"
    result = synthesize(
        engine, catalog, out, "4", "1e-6", root=ROOT, seed=1, public_values=[f"{ROOT}.select"], _noise_seed=5,
    )
    result.engine.close()
    engine.close()
    con = duckdb.connect(str(out), read_only=True)
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert {ROOT, CHILD} <= tables
        cols = [r[0] for r in con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index", [ROOT]).fetchall()]
        assert cols == ["id", "select", "naïve col"]
        n_root = con.execute(f"SELECT COUNT(*) FROM {quote_identifier(ROOT)}").fetchone()[0]
        assert n_root > 0
        # The declared public value set was read through the quoted names: only real values.
        values = {r[0] for r in con.execute(f'SELECT DISTINCT "select" FROM {quote_identifier(ROOT)}').fetchall()}
        assert values <= {"north", "south"} and values
        # The foreign key holds in the copy (the child's key column was named correctly).
        dangling = con.execute(
            f'SELECT COUNT(*) FROM {quote_identifier(CHILD)} o LEFT JOIN {quote_identifier(ROOT)} r ON o."c id" = r.id WHERE r.id IS NULL'
        ).fetchone()[0]
        assert dangling == 0
    finally:
        con.close()


@pytest.fixture
def shop(tmp_path):
    path = tmp_path / "shop.duckdb"
    _duckdb_source(path)
    (tmp_path / "pimento.toml").write_text('[ledger]\nepsilon_cap = "5"\n')
    return path


@pytest.mark.parametrize(
    "sql",
    [
        'SELECT COUNT(*) FROM "we""ird table"',
        'SELECT COUNT(*) FROM "we""ird table" WHERE "naïve col" = 1',
        'SELECT COUNT(*) FROM "Örders 2" o JOIN "we""ird table" c ON o."c id" = c.id',
    ],
)
def test_dp_release_on_hostile_table_names(shop, sql):
    from pimento.mechanisms.samplers import fixed_noise_for_tests
    from pimento.release.session import Session

    with fixed_noise_for_tests(random.Random(0)), Session(shop, analyst="ann") as s:
        answer = s.release_sql(sql, epsilon="0.5", delta="1e-6")
    assert answer.to_dict()["value"] is not None


def test_dp_release_filters_on_a_keyword_column(shop):
    from pimento.mechanisms.samplers import fixed_noise_for_tests
    from pimento.release.session import Session

    with fixed_noise_for_tests(random.Random(0)), Session(shop, analyst="ann") as s:
        answer = s.release_sql('SELECT COUNT(*) FROM "we""ird table" WHERE "select" = \'north\'', epsilon="0.5", delta="1e-6")
    assert answer.to_dict()["value"] is not None


# ------------------------------------------------------------------ policy and sensitivity

#: Customers in the policy and sensitivity tests (the policy checks' witness search is quadratic in them).
SMALL = 30

#: A contextual-integrity policy over the hostile schema: every SQL fragment of its grounding names
#: a table or column that must be quoted (a quote in a table name, keywords, spaces, non-ASCII).
HOSTILE_POLICY = {
    "version": 1,
    "name": "hostile",
    "grounding": {
        "principals": {"customer": {"relation": ROOT, "key": "id"}},
        "subject_principal": "customer",
        "roles": {
            "any_customer": {"principal": "customer"},
            "northern": {"principal": "customer", "where": "\"select\" = 'north'"},
        },
        "data_types": {
            "region": {"locations": [{"relation": ROOT, "attribute": "select"}]},
            "score": {"locations": [{"relation": ROOT, "attribute": "naïve col", "where": '"naïve col" > 0'}]},
            "group": {"locations": [{"relation": CHILD, "attribute": "group"}]},
        },
        "purposes": {"care": {"values": ["care"]}, "ads": {"values": ["ads"]}},
        "conditions": {
            "own": {"sql": 'SELECT id AS sender, id AS subject FROM "we""ird table"', "principals": {"sender": "customer"}},
        },
    },
    "norms": [
        {"id": "P1", "sign": "permit", "data": ["region", "score"], "purpose": "care"},
        {"id": "P2", "sign": "permit", "data": ["group"], "purpose": "care", "subject": "northern"},
        {"id": "P3", "sign": "permit", "data": ["group"], "purpose": "ads", "condition": "own"},
        {"id": "D1", "sign": "deny", "data": ["score"], "purpose": "care", "subject": "northern"},
    ],
}


@pytest.mark.parametrize("kind", ["duckdb", "sqlite"])
def test_policy_compiles_checks_and_enforces_on_hostile_names(tmp_path, kind):
    """Compile (role, condition, location and subject SQL, each probed on the engine), the four
    checks (canonical SQL, witnesses, unresolved subjects) and enforcement (lineage of a query
    over the hostile names, the rewritten CTEs) all quote every name: the answers are the
    authorized cells, counted independently here."""
    from pimento.policy import Enforcer, compile_policy, run_checks
    from pimento.policy.lineage import analyze_query
    from pimento.policy.model import policy_from_dict

    src = tmp_path / ("src.duckdb" if kind == "duckdb" else "src.sqlite")
    (_duckdb_source if kind == "duckdb" else _sqlite_source)(src, SMALL)
    root, child = _rows(SMALL)
    engine = open_engine(str(src), read_only=True)
    try:
        catalog = engine.introspect()
        policy = policy_from_dict(HOSTILE_POLICY)
        compiled = compile_policy(policy, catalog, engine)
        compiled = run_checks(compiled, catalog, engine, policy=policy)  # the checked (canonical) policy
        report = compiled.checks_report()
        assert set(report["satisfiability"]["witnesses"]) == {"P1", "P2", "P3"}
        assert report["unresolved_subjects"] == []
        enforcer = Enforcer(compiled, engine, catalog)

        sql = 'SELECT r."select", r."naïve col", o."group" FROM "Örders 2" AS o JOIN "we""ird table" AS r ON o."c id" = r.id'
        lineage = analyze_query(sql, catalog, dialect=engine.dialect)
        assert {(rel, col) for rel, cols in lineage.referenced.items() for col in cols} >= {
            (ROOT, "select"), (ROOT, "naïve col"), (CHILD, "group"), (CHILD, "c id")
        }

        care = enforcer.context("customer:1", "customer:2", "care")
        rows = enforcer.authorize(care, 'SELECT "select", "naïve col" FROM "we""ird table"').rows
        north = {i for i, region, _ in root if region == "north"}
        # region permitted everywhere; score permitted where it is > 0, except for northern subjects (D1)
        expected = [(region, score if score > 0 and i not in north else None) for i, region, score in root]

        def order(row: tuple) -> tuple:
            return row[0], row[1] is None, row[1] or 0

        assert sorted(rows, key=order) == sorted(expected, key=order)
        # the group of an order is permitted for care only when its customer is northern (P2)
        groups = enforcer.authorize(care, 'SELECT "group" FROM "Örders 2"').rows
        assert len(groups) == sum(1 for _, c, _ in child if c in north)
        # for ads, only the sender's own orders (P3, condition "own" over the hostile table)
        ads = enforcer.authorize(enforcer.context("customer:7", "customer:2", "ads"), 'SELECT "group" FROM "Örders 2"').rows
        assert sorted(r[0] for r in ads) == sorted(g for _, c, g in child if c == 7)
    finally:
        engine.close()


@pytest.mark.parametrize("kind", ["duckdb", "sqlite"])
def test_residual_sensitivity_on_hostile_names(tmp_path, kind):
    """The T_E statements of residual sensitivity (CTEs per relation, joins on the hostile key
    columns, a filter on a keyword column of a quoted table) run on both engines."""
    from fractions import Fraction

    from pimento.sensitivity.rs import residual_sensitivity
    from pimento.sql import parse_count_query

    src = tmp_path / ("src.duckdb" if kind == "duckdb" else "src.sqlite")
    (_duckdb_source if kind == "duckdb" else _sqlite_source)(src, SMALL)
    engine = open_engine(str(src), read_only=True)
    try:
        catalog = engine.introspect()
        query = parse_count_query(
            'SELECT COUNT(*) FROM "Örders 2" o JOIN "we""ird table" r ON o."c id" = r.id WHERE r."naïve col" = 1',
            catalog, dialect=engine.dialect,
        )
        result = residual_sensitivity(engine, query, catalog, 0.1)
        # every customer has exactly two orders: removing one changes the count by at most 2
        assert result.ls == 2
        assert result.rs >= Fraction(2)
        assert sorted(result.private) == ["o", "r"]
    finally:
        engine.close()
