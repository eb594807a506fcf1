"""The models' exact counts computed by the engine (one GROUP BY over the kept rows, chosen in SQL)
are the vectors counted in memory, on DuckDB and SQLite (pimento.synth._engine_counts)."""

from __future__ import annotations

import sqlite3
import sys
from fractions import Fraction
from pathlib import Path

import duckdb
import numpy as np
import pytest
import sqlglot

from pimento.demo.hospital import _DDL, create_demo
from pimento.engines import open_engine
from pimento.engines.database import load_database
from pimento.synth._budget import Accountant
from pimento.synth._engine_counts import EngineCounts
from pimento.synth._entity_rows import attr_codes, entity_row_index, raw_attr
from pimento.synth._rank import P, RowHash
from pimento.synth._state import start
from pimento.synth._units import unit_forest
from pimento.synth.api import PASSES, synthesize
from pimento.synth.passes import run_passes
from pimento.synth.passes.fit_models import MODEL_ROWS_PER_UNIT, context_attributes, model_code_names, model_codes

BEFORE_FIT = PASSES[: [p.__name__ for p in PASSES].index("fit_models")]
#: Caps above 1, so that the per-unit thinning of the models has rows to choose from.
CAPS = {"Visit": 4, "MedicationOrders": 3, "TreatingRelationship": 3}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo hospital (60 patients) in DuckDB and the same rows in SQLite."""
    base = tmp_path_factory.mktemp("engine-counts")
    duck = base / "hospital.duckdb"
    create_demo(duck, patients=60, seed=0)
    db = load_database(str(duck))
    lite = base / "hospital.sqlite"
    con = sqlite3.connect(lite)
    for table, ddl in _DDL.items():
        con.execute(ddl)
        rows = db.engine.execute(f'SELECT * FROM "{table}"').rows
        if rows:
            con.executemany(f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(rows[0]))})', [tuple(map(_plain, r)) for r in rows])
    con.commit()
    con.close()
    yield db, str(lite)
    db.engine.close()


def _plain(x):
    return x.isoformat() if hasattr(x, "isoformat") else x


def _state_before_fit(engine, catalog, declared, *, caps=None, noise_seed=5):
    forest = unit_forest(catalog, "Patient")
    acc = Accountant(Fraction(8, 5), Fraction(1, 10**6), noise_seed=noise_seed)
    state = start(
        forest, acc, seed=0, caps=caps, link_context=list(declared.link_context), public_values=list(declared.public_values),
    )
    return run_passes(state, BEFORE_FIT, engine=engine, progress=lambda *a: None)


def _marginals(codes, weights, names):
    out = {}
    for a in names:
        out[(a,)] = np.bincount(codes[a], weights=weights, minlength=64)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            out[(a, b)] = np.bincount(codes[a] * 64 + codes[b], weights=weights, minlength=64 * 64)
    return out


def _compare_all_models(state, engine):
    counter = EngineCounts(state, engine)
    in_engine = []
    for e in [t for t in state.forest.order if t in state.entities]:
        info = state.entities[e]
        info.ctx = context_attributes(state, e)
        names = model_code_names(state, e)
        model_rows = min(info.unit_rows, MODEL_ROWS_PER_UNIT)
        counted = counter.model_counts(e, names, model_rows)
        if counted is None:
            continue
        in_engine.append(e)
        mem, n_rows = model_codes(state, e, model_rows)
        codes, weights = counted
        assert weights.sum() == n_rows, e
        want = _marginals(mem, None, names)
        got = _marginals(codes, weights, names)
        for key in want:
            assert np.array_equal(want[key], got[key]), (e, key)
    return in_engine


def test_engine_and_memory_count_the_same_marginals_on_duckdb(demo):
    db, _ = demo
    state = _state_before_fit(db.engine, db.catalog, db.settings.synth, caps=CAPS)
    assert state.entities["MedicationOrders"].unit_rows == 12
    in_engine = _compare_all_models(state, db.engine)
    # Every entity of the demo is counted by the engine in DuckDB (dates and integers included).
    assert set(in_engine) == {e for e in state.entities}, in_engine


def test_engine_and_memory_count_the_same_marginals_on_sqlite(demo):
    db, lite = demo
    engine = open_engine(lite)
    try:
        state = _state_before_fit(engine, engine.introspect(), db.settings.synth, caps=CAPS)
        in_engine = _compare_all_models(state, engine)
    finally:
        engine.close()
    # SQLite does not type dates and integers: models with such columns are counted in memory.
    assert {"Employee", "Supervises", "CareTeamMember"} <= set(in_engine), in_engine


def test_engine_and_memory_count_the_same_marginals_on_postgres(demo):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from pg_support import fresh_engine

    db, _ = demo
    with fresh_engine("synth_counts") as engine:
        for table, ddl in _DDL.items():
            engine.execute(ddl)
            rows = db.engine.execute(f'SELECT * FROM "{table}"').rows
            if rows:
                engine.connection.cursor().executemany(
                    f"INSERT INTO {table} VALUES ({', '.join(['%s'] * len(rows[0]))})", [tuple(r) for r in rows]
                )
        engine.connection.commit()
        state = _state_before_fit(engine, engine.introspect(), db.settings.synth, caps=CAPS)
        in_engine = _compare_all_models(state, engine)
    # PostgreSQL types dates and integers: every model of the demo's private tables is counted by
    # the engine (the introspected catalog also makes DxCategory private: its text key is not hashed).
    demo_models = {"patient", "studypatient", "teamassignment", "treatingrelationship", "visit", "medicationorders", "employee"}
    assert demo_models | {"careteammember", "supervises"} <= set(in_engine), in_engine
    assert "dxcategory" not in in_engine


def test_in_engine_truncation_keeps_at_most_cap_rows_per_parent_the_same_rows(demo):
    db, _ = demo
    state = _state_before_fit(db.engine, db.catalog, db.settings.synth, caps={"Visit": 2, "MedicationOrders": 1})
    counter = EngineCounts(state, db.engine)
    for table, parent_cols in (("Visit", ("pat_id",)), ("MedicationOrders", ("visit_id",))):
        sql = counter.kept_rows_sql(table)
        assert sql is not None
        keys = state.rank_keys[table]
        kept = db.engine.execute(sql).rows
        # The engine keeps the rows Python keeps (same hash order), ...
        data = state.data[table]
        want = sorted(tuple(int(data[k].values[i]) for k in keys) for i in np.flatnonzero(state.valid[table]))
        assert sorted(tuple(r[: len(keys)]) for r in kept) == want
        # ... and never more than the cap per parent (checked on the engine's own rows).
        per_parent = db.engine.execute(
            f"SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM ({sql}) k JOIN \"{table}\" t USING ({', '.join(keys)}) "
            f"GROUP BY {', '.join('t.' + c for c in parent_cols)}) g"
        ).scalar()
        assert per_parent == state.caps[table] == {"Visit": 2, "MedicationOrders": 1}[table]
        real_max = db.engine.execute(f'SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM "{table}" GROUP BY {", ".join(parent_cols)}) g').scalar()
        assert real_max > per_parent  # the truncation had something to cut


def test_the_thinned_model_counts_one_row_per_unit(demo):
    db, _ = demo
    state = _state_before_fit(db.engine, db.catalog, db.settings.synth, caps=CAPS)
    counter = EngineCounts(state, db.engine)
    e = "Visit"
    state.entities[e].ctx = context_attributes(state, e)
    assert state.entities[e].unit_rows > 1
    counted = counter.model_counts(e, model_code_names(state, e), 1)
    assert counted is not None
    units_with_visits = len(np.unique(state.unit[e][state.valid[e]]))
    assert counted[1].sum() == units_with_visits


@pytest.mark.parametrize("dialect", ["duckdb", "sqlite", "postgres", "spark"])
def test_the_row_hash_in_sql_is_the_numpy_hash(dialect):
    rng = np.random.default_rng(2)
    h = RowHash.draw(rng)
    a = [0, 1, -1, 7, P, P + 3, -(2**40), 2**62, 123456789]
    b = [5, -5, 0, 2**31 - 1, 9, 1, 2, -3, -(2**31)]  # an INTEGER column: products must not overflow it
    want = h.values([np.array(a), np.array(b)])
    assert want.tolist() == [h.one((x, y)) for x, y in zip(a, b)]
    assert all(0 <= v < P for v in want.tolist())
    sql = f"SELECT {h.sql(['t.a', 't.b'])} FROM t ORDER BY t.i"
    if dialect in ("postgres", "spark"):
        # No server here: the SQL must at least transpile (the engines' own tests run it).
        assert sqlglot.transpile(sql, read="duckdb", write=dialect)[0]
        return
    rows = list(zip(range(len(a)), a, b))
    if dialect == "duckdb":
        con = duckdb.connect()
        con.execute("CREATE TABLE t (i INTEGER, a BIGINT, b INTEGER)")
        con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
        got = [r[0] for r in con.execute(sql).fetchall()]
    else:
        con = sqlite3.connect(":memory:")
        con.execute("CREATE TABLE t (i INTEGER, a INTEGER, b INTEGER)")
        con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
        got = [r[0] for r in con.execute(sqlglot.transpile(sql, read="duckdb", write="sqlite")[0]).fetchall()]
    assert got == want.tolist()


def test_an_absent_extension_row_gets_a_fixed_code_not_another_units_value(demo):
    """Regression: an entity row without its 1:1 extension got, for a column whose encoding has no
    NULL code, the code of row 0 of the extension table (another unit's value)."""
    db, _ = demo
    state = _state_before_fit(db.engine, db.catalog, db.settings.synth)
    e = "MedicationOrders"
    rows = entity_row_index(state, e)
    attr = next(a for a in state.entities[e].attrs if a.kind == "col" and a.table == "Prescription" and a.encoding.keys)
    assert not attr.encoding.nullable
    # Drop some prescriptions from the entity rows (as if those orders had none).
    rows = dict(rows)
    rows["Prescription"] = rows["Prescription"].copy()
    absent = np.arange(0, len(rows["Prescription"]), 3)
    rows["Prescription"][absent] = -1
    col = state.data["Prescription"][attr.column]
    before = attr_codes(state, e, attr, rows)[absent]
    # The raw values (compared by the tie tests) of absent rows are None, not row 0's value.
    assert raw_attr(state, e, attr, rows)[0][absent].tolist() == [None] * len(absent)
    # Change the value of row 0 of Prescription (another unit's row) to another kept key.
    first = col.values[0]
    other = next(k for k in attr.encoding.keys if k != first)
    col.values[0] = other
    after = attr_codes(state, e, attr, rows)[absent]
    col.values[0] = first
    assert before.tolist() == after.tolist() == [0] * len(absent)


@pytest.mark.slow
def test_with_a_fixed_noise_seed_the_copy_is_the_same_counted_in_the_engine_or_in_memory(demo, tmp_path):
    db, _ = demo
    declared = db.settings.synth
    tables = []
    for in_engine in (True, False):
        result = synthesize(
            db.engine, db.catalog, tmp_path / f"copy-{in_engine}.duckdb", "1.6", "1e-6", root="Patient", seed=0,
            link_context=declared.link_context, public_values=declared.public_values, caps=CAPS, _noise_seed=9,
            _counts_in_engine=in_engine,
        )
        try:
            counted = result.details.get("counted_in_engine") or []
            assert (len(counted) == len([t for t in result.details["models"]])) if in_engine else not counted
            tables.append({t: sorted(map(repr, result.engine.execute(f'SELECT * FROM "{t}"').rows)) for t in result.rows})
        finally:
            result.engine.close()
    assert tables[0] == tables[1]


def _insert(con, table, rows):
    """One INSERT of many rows (DuckDB's executemany takes seconds per thousand rows)."""

    def lit(x):
        return "NULL" if x is None else str(x) if isinstance(x, int) else "'" + x.replace("'", "''") + "'"

    con.execute(f"INSERT INTO {table} VALUES " + ", ".join("(" + ", ".join(lit(x) for x in r) + ")" for r in rows))


def test_a_text_column_of_numbers_is_counted_in_the_engine_as_in_memory(tmp_path):
    """The type test makes a TEXT column of numbers an integer column; the engine codes it as
    ``_types.coerce`` does (canonical decimals only; '021' and 'n/a' are NULL, '2.5' rounds)."""
    path = tmp_path / "codes.duckdb"
    rng = np.random.default_rng(4)
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE P (id INTEGER PRIMARY KEY, code TEXT, size INTEGER, tag TEXT)")
    con.execute("CREATE TABLE C (cid INTEGER PRIMARY KEY, pid INTEGER REFERENCES P (id), kind TEXT)")
    special = ["021", "n/a", "2.5", "3.5", "-4", "7\n", None]
    codes = [special[i] if i < len(special) else str(int(x)) for i, x in enumerate(rng.integers(0, 30, 3000))]
    codes = [special[i % len(special)] if i % 50 == 0 else c for i, c in enumerate(codes)]
    # 40% of the sizes on 16 values, the rest spread over +-999: the fine level covers too few
    # units, so the coarse level (3 significant digits: buckets one unit wide here) is chosen.
    sizes = np.where(rng.random(3000) < 0.4, rng.integers(0, 16, 3000), rng.integers(-999, 1000, 3000)).tolist()
    _insert(con, "P", [(i, codes[i], sizes[i], "ab"[i % 2]) for i in range(3000)])
    _insert(con, "C", [(j, int(rng.integers(0, 3000)), "xyz"[j % 3]) for j in range(6000)])
    con.close()
    engine = open_engine(str(path))
    try:
        catalog = engine.introspect()
        forest = unit_forest(catalog, "P")
        acc = Accountant(Fraction(8), Fraction(1, 10**6), noise_seed=2)
        state = start(forest, acc, seed=0, caps={"C": 3}, link_context=[], public_values=[])
        state = run_passes(state, BEFORE_FIT, engine=engine, progress=lambda *a: None)
        assert state.column_family("P", "code") == "integer"
        assert state.enc[("P", "size")].level == "coarse"  # 1,800 values for 3,000 units: 3 significant digits
        in_engine = _compare_all_models(state, engine)
    finally:
        engine.close()
    assert set(in_engine) == {"P", "C"}, in_engine
