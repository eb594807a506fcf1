"""The synthesizer reads a Spark deployment (a local Spark session started by the test).

Outside CI, a machine without pyspark or Java skips these tests with the reason; under
``CI=true`` they fail instead (tests/spark_support.py).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _checks import violations  # noqa: E402
from spark_support import SPARK_MARKS  # noqa: E402

from pimento.demo.hospital import create_demo  # noqa: E402
from pimento.engines.database import load_database  # noqa: E402
from pimento.synth import synthesize  # noqa: E402
from pimento.synth._rows import read_table  # noqa: E402
from pimento.synth._types import coerce  # noqa: E402

pytestmark = SPARK_MARKS


@pytest.fixture(scope="module")
def deployments(tmp_path_factory):
    from pimento.engines.spark_engine import write_spark_deployment

    base = tmp_path_factory.mktemp("synth-spark")
    duck = base / "duck" / "hospital.duckdb"
    create_demo(duck, patients=60, seed=0)
    spark_folder = write_spark_deployment(duck, base / "spark")
    duck_db, spark_db = load_database(str(duck)), load_database(str(spark_folder))
    assert spark_db.engine.name == "spark"
    yield duck_db, spark_db
    spark_db.engine.close()
    duck_db.engine.close()


def _rows(engine, catalog, table):
    data = read_table(engine, catalog, table)
    cols = [coerce(data[c.name], c.type) for c in catalog.table(table).columns]
    n = len(cols[0].values) if cols else 0
    return Counter(tuple(None if col.null[i] else str(col.values[i]) for col in cols) for i in range(n))


def test_the_synthesizer_reads_the_same_rows_from_spark_as_from_duckdb(deployments):
    duck_db, spark_db = deployments
    for table in ("Patient", "Visit", "Prescription", "Employee", "StudyPatient"):
        want = _rows(duck_db.engine, duck_db.catalog, table)
        got = _rows(spark_db.engine, spark_db.catalog, table)
        assert got == want and sum(want.values()) > 0, table


@pytest.mark.slow
def test_a_synthetic_copy_of_a_spark_deployment_keeps_every_constraint(deployments, tmp_path):
    _, spark_db = deployments
    declared = spark_db.settings.synth
    out = tmp_path / "syn.duckdb"
    result = synthesize(
        spark_db.engine, spark_db.catalog, out, "1.6", "1e-6", root="Patient", seed=0,
        link_context=declared.link_context, public_values=declared.public_values, _noise_seed=5,
    )
    try:
        assert result.rows["Patient"] > 20 and result.rows["Visit"] > 0 and result.rows["Prescription"] > 0
        assert violations(str(out), spark_db.catalog) == []
    finally:
        result.engine.close()


def test_the_engine_counts_the_models_on_spark_as_in_memory(deployments):
    from test_engine_counts import CAPS, _compare_all_models, _state_before_fit

    _, spark_db = deployments
    state = _state_before_fit(spark_db.engine, spark_db.catalog, spark_db.settings.synth, caps=CAPS)
    in_engine = _compare_all_models(state, spark_db.engine)
    # Spark does not type dates and integers here: models with such columns are counted in memory.
    assert {"Employee", "Supervises", "CareTeamMember"} <= set(in_engine), in_engine
