"""Cell-level precision and recall of ``pimento ingest`` rebuilding the demo hospital from its corpus.

    python -m pimento.bench.ingest_quality --patients 1000 [--seed 0] [--keep DIR] [--json]

Builds the demo database (the truth), narrates it (:mod:`pimento.demo.corpus`), ingests the corpus
with the offline extractor and the corpus' pattern spec, then compares the rebuilt database with
the truth, table by table and column by column. A cell is a (table, row key, column) with a
non-NULL value; a rebuilt cell is correct when the truth has the same row key and an equal value in
that column. Precision = correct / rebuilt cells, recall = correct / true cells. Rows are also
counted: a rebuilt row is exact when all its cells are correct and it has every true cell.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb

from pimento.demo.corpus import write_demo_corpus
from pimento.demo.hospital import TABLES
from pimento.ingest import ingest
from pimento.ingest.target import key_of, load_target

__all__ = ["compare", "main", "measure"]


def _cells(con: duckdb.DuckDBPyConnection, table: str, key: tuple[str, ...]) -> dict[tuple, dict[str, Any]]:
    cursor = con.execute(f'SELECT * FROM "{table}"')
    columns = [d[0] for d in cursor.description]
    rows = {}
    for values in cursor.fetchall():
        record = dict(zip(columns, values))
        rows[tuple(record[k] for k in key)] = {c: v for c, v in record.items() if v is not None}
    return rows


def compare(truth: str | Path, rebuilt: str | Path, schema: str | Path) -> dict[str, Any]:
    """Per table and column: true, rebuilt and correct cells, precision and recall; and row counts."""
    catalog = load_target(schema).catalog
    t_con = duckdb.connect(str(truth), read_only=True)
    r_con = duckdb.connect(str(rebuilt), read_only=True)
    tables: dict[str, Any] = {}
    try:
        for name in TABLES:
            key = key_of(catalog.table(name))
            true_rows = _cells(t_con, name, key)
            got_rows = _cells(r_con, name, key)
            columns: dict[str, dict[str, int]] = {
                c: {"true": 0, "rebuilt": 0, "correct": 0} for c in catalog.table(name).column_names
            }
            exact = 0
            for k, cells in true_rows.items():
                for c in cells:
                    columns[c]["true"] += 1
            for k, cells in got_rows.items():
                truth_row = true_rows.get(k, {})
                all_ok = bool(truth_row) and set(cells) == set(truth_row)
                for c, v in cells.items():
                    columns[c]["rebuilt"] += 1
                    if c in truth_row and truth_row[c] == v:  # exact: case and spelling count
                        columns[c]["correct"] += 1
                    else:
                        all_ok = False
                exact += all_ok
            for stats in columns.values():
                stats.update(_pr(stats))
            totals = {k: sum(s[k] for s in columns.values()) for k in ("true", "rebuilt", "correct")}
            tables[name] = {
                "rows_true": len(true_rows),
                "rows_rebuilt": len(got_rows),
                "rows_exact": exact,
                **totals,
                **_pr(totals),
                "columns": columns,
            }
    finally:
        t_con.close()
        r_con.close()
    overall = {k: sum(t[k] for t in tables.values()) for k in ("true", "rebuilt", "correct")}
    return {"overall": {**overall, **_pr(overall)}, "tables": tables}


def _pr(stats: dict[str, int]) -> dict[str, float]:
    precision = stats["correct"] / stats["rebuilt"] if stats["rebuilt"] else 1.0
    recall = stats["correct"] / stats["true"] if stats["true"] else 1.0
    return {"precision": round(precision, 4), "recall": round(recall, 4)}


def measure(patients: int, *, seed: int = 0, folder: Path | None = None) -> dict[str, Any]:
    """Build, narrate, ingest and compare; returns the figures and the timings."""
    with tempfile.TemporaryDirectory(prefix="pimento-ingest-bench-") as tmp:
        where = folder or Path(tmp)
        corpus = where / "corpus"
        started = time.perf_counter()
        info = write_demo_corpus(corpus, patients=patients, seed=seed, overwrite=True)
        narrated = time.perf_counter()
        rebuilt = where / "rebuilt.duckdb"
        if rebuilt.exists():
            rebuilt.unlink()
        report = ingest(corpus, info.schema_path, rebuilt, patterns=info.patterns_path)
        ingested = time.perf_counter()
        figures = compare(info.source_path, rebuilt, info.schema_path)
        reasons: dict[str, int] = {}
        for item in report.rejected:
            kind = item.reason.split(":")[0]
            reasons[f"{item.table}: {kind}"] = reasons.get(f"{item.table}: {kind}", 0) + 1
        return {
            "patients": patients,
            "seed": seed,
            "documents": info.documents,
            "narrate_s": round(narrated - started, 2),
            "ingest_s": round(ingested - narrated, 2),
            "rejected": len(report.rejected),
            "rejected_reasons": dict(sorted(reasons.items(), key=lambda kv: -kv[1])),
            "provenance_spans": report.provenance_spans,
            **figures,
        }


def _machine() -> str:
    mem = ""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            mem = f", {round(int(fh.readline().split()[1]) / 2**20)} GB"
    except (OSError, ValueError, IndexError):
        pass
    return f"{os.cpu_count()}-core {platform.machine()}{mem}, Python {platform.python_version()}, DuckDB {duckdb.__version__}"


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True,
            cwd=Path(__file__).resolve().parent,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patients", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, default=None, help="folder to keep the corpus and the rebuilt database in")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = measure(args.patients, seed=args.seed, folder=args.keep)
    result = {"machine": _machine(), "commit": _commit(), **result}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"machine: {result['machine']}; commit {result['commit']}")
    print(
        f"{result['patients']} patients, {result['documents']} documents; narrate {result['narrate_s']} s, "
        f"ingest {result['ingest_s']} s; {result['rejected']} rejected; {result['provenance_spans']} provenance spans"
    )
    o = result["overall"]
    print(f"overall: precision {o['precision']:.4f}  recall {o['recall']:.4f}  ({o['correct']}/{o['rebuilt']} rebuilt, {o['true']} true cells)")
    print("| table | rows (true / rebuilt / exact) | precision | recall | columns below 1.0 (P / R) |")
    print("|---|---|---|---|---|")
    for name, t in result["tables"].items():
        weak = ", ".join(
            f"{c} {s['precision']:.4f} / {s['recall']:.4f}"
            for c, s in t["columns"].items()
            if s["precision"] < 1 or s["recall"] < 1
        ) or "-"
        print(f"| {name} | {t['rows_true']} / {t['rows_rebuilt']} / {t['rows_exact']} | {t['precision']:.4f} | {t['recall']:.4f} | {weak} |")
    if result["rejected_reasons"]:
        print("rejected: " + "; ".join(f"{k} x{v}" for k, v in result["rejected_reasons"].items()))


if __name__ == "__main__":
    main()
