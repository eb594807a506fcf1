"""Every declared constraint holds on the synthetic output (demo hospital and five Spider databases)."""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pytest

from pimento.engines import open_engine
from pimento.synth import META_TABLE, synthesize

sys.path.insert(0, str(Path(__file__).parent))
from _checks import violations  # noqa: E402

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared"
SPIDER = SHARED / "data" / "spider" / "dev" / "database"

FIVE = [
    ("world_1", "country"),
    ("car_1", "countries"),
    ("orchestra", "conductor"),
    ("dog_kennels", "Owners"),
    ("student_transcripts_tracking", "Students"),
]


@pytest.mark.spider
@pytest.mark.slow
@pytest.mark.parametrize("name,root", FIVE)
def test_spider_output_keeps_every_constraint(tmp_path, name, root):
    path = SPIDER / name / f"{name}.sqlite"
    if not path.is_file():
        pytest.skip(f"Spider database {name} not found under ../shared/data/spider (read-only shared data)")
    engine = open_engine(str(path))
    catalog = engine.introspect()
    out = tmp_path / "syn.duckdb"
    result = synthesize(engine, catalog, out, "2", "1e-6", root=root, seed=3, _noise_seed=11)
    assert violations(str(out), catalog) == []
    # Same tables, same columns, same declared keys.
    syn_catalog = result.engine.introspect()
    for t in catalog.tables:
        st = syn_catalog.table(t.name)
        assert st.column_names == t.column_names
        assert tuple(st.primary_key) == tuple(t.primary_key)
    result.engine.close()


DEMO_A = (
    "SELECT COUNT(DISTINCT P.pat_id) FROM Prescription P JOIN Employee E ON P.prescriber_id = E.employee_id "
    "WHERE P.medication = ? AND E.specialty = ?"
)
DEMO_B = (
    "SELECT COUNT(DISTINCT M.pat_id) FROM MedicationOrders M JOIN Visit V ON M.visit_id = V.visit_id "
    "JOIN Employee E ON V.attending_id = E.employee_id WHERE M.medication = ? AND E.specialty = ?"
)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    hospital = pytest.importorskip("pimento.demo.hospital", reason="the demo generator is not available")
    from pimento.engines.database import load_database

    folder = tmp_path_factory.mktemp("demo")
    hospital.create_demo(folder / "h.duckdb", patients=400, seed=2)
    db = load_database(folder / "h.duckdb")
    out = folder / "syn.duckdb"
    result = synthesize(
        db.engine, db.catalog, out, "40", "1e-6", root=db.settings.privacy.root, seed=5,
        link_context=["Employee.role", "Employee.specialty"], _noise_seed=7,
    )
    yield db, result, out
    result.engine.close()


@pytest.mark.slow
def test_demo_output_keeps_every_constraint(demo):
    db, _, out = demo
    assert violations(str(out), db.catalog) == []


@pytest.mark.slow
def test_demo_formulations_agree_on_synthetic(demo):
    db, result, out = demo
    con = duckdb.connect(str(out), read_only=True)
    pairs = con.execute("SELECT DISTINCT P.medication, E.specialty FROM Prescription P JOIN Employee E ON P.prescriber_id = E.employee_id WHERE E.specialty IS NOT NULL").fetchall()
    assert pairs, "the synthetic database has no prescriptions by specialists"
    for med, spec in pairs:
        a = con.execute(DEMO_A, [med, spec]).fetchone()[0]
        b = con.execute(DEMO_B, [med, spec]).fetchone()[0]
        assert a == b, (med, spec, a, b)
    con.close()


@pytest.mark.slow
def test_demo_metadata_records_the_spend(demo):
    _, result, out = demo
    row = result.engine.execute(f"SELECT epsilon, delta, root, seed, source_fingerprint FROM {META_TABLE}").rows[0]
    assert row[:4] == ("40", "1/1000000", "Patient", 5)
    assert len(row[4]) == 64
