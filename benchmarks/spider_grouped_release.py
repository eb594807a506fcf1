"""The released answer's error on Spider grouped and summed questions at epsilon 1 (issue 25, item 5a).

Run: ``python -m benchmarks.spider_grouped_release [--partition tune|heldout-open|sealed|all] [--repeats 5]
[--limit N] [--sample N] [--no-e2e] [--json OUT]``

Questions: those of :func:`benchmarks.spider_grouped.load_questions` (Spider train questions whose
gold SQL is a grouped COUNT or a SUM/AVG in the supported class), per partition of
:func:`benchmarks.nl_spider.in_partition`. Each Spider database is copied from SQLite into DuckDB
(:func:`copy_to_duckdb`: column types from the values stored, primary keys where the data
satisfies them) and deployed twice, every relation private, with the custodian's ``pimento.toml``
(:func:`write_config`):

* ``domains``: ``[bounds]`` of every numeric column = its min and max on the database, and
  ``[domains]`` of every integer or text column = its set of values on the database (every group
  shown, zeros included), for columns with at most 100 values and for every gold group column
  whatever its size (``[release] max_groups`` stays at its default of 100, so more is refused);
* ``private-keys``: the same ``[bounds]``, no ``[domains]``: group keys are private, and only a
  grouped COUNT over one relation can be answered (partition selection at delta 1e-6).

Both declarations read the data: they stand for what a real custodian would declare from public
knowledge (a code list, a plausible range), which this benchmark has no other source for.

The GOLD SQL (MySQL dialect, transpiled to DuckDB) is released through ``Session.release_sql`` at
epsilon 1 and delta 1e-6, ``--repeats`` times, each time for a new analyst with the answer cache
off, and compared with the true answer of the same query on the same DuckDB database
(:func:`true_answer`; the bounds are the column's range, so clipping changes nothing). Figures
(:func:`summarize`): per question, the median over (group, repetition) of the relative error
``|released - true| / max(|true|, 1)`` over the gold's groups that the answer shows with a value
(an AVG whose noisy count is below 1 has no value: counted apart), also restricted to groups of
at least 10 rows (the join results the aggregate reads: a COUNT's true value);
then the median and 90th percentile over questions. Under partition selection, recall = gold
groups shown / gold groups, per question (mean over repetitions) and pooled by group size
(1-9, 10-99, >= 100 rows). Refusals (decided before the charge) are bucketed by reason (the
UnsupportedQuery's ``construct``), "(join)" marking a gold over several relations.

End to end (``domains`` deployment only; ``--no-e2e`` skips it): the offline parser's top-1
reading (:func:`pimento.nl.aggregate_readings.translate_aggregate`, values from the database) is
released instead of the gold; its error is taken against the gold's true answer, a gold group the
answer does not show counting as answered 0; a question with no reading or a refused one is
counted among the refused (left out of the error figures, as a refused gold is).

Sealed questions are never printed one by one: only the aggregate figures come out.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb
import sqlglot

from benchmarks._spider import DEFAULT_SPIDER, connect_read_only, db_path
from benchmarks.nl_spider import in_partition, open_database
from benchmarks.spider_grouped import load_questions
from pimento.engines import open_engine
from pimento.errors import PimentoError
from pimento.release import Session
from pimento.sql.ir import AggregateKind, AggregateQuery
from pimento.sql.parse import parse_aggregate_query

__all__ = [
    "SIZE_BUCKETS",
    "Key",
    "copy_to_duckdb",
    "duckdb_type",
    "group_key",
    "main",
    "question_error",
    "recall_by_size",
    "refusal_reason",
    "relative_error",
    "run",
    "size_bucket",
    "summarize",
]

EPSILON = "1"
DELTA = "1e-6"
PARTITIONS = ("tune", "heldout-open", "sealed")
SETTINGS = ("domains", "private-keys")
#: group sizes (true row count) for the recall under partition selection
SIZE_BUCKETS = ((1, 9, "1-9"), (10, 99, "10-99"), (100, None, ">=100"))
#: ``[domains]`` declares every integer or text column with at most this many values (``[release] max_groups``'s default)
DOMAIN_AT_MOST = 100
#: groups whose true value (an AVG: row count) reaches this are the "large groups" figure
LARGE = 10

Key = tuple[Any, ...]


# --------------------------------------------------------------------------- the figure's arithmetic


def relative_error(released: float, true: float) -> float:
    """``|released - true| / max(|true|, 1)``: the benchmark's relative error (1 below a true value of 1)."""
    return abs(released - true) / max(abs(true), 1.0)


