"""Differential fuzzer of the release outcome (issue 23): whether a release answers, or which error
it raises, must not depend on the private data.

For random counting queries (``tests/outcome_fuzz.py`` generates them, with every construct the
selection allow-list accepts and adversarial literals), each query that ``parse_count_query``
admits has its private computation run -- the counted SQL, and for a join its residual
sensitivity, as the noisy modes' ``measure()`` does (``pimento.release.modes.noisy.NoisyMode``) -- on DuckDB, SQLite and PostgreSQL
(``PIMENTO_PG_DSN``; skipped without it, a failure under ``CI=true``), each on:

* ``none``: no row at all (no predicate is evaluated);
* ``hit``: rows built from the query's literals, so that a row reaches every predicate, and
  adversarial rows (NULLs, extremes, Unicode);
* two random single-tuple neighbours of ``hit`` (one tuple added or removed).

The outcome ("answered" or "raised <error type>") must be the same on all of them, and, since
everything that can fail must be decided before the charge, "answered": the only admitted
failure is SQLite's missing date-part functions, refused when the statement is prepared,
whatever the data. A smaller number of the queries goes through ``Session.release_sql`` on two
neighbouring DuckDB files, where every field but the noisy value (and what is derived from it,
and the DP bound on RS, a separately charged draw) must be equal, with the noise fixed.

Seeds are fixed: a failure names its seed, and ``QueryGenerator(seed).query()`` gives it again.
On the allow-list before issue 23 this finds finding 1 (``LIKE ... ESCAPE 'é'`` answers on
``none`` and raises on ``hit`` on DuckDB).
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from neighbours import VALUE_FIELDS, differences, drop_timings, write_deployment
from outcome_fuzz import QueryGenerator, Rows, ddl, empty_database, hit_database, load, single_tuple_neighbour

from pimento.errors import SqlError, UnsupportedQuery
from pimento.mechanisms.smooth import mechanism_for
from pimento.sensitivity import residual_sensitivity
from pimento.sql import parse_count_query
from pimento.sql.allowlist import check_runs_on

#: queries generated per engine (about 40% are admitted), and passed through Session.release_sql
QUERIES = {"duckdb": 300, "sqlite": 420, "postgres": 160}
SESSION_QUERIES = 6
EPSILON, DELTA = "1", "1e-6"
BETA = mechanism_for(EPSILON, DELTA).beta_float()


# ------------------------------------------------------------------------------ engines


@pytest.fixture(scope="module")
def duckdb_engine() -> Iterator[Any]:
    from pimento.engines.duckdb_engine import DuckDBEngine

    engine = DuckDBEngine(":memory:", read_only=False, threads=1)
    for statement in ddl("duckdb"):
        engine.execute(statement)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def sqlite_engine() -> Iterator[Any]:
    from pimento.engines.sqlite_engine import SQLiteEngine

    engine = SQLiteEngine(":memory:", read_only=False)
    for statement in ddl("sqlite"):
        engine.execute(statement)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def postgres_engine() -> Iterator[Any]:
    from pg_support import fresh_engine

    with fresh_engine("pimento_fuzz") as engine:
        for statement in ddl("postgres"):
            engine.execute(statement)
        yield engine


# ------------------------------------------------------------------------------ the private computation


def private_outcome(engine: Any, catalog: Any, query: Any) -> str:
    """What ``measure()`` of a DP release does on the private data, reduced to its outcome."""
    try:
        engine.execute(query.to_sql(engine.dialect)).scalar()
        if len(query.relations) > 1:  # a single relation is released with its global sensitivity
            residual_sensitivity(engine, query, catalog, BETA, attribution=False)
    except Exception as exc:  # noqa: BLE001 - the outcome is what is compared
        return f"raised {type(exc).__name__}"
    return "answered"


def databases(seed: int, selections: dict) -> list[tuple[str, Rows]]:
    """``none``, ``hit`` and two random single-tuple neighbours of ``hit``."""
    rng = random.Random(seed)
    hit = hit_database(selections, rng)
    out = [("none", empty_database()), ("hit", hit)]
    for _ in range(2):
        out.append(single_tuple_neighbour(hit, rng))
    return out


def fuzz(engine: Any, count: int) -> dict[str, int]:
    """Run ``count`` generated queries on ``engine``; fail naming every query whose outcome varies."""
    catalog = engine.introspect()
    stats = {"generated": 0, "refused": 0, "admitted": 0}
    failures: list[str] = []
    for seed in range(count):
        sql, selections = QueryGenerator(seed).query()
        stats["generated"] += 1
        try:  # admission as the release path does it: the parser's allow-list, then the engine's dialect
            query = parse_count_query(sql, catalog)
            check_runs_on(query, engine.dialect)
        except (UnsupportedQuery, SqlError):
            stats["refused"] += 1
            continue
        stats["admitted"] += 1
        outcomes = {}
        for name, rows in databases(seed, selections):
            load(engine, rows)
            outcomes[name] = private_outcome(engine, catalog, query)
        rendered = query.to_sql(engine.dialect)
        if len(set(outcomes.values())) > 1:
            failures.append(f"seed {seed}: the outcome depends on the data {outcomes}\n    {sql}\n    ran: {ascii(rendered)}")
        elif outcomes["none"] != "answered":
            failures.append(f"seed {seed}: admitted, then fails whatever the data ({outcomes['none']})\n    {ascii(sql)}")
    assert not failures, f"{len(failures)} admitted queries on {engine.dialect} ({stats}):\n" + "\n".join(failures[:8])
    return stats


def test_outcome_is_data_independent_on_duckdb(duckdb_engine) -> None:
    stats = fuzz(duckdb_engine, QUERIES["duckdb"])
    assert stats["admitted"] >= 100, stats  # the generator keeps producing admitted queries


def test_outcome_is_data_independent_on_sqlite(sqlite_engine) -> None:
    stats = fuzz(sqlite_engine, QUERIES["sqlite"])
    assert stats["admitted"] >= 100, stats


@pytest.mark.postgres
def test_outcome_is_data_independent_on_postgres(postgres_engine) -> None:
    stats = fuzz(postgres_engine, QUERIES["postgres"])
    assert stats["admitted"] >= 40, stats


# ------------------------------------------------------------------------------ the full release path

#: the noisy value, what is derived from it, and the DP bound on RS (a separately charged draw)
ALLOW = VALUE_FIELDS + ("noise_scale_upper", "noise_scale_upper_exact")


def _write(folder: Path, rows: Rows) -> Path:
    from pimento.engines.duckdb_engine import DuckDBEngine

    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    path = folder / "fuzz.duckdb"
    engine = DuckDBEngine(str(path), read_only=False)
    try:
        for statement in ddl("duckdb"):
            engine.execute(statement)
        load(engine, rows)
    finally:
        engine.close()
    write_deployment(path)
    return path


def _release(path: Path, sql: str) -> dict[str, Any]:
    """``Session.release_sql`` with the noise fixed: its dict, or the error it raised (type and message)."""
    from pimento.mechanisms.samplers import fixed_noise_for_tests
    from pimento.release.session import Session

    with fixed_noise_for_tests(lambda: random.Random(0)), Session(path, analyst="ann") as session:
        try:
            return drop_timings(session.release_sql(sql, EPSILON, DELTA).to_dict())
        except Exception as exc:  # noqa: BLE001 - the outcome is what is compared
            return {"raised": type(exc).__name__, "message": str(exc)}


#: finding 1 as the issue reported it: a patient's row decides whether the ESCAPE is evaluated
FINDING_1 = "SELECT COUNT(*) FROM person p WHERE p.id = 1 AND p.active AND p.name LIKE 'x' ESCAPE 'é'"


def _release_cases(catalog: Any) -> Iterator[tuple[str, str, Rows, Rows]]:
    """(label, sql, D, D'): finding 1 on one patient's row, then generated queries the parser admits,
    each on ``hit`` and a random single-tuple neighbour of it."""
    patient = (1, "Ana Baker", 40, 1, 1.0, None, None, None, True)
    yield "finding 1", FINDING_1, {"person": [patient], "visit": [], "rx": []}, empty_database()
    released = 0
    for seed in range(10_000, 12_000):
        if released == SESSION_QUERIES:
            return
        sql, selections = QueryGenerator(seed).query()
        try:
            parse_count_query(sql, catalog)
        except (UnsupportedQuery, SqlError):
            continue
        released += 1
        dbs = databases(seed, selections)
        (_, hit), (description, neighbour) = dbs[1], dbs[2]
        yield f"seed {seed} ({description[:60]})", sql, hit, neighbour
    raise AssertionError(f"fewer than {SESSION_QUERIES} admitted queries among the seeds")


def test_release_sql_outcome_is_the_same_on_neighbours(tmp_path: Path) -> None:
    from pimento.engines.duckdb_engine import DuckDBEngine

    engine = DuckDBEngine(":memory:", read_only=False)
    for statement in ddl("duckdb"):
        engine.execute(statement)
    catalog = engine.introspect()
    engine.close()
    failures = []
    for label, sql, d, d_prime in _release_cases(catalog):
        answers = [_release(_write(tmp_path / "db", rows), sql) for rows in (d, d_prime)]
        diff = differences(answers[0], answers[1], ALLOW)
        if diff:
            failures.append(f"{label}: {sql}\n    " + "\n    ".join(f"{k}: {v}" for k, v in diff.items()))
    assert not failures, "what the analyst receives differs between neighbours:\n" + "\n".join(failures)
