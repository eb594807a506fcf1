"""The epsilon grid under the person unit (issue 26, item 5): relative error of released counts.

Usage::

    python -m benchmarks.person_grid [--patients 10000] [--draws 10] [--spider-draws 10]
        [--snpython PY] [--pdpython PY] [--tumult-python PY] [--only demo|spider]
        [--synth] [--columns tuple_rs,person_r2t,person_auto] [--json OUT] | --from-json OUT

The figures and the exact commands are in docs/benchmarks.md ("Person unit: the epsilon grid").

Every Pimento figure is a release through the public API (``Session.release_sql``, answer cache
off, so each draw is a fresh charge and a fresh noise draw; the noise comes from a seeded source,
``fixed_noise_for_tests``, for reproducibility). At each epsilon of :data:`EPSILONS`, three
columns, each a deployment of the same database:

* ``tuple_rs``: ``[privacy] unit = "tuple"`` (the paper's row-level unit), epsilon with delta
  :data:`DELTA`: the release's own mechanism (smooth sensitivity at residual sensitivity for a
  join; the answer states it);
* ``person_r2t``: ``unit`` = the person relation, with no synthetic copy charged to the ledger:
  the release falls back to R2T, whose thresholds need nothing from the data;
* ``person_auto``: the same unit with a synthetic copy charged to the ledger: per query, the
  release picks the person mechanism with the smaller predicted error ON THE COPY (one threshold
  chosen on the copy, or R2T). This is what "automatic" means here; COUNT(DISTINCT person) is the
  Laplace mechanism at scale 1/epsilon in both person columns (nothing to choose).

No column chooses across units: RS protects one row, not one person, so the release never trades
the unit for a smaller error.

Workloads:

* ``demo``: the 27 formulations of ``benchmarks/synth_utility.py`` on the demo hospital (seed 0;
  staff tables public, as in ``benchmarks/person_unit.py --through-release``); the copy is the
  demo generator at seed 1, charged to the ledger (a stand-in for ``pimento synth``'s copy;
  ``--synth``: a real ``pimento synth`` copy); statistics over the questions with a true count of
  at least 100;
* ``spider``: every Spider train counting question whose gold SQL parses into the supported class
  with two or more relations, on every database that has one (:func:`spider_join_items`). The
  person relation is chosen per database from the schema alone (:func:`person_relation`: the
  relation without a parent that has the most relations below it, as ``dp_text2sql`` picks the
  synthesizer's root); the relations that reach it through foreign keys are private, the others
  public (in every column); ``one_person_per_row`` is what the custodian's check finds on the
  data. No synthetic copy: ``person_auto`` is not run on Spider (``person_r2t`` only).

SmartNoise SQL (``--snpython``, its own venv) refuses every join; where a count has one person per
result, it (and PipelineDP, ``--pdpython``, and Tumult Analytics, ``--tumult-python``, on
:data:`TUMULT_QUESTIONS` at epsilon 1) is run on a per-query view that a custodian would have to prepare: one row per counted
join result, keyed by its person (``private_id``), ``max_ids`` = the same public bound as
Pimento's ``[privacy] max_contribution`` (1 for a count of distinct persons), ``censor_dims`` off,
the same epsilon; the values clamped at 0 as Pimento's are.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

EPSILONS: tuple[str, ...] = ("0.5", "1", "2")
DELTA = "1e-6"
#: the public per-person bound of both workloads (``[privacy] max_contribution``; SmartNoise's ``max_ids``)
MAX_CONTRIBUTION = 64
MIN_TRUE_DEMO = 100
COLUMNS = ("tuple_rs", "person_r2t", "person_auto")


# ------------------------------------------------------------------------------ statistics


def relative_errors(values: Iterable[float], true: int) -> list[float]:
    """|value - true| / max(true, 1) for each released value."""
    return [abs(float(v) - true) / max(true, 1) for v in values]


def error_stats(errors: Sequence[float]) -> dict[str, float | int | None]:
    """The median and the 90th percentile (numpy's linear interpolation) of ``errors``; None for both when empty."""
    if not errors:
        return {"n": 0, "median": None, "p90": None}
    arr = np.asarray(errors, dtype=float)
    return {"n": len(errors), "median": float(np.median(arr)), "p90": float(np.quantile(arr, 0.9))}


def pooled(rows: Sequence[dict[str, Any]], column: str, epsilon: str, min_true: int = 0) -> dict[str, Any]:
    """:func:`error_stats` over every draw of every question with ``true >= min_true`` answered in ``column``.

    ``rows``: one per question, ``{"true": int, column: {epsilon: {"relative_errors": [...],
    "absolute_errors": [...]} | {"refused": str}}}``. The questions refused are counted apart, never
    pooled as errors; ``median_abs`` is the median absolute error.
    """
    errors: list[float] = []
    absolute: list[float] = []
    answered = refused = 0
    for row in rows:
        if row.get("true") is None or row["true"] < min_true:
            continue
        cell = row.get(column, {}).get(epsilon)
        if cell is None:
            continue
        if "refused" in cell:
            refused += 1
            continue
        answered += 1
        errors.extend(cell["relative_errors"])
        absolute.extend(cell.get("absolute_errors", ()))
    median_abs = float(np.median(absolute)) if absolute else None
    return {**error_stats(errors), "median_abs": median_abs, "questions": answered, "refused": refused}


# ------------------------------------------------------------------------------ the person relation


def person_relation(catalog: Any) -> tuple[str, list[str]]:
    """The person relation of a schema and the relations that reach it through foreign keys (it included).

    The person: :func:`benchmarks.dp_text2sql.pick_root` on ``catalog`` with every relation private
    (the relation with no parent that has the most relations below it; ties by name). Public
    inputs only: the schema's declared foreign keys.
    """
    from benchmarks.dp_text2sql import pick_root

    everything = catalog.with_private([t.name for t in catalog.tables])
    unit = pick_root(everything)
    parents: dict[str, set[str]] = {}
    for fk in catalog.foreign_keys:
        if fk.table.lower() != fk.ref_table.lower():
            parents.setdefault(fk.table.lower(), set()).add(fk.ref_table.lower())
    reach = {unit.lower()}
    changed = True
    while changed:
        changed = False
        for t in catalog.tables:
            name = t.name.lower()
            if name not in reach and parents.get(name, set()) & reach:
                reach.add(name)
                changed = True
    return unit, [t.name for t in catalog.tables if t.name.lower() in reach]


# ------------------------------------------------------------------------------ releases


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(json.dumps(n) for n in names)


def deployment_toml(path: str, private: Sequence[str], public: Sequence[str], unit: str, *, one_person_per_row: bool = True,
                    extra: str = "") -> str:
    """A pimento.toml for the grid: ``unit``, the bound :data:`MAX_CONTRIBUTION`, a ledger for many releases, no cache."""
    return (f'[database]\npath = {json.dumps(path)}\n\n[privacy]\nprivate = [{_quoted(private)}]\npublic = [{_quoted(public)}]\n'
            f'unit = {json.dumps(unit)}\nmax_contribution = {MAX_CONTRIBUTION}\none_person_per_row = {str(one_person_per_row).lower()}\n'
            f'{extra}\n[ledger]\nepsilon_cap = "1000000"\ndelta_cap = "0.9"\nanalyst_share = "1"\nanswer_cache = false\n')


def release_draws(db: Path, queries: Sequence[tuple[str, str]], epsilon: str, delta: str | None, draws: int,
                  truth: dict[str, int], seed: int) -> dict[str, dict[str, Any]]:
    """``draws`` releases of each query through ``Session.release_sql`` on the deployment of ``db``.

    Per query: ``relative_errors`` and the mechanisms the answers state, or ``refused`` (the one-line
    error of the first refusal: refusals are decided before the charge, from public inputs).
    """
    from pimento.errors import UserError
    from pimento.mechanisms.samplers import fixed_noise_for_tests
    from pimento.release.session import Session

    out: dict[str, dict[str, Any]] = {}
    with fixed_noise_for_tests(random.Random(seed)), Session(db, analyst="grid") as session:
        for name, sql in queries:
            values, mechanisms = [], set()
            for _ in range(draws):
                try:
                    answer = session.release_sql(sql, epsilon, delta)
                except UserError as exc:
                    out[name] = {"refused": exc.one_line()}
                    break
                values.append(float(answer.value or 0))
                mechanisms.add(str(answer.mechanism))
            else:
                out[name] = {"relative_errors": relative_errors(values, truth[name]),
                             "absolute_errors": [abs(v - truth[name]) for v in values], "mechanisms": sorted(mechanisms)}
    return out


def is_distinct(sql: str) -> bool:
    """Whether ``sql`` counts distinct values (on these workloads: distinct persons or entities)."""
    return "count(distinct" in "".join(sql.lower().split())


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass
class Workload:
    """One database's grid: the three deployments (a column absent when not run) and its questions."""

    name: str
    dbs: dict[str, tuple[Path, str | None]]  # column -> (database file, delta)
    queries: list[tuple[str, str]]
    truth: dict[str, int]


def run_workload(w: Workload, draws: int, seed: int, rows: dict[str, dict[str, Any]]) -> None:
    """Fill ``rows`` (question -> row) with every column's draws at every epsilon."""
    for key, sql in w.queries:
        rows.setdefault(key, {"true": w.truth[key], "workload": w.name, "distinct": is_distinct(sql)})
    for column, (db, delta) in w.dbs.items():
        for i, eps in enumerate(EPSILONS):
            started = time.perf_counter()
            got = release_draws(db, w.queries, eps, delta, draws, w.truth, seed + i)
            for key, cell in got.items():
                rows[key].setdefault(column, {})[eps] = cell
            _log(f"{w.name}: {column} epsilon {eps}: {len(w.queries)} questions x {draws} in {time.perf_counter() - started:.1f} s")


# ------------------------------------------------------------------------------ demo


def demo_workload(folder: Path, patients: int, *, synth: bool = False, columns: Sequence[str] = COLUMNS) -> Workload:
    """The demo hospital under the deployments of ``columns`` (module docs).

    ``person_auto``'s copy: the stand-in charged to its ledger, or with ``synth`` a real ``pimento synth``
    copy (epsilon 1.6, delta 1e-6, seed 0, the demo's ``[synth]`` settings; minutes).
    """
    from benchmarks.person_unit import STAFF, _charged_standin, _real_copy
    from benchmarks.synth_utility import formulations
    from pimento.demo.hospital import PUBLIC_TABLES, TABLES, create_demo
    from pimento.engines.duckdb_engine import DuckDBEngine

    private = [t for t in TABLES if t not in PUBLIC_TABLES and t not in STAFF]
    public = [*PUBLIC_TABLES, *STAFF]
    base = folder / "built" / "hospital.duckdb"
    base.parent.mkdir(parents=True)
    create_demo(base, patients=patients, seed=0)
    demo_toml = (base.parent / "pimento.toml").read_text(encoding="utf-8")
    synth_block = demo_toml[demo_toml.index("[synth]"):].split("\n\n")[0]  # link_context, public_values
    dbs: dict[str, tuple[Path, str | None]] = {}
    for column, unit, delta in (("tuple_rs", "tuple", DELTA), ("person_r2t", "Patient", None), ("person_auto", "Patient", None)):
        if column not in columns:
            continue
        db = folder / column / "hospital.duckdb"
        db.parent.mkdir()
        shutil.copy(base, db)
        extra = f'root = "Patient"\n\n{synth_block}\n'
        (db.parent / "pimento.toml").write_text(deployment_toml("hospital.duckdb", private, public, unit, extra=extra), encoding="utf-8")
        dbs[column] = (db, delta)
    if "person_auto" in dbs:
        if synth:
            _log(f"demo: pimento synth copy made in {_real_copy(dbs['person_auto'][0]):.0f} s")
        else:
            _charged_standin(dbs["person_auto"][0], patients)
    engine = DuckDBEngine(str(base), read_only=True)
    queries = list(formulations())
    truth = {name: int(engine.execute(sql).scalar()) for name, sql in queries}
    engine.close()
    return Workload("demo", dbs, queries, truth)


# ------------------------------------------------------------------------------ Spider


def spider_join_items(spider: Path) -> dict[str, list[tuple[str, str]]]:
    """Spider train counting questions whose gold SQL parses into the supported class with >= 2 relations.

    Per database: (question id, the parsed query's SQL in SQLite). Read from the real schema only.
    """
    from benchmarks._spider import COUNT_CALL, db_path, read_split, split_dialect
    from pimento.engines import open_engine
    from pimento.errors import PimentoError
    from pimento.sql import parse_count_query

    catalogs: dict[str, Any] = {}
    out: dict[str, list[tuple[str, str]]] = {}
    for i, item in enumerate(read_split(spider, "train")):
        if not COUNT_CALL.search(item.gold):
            continue
        if item.db not in catalogs:
            engine = open_engine(str(db_path(spider, "train", item.db)), read_only=True)
            catalogs[item.db] = engine.introspect()
            engine.close()
        try:
            query = parse_count_query(item.gold, catalogs[item.db], dialect=split_dialect("train"))
        except (PimentoError, ValueError, KeyError, AttributeError):
            continue
        if len(query.relations) >= 2:
            out.setdefault(item.db, []).append((f"train-{i} {item.db}", query.to_sql("sqlite")))
    return out


def spider_workload(folder: Path, spider: Path, db: str, items: list[tuple[str, str]]) -> tuple[Workload | None, dict[str, Any]]:
    """One Spider database's deployments (tuple and person unit, no copy) and its facts; None when it has no person."""
    from benchmarks._spider import db_path
    from pimento.engines import open_engine
    from pimento.errors import PimentoError
    from pimento.sensitivity.person import person_paths, rows_with_several_owners

    source = db_path(spider, "train", db)
    engine = open_engine(str(source), read_only=True)
    try:
        catalog = engine.introspect()
        unit, private = person_relation(catalog)
        public = [t.name for t in catalog.tables if t.name not in private]
        facts: dict[str, Any] = {"unit": unit, "private": private, "public": public}
        try:
            private_catalog = catalog.with_private(private)
            paths = person_paths(private_catalog, unit)
            several = rows_with_several_owners(engine, private_catalog, paths)
        except PimentoError as exc:
            facts["skipped"] = exc.one_line()
            return None, facts
        facts["one_person_per_row"] = not several
        truth = {}
        for name, sql in items:
            truth[name] = int(engine.execute(sql).scalar() or 0)
    finally:
        engine.close()
    dbs: dict[str, tuple[Path, str | None]] = {}
    for column, unit_of, delta in (("tuple_rs", "tuple", DELTA), ("person_r2t", unit, None)):
        target = folder / db / column / source.name
        target.parent.mkdir(parents=True)
        shutil.copy(source, target)
        (target.parent / "pimento.toml").write_text(
            deployment_toml(source.name, private, public, unit_of, one_person_per_row=not several), encoding="utf-8")
        dbs[column] = (target, delta)
    return Workload(f"spider/{db}", dbs, items, truth), facts


# ------------------------------------------------------------------------------ SmartNoise


# Each runner runs inside its library's own virtual environment on a spec read from stdin (one single-key
# view per query: "pids", one per counted result; "max_ids"; "epsilon"; "reps") and prints, per query and
# epsilon, the released values or the error it raised.
_SN_RUNNER = r"""
import json, sys, time
import pandas as pd, snsql
from snsql import Privacy
spec = json.load(sys.stdin)
out = []
for q in spec["queries"]:
    frame = pd.DataFrame({"pid": q["pids"]})
    meta = {"Collection": {"PUBLIC": {"v": {"max_ids": q["max_ids"], "censor_dims": False, "row_privacy": False,
                                            "pid": {"name": "pid", "type": "int", "private_id": True}}}}}
    row = {"name": q["name"], "epsilon": q["epsilon"]}
    try:
        reader = snsql.from_df({"PUBLIC.v": frame}, privacy=Privacy(epsilon=q["epsilon"], delta=spec["delta"]), metadata=meta)
        sql = "SELECT COUNT(*) AS n FROM PUBLIC.v"
        started = time.perf_counter()
        row["values"] = [float(reader.execute(sql)[1][0]) for _ in range(q["reps"])]
        row["seconds_per_query"] = (time.perf_counter() - started) / q["reps"]
        row["cost"] = [float(x) for x in reader.get_privacy_cost([sql])]
    except Exception as exc:
        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    out.append(row)
print(json.dumps(out))
"""

_PIPELINE_DP_RUNNER = r"""
import json, sys, time
import pipeline_dp
spec = json.load(sys.stdin)
out = []
for q in spec["queries"]:
    row = {"name": q["name"], "epsilon": q["epsilon"]}
    try:
        values = []
        started = time.perf_counter()
        for _ in range(q["reps"]):
            accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=q["epsilon"], total_delta=0)
            engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
            params = pipeline_dp.AggregateParams(noise_kind=pipeline_dp.NoiseKind.LAPLACE, metrics=[pipeline_dp.Metrics.COUNT],
                                                 max_partitions_contributed=1, max_contributions_per_partition=q["max_ids"])
            extract = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0], partition_extractor=lambda r: r[1],
                                                 value_extractor=lambda r: 0)
            # one row outside the public partition (it refuses an empty collection; the row is dropped, never counted)
            rows = [(p, 0) for p in q["pids"]] + [(-(10 ** 12), 1)]
            result = engine.aggregate(rows, params, extract, public_partitions=[0])
            accountant.compute_budgets()
            values.append(float(list(result)[0][1].count))
        row["values"] = values
        row["seconds_per_query"] = (time.perf_counter() - started) / q["reps"]
        row["cost"] = [q["epsilon"], 0.0]
    except Exception as exc:
        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    out.append(row)
print(json.dumps(out))
"""

_TUMULT_RUNNER = r"""
import json, sys, time
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
from tmlt.analytics import AddRowsWithID, MaxRowsPerID, PureDPBudget, QueryBuilder, Session
spec = json.load(sys.stdin)
out = []
for q in spec["queries"]:
    row = {"name": q["name"], "epsilon": q["epsilon"]}
    try:
        frame = spark.createDataFrame([(p,) for p in q["pids"]], ["pid"])
        values = []
        started = time.perf_counter()
        for _ in range(q["reps"]):
            session = Session.from_dataframe(privacy_budget=PureDPBudget(q["epsilon"]), source_id="v", dataframe=frame,
                                             protected_change=AddRowsWithID(id_column="pid"))
            query = QueryBuilder("v").enforce(MaxRowsPerID(q["max_ids"])).count()
            values.append(float(session.evaluate(query, PureDPBudget(q["epsilon"])).collect()[0]["count"]))
        row["values"] = values
        row["seconds_per_query"] = (time.perf_counter() - started) / q["reps"]
        row["cost"] = [q["epsilon"], 0.0]
    except Exception as exc:
        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    out.append(row)
print(json.dumps(out))
"""

#: column name -> the runner script of a library that counts over a single-key view
LIBRARIES = {"smartnoise_view": _SN_RUNNER, "pipelinedp_view": _PIPELINE_DP_RUNNER, "tumult_view": _TUMULT_RUNNER}


def person_view(engine: Any, catalog: Any, unit: str, sql: str, *, one_person_per_row: bool = True) -> tuple[list[int], int] | None:
    """A library's view of one count: a person id per counted result (a fresh id for a result of nobody), and ``max_ids``.

    None when a result may reference several persons (no single-key view). A count of distinct
    persons is one row per person with ``max_ids`` 1; any other count, ``max_ids`` = :data:`MAX_CONTRIBUTION`.
    """
    from pimento.sensitivity.person import owner_expressions, person_contributions, person_paths
    from pimento.sql import parse_count_query

    paths = person_paths(catalog, unit, one_person_per_row=one_person_per_row)
    query = parse_count_query(sql, catalog)
    if len(owner_expressions(query, catalog, paths)) > 1:
        return None
    c = person_contributions(engine, query, catalog, paths, with_sets=False)
    pids = [p for p, n in enumerate(c.counts) for _ in range(n)]
    pids += [-1 - k for k in range(c.public)]
    return pids, 1 if query.count.distinct else MAX_CONTRIBUTION


def library_views(python: str, runner: str, views: dict[str, tuple[list[int], int]], truth: dict[str, int], reps: int,
                  epsilons: Sequence[str] = EPSILONS) -> dict[str, dict[str, Any]]:
    """A library (``runner`` in the venv of ``python``) on each view at each epsilon: question -> epsilon -> cell.

    The values are clamped at 0 before the errors are taken, as Pimento's released value is (``raw_values`` keeps them).
    """
    import os

    spec = {"delta": float(DELTA), "queries": [
        {"name": name, "epsilon": float(eps), "pids": pids, "max_ids": max_ids, "reps": reps}
        for name, (pids, max_ids) in views.items() for eps in epsilons]}
    env = {**os.environ, "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python}
    proc = subprocess.run([python, "-c", runner], input=json.dumps(spec), capture_output=True, text=True, timeout=3600, env=env)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()
        raise RuntimeError(f"runner failed: {tail[-1] if tail else proc.returncode}")
    out: dict[str, dict[str, Any]] = {}
    by_eps = {float(e): e for e in epsilons}
    for r in json.loads(proc.stdout):
        eps = by_eps[r["epsilon"]]
        if "error" in r:
            cell: dict[str, Any] = {"refused": r["error"]}
        else:
            true = truth[r["name"]]
            values = [max(v, 0.0) for v in r["values"]]  # clamped at 0 as Pimento's released value is (post-processing)
            cell = {"relative_errors": relative_errors(values, true), "absolute_errors": [abs(v - true) for v in values],
                    "raw_values": r["values"], "cost": r["cost"], "seconds_per_query": r["seconds_per_query"]}
        out.setdefault(r["name"], {})[eps] = cell
    return out


# ------------------------------------------------------------------------------ the run


#: the demo questions Tumult Analytics runs on (it takes 9 to 15 s per evaluation on Spark local[1] here): one count
#: of distinct patients, one row count, at epsilon 1 only
TUMULT_QUESTIONS = ("A warfarin/Cardiology", "visits per patient sex F")


def _views(w: Workload, unit: str, private: Sequence[str], one_person_per_row: bool, rows: dict[str, dict[str, Any]],
           views: dict[str, tuple[list[int], int]], truth: dict[str, int]) -> None:
    """The single-key view of each of ``w``'s questions that has one (:func:`person_view`) into ``views``."""
    from pimento.engines import open_engine

    db = next(iter(w.dbs.values()))[0]
    engine = open_engine(str(db), read_only=True)
    try:
        catalog = engine.introspect().with_private(list(private))
        for name, sql in w.queries:
            try:
                view = person_view(engine, catalog, unit, sql, one_person_per_row=one_person_per_row)
            except Exception as exc:  # noqa: BLE001 - recorded: the view could not be built
                rows[name]["no_view"] = f"{type(exc).__name__}: {exc}"
                continue
            if view is None:
                rows[name]["no_view"] = "a result may reference several persons"
            else:
                views[name], truth[name] = view, w.truth[name]
    finally:
        engine.close()


def run(*, patients: int, draws: int, spider_draws: int, seed: int, libraries: dict[str, tuple[str, int]],
        only: str | None = None, spider: Path | None = None, spider_dbs: int = 0, synth: bool = False,
        columns: Sequence[str] = COLUMNS) -> dict[str, Any]:
    """The grid (module docs): rows per question and the pooled statistics per workload, column and epsilon.

    ``libraries``: column (a key of :data:`LIBRARIES`) -> (the python of the venv it is installed in, draws per view).
    """
    from benchmarks._spider import DEFAULT_SPIDER

    folder = Path(tempfile.mkdtemp(prefix="person_grid_"))
    started = time.perf_counter()
    result: dict[str, Any] = {"epsilons": list(EPSILONS), "delta_tuple": DELTA, "max_contribution": MAX_CONTRIBUTION,
                              "patients": patients, "draws": draws, "spider_draws": spider_draws, "seed": seed,
                              "library_draws": {k: v[1] for k, v in libraries.items()}, "seconds_by_part": {},
                              "copy": "pimento synth" if synth else "stand-in (demo at seed 1)"}
    demo_rows: dict[str, dict[str, Any]] = {}
    spider_rows: dict[str, dict[str, Any]] = {}
    views: dict[str, tuple[list[int], int]] = {}
    view_truth: dict[str, int] = {}
    if only in (None, "demo"):
        _log(f"demo: building {patients} patients")
        w = demo_workload(folder / "demo", patients, synth=synth, columns=columns)
        run_workload(w, draws, seed, demo_rows)
        if libraries:
            _views(w, "Patient", _private_of(next(iter(w.dbs.values()))[0]), True, demo_rows, views, view_truth)
        result["seconds_by_part"]["demo"] = time.perf_counter() - started
    if only in (None, "spider"):
        part_started = time.perf_counter()
        spider = spider or DEFAULT_SPIDER
        items = spider_join_items(spider)
        names = sorted(items)
        if spider_dbs and spider_dbs < len(names):
            names = sorted(random.Random(seed).sample(names, spider_dbs))
        result["spider_databases"] = {}
        for db in names:
            w_s, facts = spider_workload(folder / "spider", spider, db, items[db])
            result["spider_databases"][db] = {**facts, "questions": len(items[db])}
            if w_s is None:
                _log(f"spider/{db}: skipped ({facts['skipped']})")
                for name, _ in items[db]:
                    spider_rows[name] = {"true": None, "workload": f"spider/{db}", "skipped": facts["skipped"]}
                continue
            run_workload(w_s, spider_draws, seed, spider_rows)
            if libraries:
                _views(w_s, facts["unit"], facts["private"], facts["one_person_per_row"], spider_rows, views, view_truth)
        result["seconds_by_part"]["spider"] = time.perf_counter() - part_started
    for column, (python, reps) in libraries.items():
        part_started = time.perf_counter()
        chosen, epsilons = views, tuple(EPSILONS)
        if column == "tumult_view":
            chosen, epsilons = {k: v for k, v in views.items() if k in TUMULT_QUESTIONS}, ("1",)
        _log(f"{column}: {len(chosen)} views x {len(epsilons)} epsilons x {reps}")
        try:
            got = library_views(python, LIBRARIES[column], chosen, view_truth, reps, epsilons)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
            result.setdefault("library_failures", {})[column] = str(exc)
            _log(f"{column}: failed: {exc}")
            continue
        for name, cells in got.items():
            (demo_rows if name in demo_rows else spider_rows)[name][column] = cells
        result["seconds_by_part"][column] = time.perf_counter() - part_started
    result["seconds"] = time.perf_counter() - started
    result["summary"] = summarize(demo_rows, spider_rows, tuple(libraries))
    result["rows"] = {"demo": demo_rows, "spider": spider_rows}
    return result


def _private_of(db: Path) -> list[str]:
    """The private relations a grid deployment's pimento.toml declares."""
    from pimento._compat import tomllib

    return list(tomllib.loads((db.parent / "pimento.toml").read_text(encoding="utf-8"))["privacy"]["private"])


def summarize(demo_rows: dict[str, dict[str, Any]], spider_rows: dict[str, dict[str, Any]], libraries: Sequence[str] = ()) -> dict[str, Any]:
    """Pooled statistics: demo (true >= 100), Spider (all, and true >= 10), per column and epsilon."""
    demo = list(demo_rows.values())
    parts = {"demo (true >= 100)": (demo, MIN_TRUE_DEMO),
             "demo, distinct patients (true >= 100)": ([r for r in demo if r.get("distinct")], MIN_TRUE_DEMO),
             "demo, row counts (true >= 100)": ([r for r in demo if not r.get("distinct")], MIN_TRUE_DEMO),
             "spider joins (all)": (list(spider_rows.values()), 0),
             "spider joins (true >= 10)": (list(spider_rows.values()), 10)}
    out: dict[str, Any] = {}
    for part, (rows, min_true) in parts.items():
        if not rows:
            continue
        out[part] = {f"{eps} {col}": pooled(rows, col, eps, min_true) for eps in EPSILONS for col in (*COLUMNS, *libraries)}
    return out


def resummarize(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with its summary computed again from its rows (a row without ``distinct`` gets it from the demo's SQL)."""
    from benchmarks.synth_utility import formulations

    sql = dict(formulations())
    for name, row in result["rows"]["demo"].items():
        row.setdefault("distinct", is_distinct(sql.get(name, "")))
    libraries = [c for c in LIBRARIES if any(c in r for part in result["rows"].values() for r in part.values())]
    return {**result, "summary": summarize(result["rows"]["demo"], result["rows"]["spider"], libraries)}


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.3g}%"


def print_summary(result: dict[str, Any]) -> None:
    for part, cells in result["summary"].items():
        print(f"\n{part}")
        print(f"{'epsilon':>8} {'column':>16} {'questions':>9} {'refused':>7} {'median':>9} {'p90':>9} {'median |err|':>12}")
        for key, s in cells.items():
            eps, col = key.split()
            if s["questions"] or s["refused"]:
                abs_ = "-" if s["median_abs"] is None else f"{s['median_abs']:.3g}"
                print(f"{eps:>8} {col:>16} {s['questions']:>9} {s['refused']:>7} {_pct(s['median']):>9} {_pct(s['p90']):>9} {abs_:>12}")


def markdown(result: dict[str, Any]) -> str:
    """The summary as markdown tables: per part, one row per epsilon, ``median / p90 (questions)`` per column."""
    lines: list[str] = []
    for part, cells in result["summary"].items():
        columns = [c for c in (*COLUMNS, *LIBRARIES) if any(cells.get(f"{e} {c}", {}).get("questions") for e in EPSILONS)]
        if not columns:
            continue
        lines += ["", f"{part}:", "", "| epsilon | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
        for eps in EPSILONS:
            row = []
            for c in columns:
                s = cells.get(f"{eps} {c}")
                if not s or not s["questions"]:
                    row.append("-")
                    continue
                refused = f", {s['refused']} refused" if s["refused"] else ""
                row.append(f"{_pct(s['median'])} / {_pct(s['p90'])} ({s['questions']}{refused})")
            lines.append(f"| {eps} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--patients", type=int, default=10_000)
    parser.add_argument("--draws", type=int, default=10, help="releases per question, column and epsilon on the demo")
    parser.add_argument("--spider-draws", type=int, default=10)
    parser.add_argument("--spider-dbs", type=int, default=0, help="a fixed-seed sample of this many Spider databases (0: all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the benchmark's noise source (a test source, not a release)")
    parser.add_argument("--snpython", default=None, help="python of a venv with smartnoise-sql (omit: no SmartNoise column)")
    parser.add_argument("--pdpython", default=None, help="python of a venv with pipeline-dp (omit: no PipelineDP column)")
    parser.add_argument("--tumult-python", default=None, help="python of a venv with tmlt.analytics (omit: no Tumult column)")
    parser.add_argument("--sn-reps", type=int, default=10, help="SmartNoise's draws per question and epsilon")
    parser.add_argument("--pdp-reps", type=int, default=30, help="PipelineDP's draws per question and epsilon")
    parser.add_argument("--tumult-reps", type=int, default=3, help="Tumult's draws per question (epsilon 1 only)")
    parser.add_argument("--only", choices=("demo", "spider"), default=None)
    parser.add_argument("--synth", action="store_true", help="demo: person_auto reads a real `pimento synth` copy (minutes), not the stand-in")
    parser.add_argument("--columns", default=",".join(COLUMNS), help="demo: the release columns to run (comma-separated)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--from-json", type=Path, default=None, help="print the markdown tables of an earlier --json run and stop")
    args = parser.parse_args(argv)
    if args.from_json:
        print(markdown(resummarize(json.loads(args.from_json.read_text(encoding="utf-8")))))
        return
    libraries = {col: (py, reps) for col, py, reps in (("smartnoise_view", args.snpython, args.sn_reps),
                                                       ("pipelinedp_view", args.pdpython, args.pdp_reps),
                                                       ("tumult_view", args.tumult_python, args.tumult_reps)) if py}
    result = run(patients=args.patients, draws=args.draws, spider_draws=args.spider_draws, seed=args.seed, libraries=libraries,
                 only=args.only, spider_dbs=args.spider_dbs, synth=args.synth, columns=tuple(args.columns.split(",")))
    print(f"{result['seconds']:.1f} s")
    print_summary(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