def size_bucket(rows: int) -> str:
    """The size bucket of a group of ``rows`` rows (:data:`SIZE_BUCKETS`)."""
    for lo, hi, label in SIZE_BUCKETS:
        if rows >= lo and (hi is None or rows <= hi):
            return label
    raise ValueError(f"a group has at least one row, got {rows}")


def group_key(values: Iterable[Any]) -> Key:
    """One spelling of a group key so that the engine's and the answer's compare equal (numbers by exact value)."""
    out: list[Any] = []
    for v in values:
        if isinstance(v, bool) or v is None:
            out.append(v)
        elif isinstance(v, (int, float, Decimal, Fraction)):
            out.append(Fraction(v) if not (isinstance(v, float) and not math.isfinite(v)) else str(v))
        else:
            out.append(str(v))
    return tuple(out)


def question_error(
    true: Mapping[Key, float], runs: Sequence[Mapping[Key, float | None]], *, weights: Mapping[Key, int] | None = None,
    missing_as_zero: bool = False,
) -> dict[str, Any]:
    """One question's error over its repetitions ``runs`` (released value per shown group).

    ``median``: the median over (gold group, run) of :func:`relative_error`, over the groups a run
    shows with a value (``missing_as_zero``: a group the run does not show counts as answered 0);
    ``median_large``: the same over groups whose ``weights`` (their row counts; default the true
    value) is at least :data:`LARGE` (None when there is none); ``no_value``: (group, run) pairs shown without a value.
    """
    errors: list[float] = []
    large: list[float] = []
    no_value = 0
    cells = len(runs) * len(true)
    for run in runs:
        for key, value in true.items():
            if key in run and run[key] is None:
                no_value += 1
                continue
            got = run.get(key)
            if got is None:
                if not missing_as_zero:
                    continue
                got = 0.0
            e = relative_error(got, value)
            errors.append(e)
            if (weights[key] if weights is not None else value) >= LARGE:
                large.append(e)
    return {
        "median": statistics.median(errors) if errors else None,
        "median_large": statistics.median(large) if large else None,
        "no_value": no_value,
        "cells": cells,
    }


def recall_by_size(sizes: Mapping[Key, int], shown: Sequence[Iterable[Key]]) -> dict[str, list[int]]:
    """Per size bucket, [gold groups shown summed over the runs, gold groups times runs]; key ``all`` too."""
    out: dict[str, list[int]] = {label: [0, 0] for _, _, label in SIZE_BUCKETS}
    out["all"] = [0, 0]
    for run in shown:
        seen = set(run)
        for key, rows in sizes.items():
            for label in (size_bucket(rows), "all"):
                out[label][0] += key in seen
                out[label][1] += 1
    return out


def refusal_reason(exc: BaseException) -> str:
    """A bucket for why a release was refused (``construct`` of an UnsupportedQuery, else the error's class)."""
    construct = getattr(exc, "construct", None)
    text = str(exc).lower()
    if construct:
        return str(construct)
    if "bounds" in text:
        return "no bounds"
    return type(exc).__name__


def _quantile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile (nearest rank, the higher one) of ``values``; None when empty; infinities allowed."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def _spread(records: Sequence[Mapping[str, Any]], field: str = "median") -> dict[str, Any]:
    """Median and 90th percentile over the questions of their ``field`` error (questions without one left out)."""
    values = [r["error"][field] for r in records if r.get("error") is not None and r["error"][field] is not None]
    return {"median": _quantile(values, 0.5), "p90": _quantile(values, 0.9), "questions": len(values)}


def summarize(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The aggregate figures of one partition and setting over per-question ``records`` (see :func:`run`)."""
    answered = [r for r in records if r.get("error") is not None]
    rows = [r["rows_median"] for r in records if r.get("rows_median") is not None]
    recall: dict[str, list[int]] = {}
    per_question_recall = []
    for r in answered:
        if r.get("recall") is None:
            continue
        per_question_recall.append(r["recall"]["all"][0] / r["recall"]["all"][1] if r["recall"]["all"][1] else 1.0)
        for label, (shown, total) in r["recall"].items():
            acc = recall.setdefault(label, [0, 0])
            acc[0] += shown
            acc[1] += total
    refused = Counter(r["refused"] + (" (join)" if r.get("join") else "") for r in records if r.get("refused"))
    return {
        "questions": len(records),
        "answered": len(answered),
        "refused": sum(refused.values()),
        "refused_by_reason": dict(refused.most_common()),
        "median_rel_error": _spread(answered),
        "median_rel_error_large": _spread(answered, "median_large"),
        "median_rel_error_single": _spread([r for r in answered if not r.get("join")]),
        "median_rel_error_join": _spread([r for r in answered if r.get("join")]),
        "no_value_cells": sum(r["error"]["no_value"] for r in answered),
        "cells": sum(r["error"].get("cells", 0) for r in answered),
        "rows_per_group": {"median": _quantile(rows, 0.5), "p90": _quantile(rows, 0.9)},
        "recall_pooled": {k: {"shown": s, "groups": t, "recall": s / t if t else None} for k, (s, t) in recall.items()},
        "recall_per_question": {"mean": statistics.fmean(per_question_recall) if per_question_recall else None,
                                "median": _quantile(per_question_recall, 0.5), "questions": len(per_question_recall)},
        "by_kind": {k: sum(1 for r in records if r["kind"] == k) for k in sorted({r["kind"] for r in records})},
        "joins": sum(1 for r in records if r.get("join")),
    }


# --------------------------------------------------------------------------- the deployment


#: text SQLite would read as an integer or a real number in arithmetic (no leading zeros, no spaces:
#: '02134' stays text, as a code)
INT_TEXT = re.compile(r"-?(0|[1-9][0-9]*)")
REAL_TEXT = re.compile(r"-?(0|[1-9][0-9]*)?(\.[0-9]+)?([eE][-+]?[0-9]+)?")


def value_kind(value: Any) -> str:
    """``integer``, ``real`` or ``text``: what a stored SQLite value is as a number (numeric text included)."""
    if isinstance(value, bool):
        return "text"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "real"
    if isinstance(value, str) and INT_TEXT.fullmatch(value):
        return "integer"
    if isinstance(value, str) and any(ch.isdigit() for ch in value) and REAL_TEXT.fullmatch(value):
        return "real"
    return "text"


def duckdb_type(values: Iterable[Any]) -> str:
    """The DuckDB type of a column holding ``values`` (NULLs ignored): all integers (numeric text
    included, as SQLite's SUM reads it) BIGINT; all numbers DOUBLE; otherwise VARCHAR."""
    kinds = {value_kind(v) for v in values if v is not None}
    if kinds <= {"integer"}:
        return "BIGINT"
    if kinds <= {"integer", "real"}:
        return "DOUBLE"
    return "VARCHAR"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def copy_to_duckdb(sqlite_path: Path, out: Path) -> dict[str, dict[str, str]]:
    """Copy every table of a SQLite file into a new DuckDB file: column types from the stored values
    (:func:`duckdb_type`), the primary key where the data satisfies it.
    Returns table -> column -> type."""
    src = connect_read_only(sqlite_path)
    con = duckdb.connect(str(out))
    types: dict[str, dict[str, str]] = {}
    try:
        tables = [r[0] for r in src.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        for table in tables:
            info = src.execute(f"PRAGMA table_info({_quote(table)})").fetchall()
            columns = [r[1] for r in info]
            pk = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]]
            rows = src.execute(f"SELECT {', '.join(_quote(c) for c in columns)} FROM {_quote(table)}").fetchall()
            types[table] = {c: duckdb_type(r[i] for r in rows) for i, c in enumerate(columns)}
            _load_table(con, table, types[table], pk, rows)
    finally:
        src.close()
        con.close()
    return types


def _load_table(con: duckdb.DuckDBPyConnection, table: str, types: Mapping[str, str], pk: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
    """Create ``table`` and load ``rows`` through a CSV file (NULL written as ``\\N``); without the key if it fails."""
    with tempfile.NamedTemporaryFile("w", suffix=".csv", newline="", encoding="utf-8", delete=False) as fh:
        writer = csv.writer(fh, lineterminator="\n")
        for row in rows:
            writer.writerow(["\\N" if v is None else (v.decode("utf-8", "replace") if isinstance(v, bytes) else v) for v in row])
        csv_path = fh.name
    columns = ", ".join(f"{_quote(c)} {t}" for c, t in types.items())
    spec = "{" + ", ".join(f"'{c.replace(chr(39), chr(39) * 2)}': '{t}'" for c, t in types.items()) + "}"
    load = (f"INSERT INTO {_quote(table)} SELECT * FROM read_csv(?, header = false, columns = {spec}, nullstr = '\\N', new_line = '\\n', "
            "quote = '\"', escape = '\"', auto_detect = false)")
    try:
        for key in ([pk, []] if pk else [[]]):
            con.execute(f"DROP TABLE IF EXISTS {_quote(table)}")
            keyed = f", PRIMARY KEY ({', '.join(_quote(c) for c in key)})" if key else ""
            con.execute(f"CREATE TABLE {_quote(table)} ({columns}{keyed})")
            try:
                con.execute(load, [csv_path])
                return
            except duckdb.Error:
                if not key:
                    raise
    finally:
        Path(csv_path).unlink()


@dataclass
class Kept:
    """One question as the benchmark releases it."""

    index: int
    db: str
    question: str
    gold: str
    kind: str
    query: AggregateQuery
    sql: str  # the gold in DuckDB's dialect


def _column_name(query: AggregateQuery, attr: Any) -> str:
    return f"{query.body.relation(attr.alias).table}.{attr.column}"


def _toml_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _decimal(value: Any) -> str:
    """A number as an exact decimal literal (a float's shortest repr is a finite decimal)."""
    if isinstance(value, bool):
        raise ValueError("a bound is a number")
    if isinstance(value, int):
        return str(value)
    return format(Decimal(repr(float(value))), "f")


def declarations(
    con: duckdb.DuckDBPyConnection, types: Mapping[str, Mapping[str, str]], kept: Sequence[Kept]
) -> tuple[dict[str, list[str]], dict[str, list[Any]]]:
    """The custodian's ``[bounds]`` and ``[domains]``, read on the database (module doc): the min and max of
    every numeric column; the value set of every integer or text column with at most :data:`DOMAIN_AT_MOST`
    values, and of every group column of ``kept``'s gold SQL whatever its size (the release's cap then refuses it)."""
    bounds: dict[str, list[str]] = {}
    domains: dict[str, list[Any]] = {}
    gold_groups = {_column_name(q.query, g).lower() for q in kept for g in q.query.group_by}
    for table, columns in types.items():
        for column, kind in columns.items():
            name = f"{table}.{column}"
            if kind in ("BIGINT", "DOUBLE"):
                lo, hi = con.execute(f"SELECT MIN({_quote(column)}), MAX({_quote(column)}) FROM {_quote(table)}").fetchone() or (None, None)
                if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and math.isfinite(lo) and math.isfinite(hi):
                    bounds[name] = [_decimal(lo), _decimal(hi)]
            if kind == "DOUBLE":
                continue  # [domains] lists text and integers only
            limit = "" if name.lower() in gold_groups else f" LIMIT {DOMAIN_AT_MOST + 1}"
            values = [r[0] for r in con.execute(
                f"SELECT DISTINCT {_quote(column)} FROM {_quote(table)} WHERE {_quote(column)} IS NOT NULL{limit}").fetchall()]
            if values and (limit == "" or len(values) <= DOMAIN_AT_MOST):
                domains[name] = sorted(values, key=lambda v: (type(v).__name__, v))
    return bounds, domains


def write_config(folder: Path, bounds: Mapping[str, list[str]], domains: Mapping[str, list[Any]] | None) -> Path:
    """The deployment's ``pimento.toml``: a large ledger, no answer cache, the bounds, and the domains (if any)."""
    lines = ['[ledger]', 'epsilon_cap = "1000000"', 'delta_cap = "0.9"', 'analyst_share = "1"', "answer_cache = false", "", "[bounds]"]
    lines += [f"{_toml_str(k)} = [{_toml_str(lo)}, {_toml_str(hi)}]" for k, (lo, hi) in bounds.items()]
    if domains:
        lines += ["", "[domains]"]
        lines += [f"{_toml_str(k)} = [{', '.join(_toml_str(v) if isinstance(v, str) else str(v) for v in values)}]" for k, values in domains.items()]
    path = folder / "pimento.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------- truth and releases


def true_answer(con: duckdb.DuckDBPyConnection, query: AggregateQuery) -> tuple[dict[Key, float], dict[Key, int]]:
    """The exact answer per gold group (group columns first in the IR's rendering) and each group's row count
    (the join results its aggregate reads: COUNT(column) for a SUM/AVG). A group with a NULL key, or an AVG
    of NULLs only, is left out; a SUM of NULLs only is 0 (as the release's COALESCE)."""
    values = {}
    for row in con.execute(query.to_sql("duckdb")).fetchall():
        if any(v is None for v in row[:-1]) or (row[-1] is None and query.kind is AggregateKind.AVG):
            continue
        values[group_key(row[:-1])] = float(row[-1] or 0)
    if query.kind is AggregateKind.COUNT:
        return values, {k: int(v) for k, v in values.items()}
    rows = con.execute(_grouped_count_sql(query)).fetchall()
    sizes = {group_key(r[:-1]): int(r[-1]) for r in rows}
    return values, {k: sizes.get(k, 0) for k in values}


def _grouped_count_sql(query: AggregateQuery) -> str:
    """``COUNT(column)`` per group of a SUM/AVG: its row count."""
    counted = AggregateQuery(body=query.count_query, group_by=query.group_by)
    return counted.to_sql("duckdb")


def answer_values(data: Mapping[str, Any]) -> dict[Key, float | None]:
    """Group key -> the value the analyst reads, from a grouped answer's ``to_dict()`` (an ungrouped SUM/AVG: key ())."""
    if "groups" not in data:  # a scalar answer (not expected: the gold is grouped or summed)
        value = data.get("value")
        return {(): None if value is None else float(value)}
    return {group_key(g["key"]): (None if g["value_exact"] is None else float(Fraction(g["value_exact"]))) for g in data["groups"]}


@dataclass
class Deployment:
    """One database deployed under one setting: its folder and Session."""

    folder: Path
    session: Session
    analysts: int = 0

    def release(self, sql: str, repeats: int) -> tuple[list[dict[Key, float | None]], str | None, float]:
        """``repeats`` releases of ``sql`` (a new analyst each), or the refusal's reason; seconds per release."""
        runs: list[dict[Key, float | None]] = []
        start = time.perf_counter()
        for _ in range(repeats):
            self.analysts += 1
            try:
                answer = self.session.release_sql(sql, EPSILON, DELTA, analyst=f"analyst{self.analysts}")
            except PimentoError as exc:
                return [], refusal_reason(exc), time.perf_counter() - start
            except Exception as exc:  # noqa: BLE001 - a crash is recorded as the question's outcome, the run goes on
                return [], f"crash: {type(exc).__name__}", time.perf_counter() - start
            data = answer.to_dict()
            if data.get("cached"):
                raise RuntimeError("a cached answer: the benchmark needs answer_cache = false")
            runs.append(answer_values(data))
        return runs, None, (time.perf_counter() - start) / max(len(runs), 1)


@dataclass
class DatabaseRun:
    """A Spider database copied to DuckDB, its kept questions and both deployments."""

    db: str
    folder: Path
    kept: list[Kept] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    deployments: dict[str, Deployment] = field(default_factory=dict)

    def close(self) -> None:
        for d in self.deployments.values():
            d.session.close()


def prepare(spider: Path, db: str, questions: Sequence[tuple[int, Mapping[str, Any]]], root: Path) -> DatabaseRun:
    """Copy ``db`` to DuckDB, parse its questions' gold SQL against the copy, and deploy it under both settings."""
    folder = root / db
    folder.mkdir(parents=True)
    base = folder / "base.duckdb"
    types = copy_to_duckdb(db_path(spider, "train", db), base)
    engine = open_engine(str(base))
    try:
        catalog = engine.introspect()
    finally:
        engine.close()
    out = DatabaseRun(db, folder)
    for index, q in questions:
        try:
            query = parse_aggregate_query(q["gold"], catalog, dialect="mysql")
            sql = sqlglot.transpile(q["gold"], read="mysql", write="duckdb")[0]
        except (PimentoError, sqlglot.errors.SqlglotError) as exc:
            out.skipped[f"gold does not parse on the DuckDB copy: {type(exc).__name__}"] += 1
            continue
        out.kept.append(Kept(index, db, q["question"], q["gold"], q["kind"], query, sql))
    con = duckdb.connect(str(base), read_only=True)
    try:
        bounds, domains = declarations(con, types, out.kept)
    finally:
        con.close()
    for setting in SETTINGS:
        where = folder / setting
        where.mkdir()
        shutil.copy(base, where / f"{db}.duckdb")
        write_config(where, bounds, domains if setting == "domains" else None)
        out.deployments[setting] = Deployment(where, Session(where / f"{db}.duckdb"))
    return out


def _top1(spider: Path, q: Kept, opened: dict[str, Any]) -> str | None:
    """The offline parser's top-1 reading of ``q`` in DuckDB's dialect, or None."""
    from pimento.nl.aggregate_readings import translate_aggregate

    if q.db not in opened:
        catalog, index, _ = open_database(db_path(spider, "train", q.db), max_values=2000, values="real")
        opened[q.db] = catalog, index
    catalog, index = opened[q.db]
    try:
        candidates = translate_aggregate(q.question, catalog, values=index, k=1)
    except PimentoError:
        return None
    return candidates[0].query.to_sql("duckdb") if candidates else None


def measure_question(run: DatabaseRun, q: Kept, *, repeats: int, e2e: bool, spider: Path, opened: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per setting (and ``e2e``), the question's record: error, recall, or the refusal's reason."""
    con = duckdb.connect(str(run.folder / "base.duckdb"), read_only=True)
    try:
        true, sizes = true_answer(con, q.query)
    except duckdb.Error as exc:
        return {"skipped": {"kind": q.kind, "refused": f"the gold fails on the DuckDB copy: {type(exc).__name__}"}}
    finally:
        con.close()
    weights = sizes
    rows_median = statistics.median(sizes.values()) if sizes else None
    grouped = bool(q.query.group_by)
    join = len(q.query.body.relations) > 1
    out: dict[str, dict[str, Any]] = {}
    for setting in SETTINGS:
        if setting == "private-keys" and not grouped:
            continue  # an ungrouped SUM/AVG has no keys: the same release as under "domains"
        record: dict[str, Any] = {"kind": q.kind + ("-grouped" if grouped else ""), "groups": len(true), "join": join,
                                  "rows_median": rows_median}
        runs, refused, seconds = run.deployments[setting].release(q.sql, repeats)
        record["seconds_per_release"] = seconds
        if refused:
            record["refused"] = refused
        else:
            record["error"] = question_error(true, runs, weights=weights)
            if setting == "private-keys":
                record["recall"] = recall_by_size({k: sizes[k] for k in true if sizes[k] >= 1}, [list(r) for r in runs])
        out[setting] = record
    if e2e:
        record = {"kind": q.kind + ("-grouped" if grouped else ""), "groups": len(true), "join": join, "rows_median": rows_median}
        sql = _top1(spider, q, opened)
        if sql is None:
            record["refused"] = "no parser reading"
        else:
            runs, refused, _ = run.deployments["domains"].release(sql, repeats)
            if refused:
                record["refused"] = f"top-1 refused: {refused}"
            else:
                record["error"] = question_error(true, runs, weights=weights, missing_as_zero=True)
        out["e2e"] = record
    return out


def run(
    spider: Path, partitions: Sequence[str], *, repeats: int = 5, limit: int | None = None, sample: int | None = None,
    e2e: bool = True, seed: int = 0, log: Any = None,
) -> dict[str, Any]:
    """Per partition and setting (``domains``, ``private-keys``, ``e2e``): the summary (:func:`summarize`), and
    the per-question records of the partitions that are not sealed."""
    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    questions = [(i, q) for i, q in enumerate(load_questions(spider))]
    report: dict[str, Any] = {"epsilon": EPSILON, "delta": DELTA, "repeats": repeats, "partitions": {}}
    opened: dict[str, Any] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pimento-spider-release-") as tmp:
        for partition in partitions:
            chosen = [(i, q) for i, q in questions if in_partition(q["db"], partition)]
            total = len(chosen)
            if sample is not None and sample < len(chosen):
                chosen = sorted(random.Random(seed).sample(chosen, sample), key=lambda iq: iq[0])
            if limit is not None:
                chosen = chosen[:limit]
            by_db: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
            for i, q in chosen:
                by_db.setdefault(q["db"], []).append((i, q))
            records: dict[str, list[dict[str, Any]]] = {s: [] for s in (*SETTINGS, "e2e")}
            skipped: Counter[str] = Counter()
            done = 0
            for db, items in by_db.items():
                prepared = prepare(spider, db, items, Path(tmp) / partition)
                try:
                    skipped.update(prepared.skipped)
                    for kept in prepared.kept:
                        for setting, record in measure_question(prepared, kept, repeats=repeats, e2e=e2e, spider=spider, opened=opened).items():
                            if setting == "skipped":
                                skipped[record["refused"]] += 1
                                continue
                            if partition != "sealed":
                                record.update(db=kept.db, question=kept.question, gold=kept.gold)
                            records[setting].append(record)
                        done += 1
                finally:
                    prepared.close()
                shown = "" if partition == "sealed" else f" ({db})"
                log(f"[{partition}] {done}/{len(chosen)} questions{shown}, {time.perf_counter() - started:.0f} s")
            report["partitions"][partition] = {
                "questions_in_partition": total, "questions_run": len(chosen), "skipped": dict(skipped),
                "summary": {s: summarize(r) for s, r in records.items() if r},
                **({"records": records} if partition != "sealed" else {}),
            }
    report["seconds"] = round(time.perf_counter() - started, 1)
    return report


# --------------------------------------------------------------------------- output


def _pct(x: float | None) -> str:
    if x is None:
        return "-"
    return "inf" if math.isinf(x) else f"{100 * x:.1f}%"


def _pair(spread: Mapping[str, Any]) -> str:
    return f"{_pct(spread['median'])} / {_pct(spread['p90'])}"


def markdown(report: Mapping[str, Any]) -> str:
    """The tables of docs/benchmarks.md."""
    lines = [
        f"epsilon {report['epsilon']}, delta {report['delta']}, {report['repeats']} releases per question, {report['seconds']} s",
        "",
        "| partition | setting | questions (joins) | answered | refused | rel. error, median / p90 over questions | one relation | joins "
        "| groups >= 10 rows | no value (AVG) | recall 1-9 / 10-99 / >=100 / all |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for partition, part in report["partitions"].items():
        for setting, s in part["summary"].items():
            rec = s["recall_pooled"]
            recall = " / ".join(_pct(rec[k]["recall"]) if k in rec else "-" for k in ("1-9", "10-99", ">=100", "all")) if rec else "-"
            lines.append(
                f"| {partition} | {setting} | {s['questions']} ({s['joins']}) | {s['answered']} | {s['refused']} | "
                f"{_pair(s['median_rel_error'])} | {_pair(s['median_rel_error_single'])} | {_pair(s['median_rel_error_join'])} | "
                f"{_pair(s['median_rel_error_large'])} | {s['no_value_cells']} of {s['cells']} | {recall} |"
            )
    lines.append("")
    for partition, part in report["partitions"].items():
        rows = next(iter(part["summary"].values()))["rows_per_group"] if part["summary"] else None
        if rows:
            lines.append(f"- {partition}: rows per gold group, median over questions of the per-question median: {rows['median']} (p90 {rows['p90']})")
        if part["skipped"]:
            lines.append(f"- {partition}: skipped {part['skipped']}")
        for setting, s in part["summary"].items():
            if s["refused_by_reason"]:
                lines.append(f"- {partition} / {setting}: refused {s['refused_by_reason']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spider", type=Path, default=DEFAULT_SPIDER)
    parser.add_argument("--partition", choices=(*PARTITIONS, "all"), default="all")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--limit", type=int, default=None, help="the first N questions of each partition (after --sample)")
    parser.add_argument("--sample", type=int, default=None, help="a random sample of N questions per partition (seed --seed)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-e2e", action="store_true", help="skip the parser's top-1 released end to end")
    parser.add_argument("--json", type=Path, default=None, help="write the report (per-question records except sealed's) here")
    args = parser.parse_args(argv)
    partitions = PARTITIONS if args.partition == "all" else (args.partition,)
    report = run(args.spider, partitions, repeats=args.repeats, limit=args.limit, sample=args.sample, e2e=not args.no_e2e, seed=args.seed)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))
    print(markdown(report))


if __name__ == "__main__":
    main()
