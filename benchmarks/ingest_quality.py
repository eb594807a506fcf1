"""Cell-level precision and recall of ``pimento ingest`` rebuilding the demo hospital from its corpus.

    python -m benchmarks.ingest_quality --patients 1000 [--seed 0] [--keep DIR] [--json]

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
import random
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb

from pimento.demo.corpus import narrated_rows, write_demo_corpus
from pimento.demo.hospital import TABLES
from pimento.errors import LLMError
from pimento.ingest import LLMExtractor, ingest, open_extractor
from pimento.ingest.target import key_of, load_target
from pimento.llm import OpenAIBackend, RecordingBackend, ReplayBackend
from pimento.llm.replay import fixture_path
from pimento.llm.usage import Usage

__all__ = ["compare", "main", "measure"]


def _cells(con: duckdb.DuckDBPyConnection, table: str, key: tuple[str, ...]) -> dict[tuple, dict[str, Any]]:
    cursor = con.execute(f'SELECT * FROM "{table}"')
    columns = [d[0] for d in cursor.description]
    rows = {}
    for values in cursor.fetchall():
        record = dict(zip(columns, values))
        rows[tuple(record[k] for k in key)] = {c: v for c, v in record.items() if v is not None}
    return rows


def compare(
    truth: str | Path, rebuilt: str | Path, schema: str | Path, *, only: dict[str, set[tuple]] | None = None
) -> dict[str, Any]:
    """Per table and column: true, rebuilt and correct cells, precision and recall; and row counts.

    ``only`` (table -> row keys) restricts the comparison to those rows, for a sample of documents:
    the true rows are the listed ones, the rebuilt rows the listed ones plus every row the truth
    does not have (a row the extractor made up counts against precision); other tables are left out.
    """
    catalog = load_target(schema).catalog
    t_con = duckdb.connect(str(truth), read_only=True)
    r_con = duckdb.connect(str(rebuilt), read_only=True)
    tables: dict[str, Any] = {}
    try:
        for name in TABLES:
            if only is not None and name not in only:
                continue
            key = key_of(catalog.table(name))
            true_rows = _cells(t_con, name, key)
            got_rows = _cells(r_con, name, key)
            if only is not None:
                keep = only[name]
                got_rows = {k: v for k, v in got_rows.items() if k in keep or k not in true_rows}
                true_rows = {k: v for k, v in true_rows.items() if k in keep}
            columns: dict[str, dict[str, Any]] = {
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
        assert info.schema_path is not None and info.patterns_path is not None and info.source_path is not None
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


# --------------------------------------------------------------------------- the LLM extractor, on a sample

#: The kinds of document the LLM sample draws from (``documents/<kind>.jsonl`` of the demo corpus).
LLM_KINDS: tuple[str, ...] = (
    "registrations", "staff", "diagnoses", "visit-notes", "prescriptions", "discharge-letters",
    "care-relationships", "studies",
)


def sample_documents(documents: Path, per_kind: int, seed: int) -> list[str]:
    """``per_kind`` document ids of each of :data:`LLM_KINDS`, drawn with ``random.Random(seed)``."""
    rng = random.Random(seed)
    chosen: list[str] = []
    for kind in LLM_KINDS:
        ids = [json.loads(line)["id"] for line in (documents / f"{kind}.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
        chosen += sorted(rng.sample(ids, min(per_kind, len(ids))))
    return chosen


def measure_llm(
    backend: Any,
    *,
    patients: int = 40,
    seed: int = 0,
    per_kind: int = 4,
    max_tokens: int = 1024,
    folder: Path | None = None,
) -> dict[str, Any]:
    """The LLM extractor on a sample of the demo corpus, resolved against the rest of it.

    The demo hospital of ``patients`` is narrated; ``per_kind`` documents of each of
    :data:`LLM_KINDS` are set aside. The other documents are ingested with the offline extractor,
    then the whole corpus is ingested again into the same database with the LLM extractor: only the
    sample is new, so only the sample is read by ``backend``, and its rows are resolved against
    (and checked by the keys of) the rest, as a grown corpus is. The comparison is restricted to
    the rows the sampled documents narrate (:func:`pimento.demo.corpus.narrated_rows`), plus any
    row the truth does not have. Deterministic given the backend's answers: a replay of the
    recorded exchanges gives the same figures. ``backend=None`` reads the sample with the offline
    extractor instead (the baseline on the same documents).
    """
    with tempfile.TemporaryDirectory(prefix="pimento-ingest-llm-") as tmp:
        where = folder or Path(tmp)
        info = write_demo_corpus(where / "corpus", patients=patients, seed=seed, overwrite=True)
        schema, patterns, source = info.schema_path, info.patterns_path, info.source_path
        assert schema is not None and patterns is not None and source is not None  # write_demo_corpus sets them
        documents = where / "corpus" / "documents"
        sample = sample_documents(documents, per_kind, seed)
        chosen = set(sample)
        rest = where / "rest"
        if rest.exists():
            for old in rest.glob("*.jsonl"):
                old.unlink()
        rest.mkdir(parents=True, exist_ok=True)
        for path in sorted(documents.glob("*.jsonl")):
            kept = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip() and json.loads(line)["id"] not in chosen]
            (rest / path.name).write_text("".join(line + "\n" for line in kept), encoding="utf-8")
        rebuilt = where / "rebuilt.duckdb"
        if rebuilt.exists():
            rebuilt.unlink()
        ingest(rest, schema, rebuilt, patterns=patterns)
        target = load_target(schema)
        usage = Usage()
        extractor: Any = (
            LLMExtractor(backend, target.catalog, max_tokens=max_tokens, usage=usage) if backend is not None
            else open_extractor("offline", target, patterns=patterns)  # the same protocol, offline: the baseline
        )
        started = time.perf_counter()
        report = ingest(documents, schema, rebuilt, extractor=extractor)
        seconds = time.perf_counter() - started
        narrated = narrated_rows(source)
        only: dict[str, set[tuple]] = {}
        for doc_id in sample:
            for table, row in narrated[doc_id]:
                only.setdefault(table, set()).add(tuple(row[k] for k in key_of(target.catalog.table(table))))
        figures = compare(source, rebuilt, schema, only=only)
        return {
            "patients": patients,
            "seed": seed,
            "per_kind": per_kind,
            "max_tokens": max_tokens,
            "sample": sample,
            "documents": len(sample),
            "failed_documents": [{"doc_id": d, "reason": r} for d, r in report.failed_documents],
            "mentions": report.mentions,
            "unlocated_values": report.unlocated_values,
            "rejected_rows": len(report.rejected),
            "llm_seconds": round(seconds, 1),
            "usage": usage.to_dict(),
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
    parser.add_argument("--patients", type=int, default=None, help="default 1000; 40 with --llm")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, default=None, help="folder to keep the corpus and the rebuilt database in")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--llm", default=None, help="measure the LLM extractor on a sample instead: http(s)://.../v1, replay:DIR, or offline (the same sample read offline)")
    parser.add_argument("--per-kind", type=int, default=4, help="--llm: documents per kind in the sample")
    parser.add_argument("--max-tokens", type=int, default=1024, help="--llm: max_tokens of each extraction request")
    parser.add_argument("--json-mode", default="json_object", help="--llm: json_schema | json_object | none")
    parser.add_argument("--fold-system", action="store_true", help="--llm: system message into the first user turn (Gemma)")
    parser.add_argument("--timeout", type=float, default=300.0, help="--llm: seconds per request")
    parser.add_argument("--record", type=Path, default=None, help="--llm: record the exchanges (and summary.json) here")
    args = parser.parse_args(argv)
    if args.llm:
        _main_llm(args)
        return
    result = measure(args.patients or 1000, seed=args.seed, folder=args.keep)
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


class _Resumable:
    """Answers from the fixtures already recorded in ``directory``, else asks ``recording`` (a resumed run
    pays only for the documents it has not recorded yet; the answers are the same either way)."""

    def __init__(self, directory: Path, recording: Any) -> None:
        self.replay = ReplayBackend(directory)
        self.recording = recording
        self.name = recording.name

    def complete(self, request: Any) -> Any:
        if fixture_path(self.replay.directory, request).is_file():  # type: ignore[arg-type]
            try:
                return self.replay.complete(request)
            except LLMError:
                pass
        return self.recording.complete(request)


def _main_llm(args: argparse.Namespace) -> None:
    if args.llm == "offline":
        backend: Any = None
    elif args.llm.startswith("replay:"):
        backend = ReplayBackend(args.llm.removeprefix("replay:"))
    else:
        backend = OpenAIBackend(args.llm, timeout_s=args.timeout, max_retries=0, json_mode=args.json_mode,
                                fold_system=args.fold_system)
        if args.record is not None:
            backend = _Resumable(args.record, RecordingBackend(backend, args.record))
    patients = args.patients or 40  # a small hospital: the rest of the corpus is ingested offline first
    result = measure_llm(backend, patients=patients, seed=args.seed, per_kind=args.per_kind, max_tokens=args.max_tokens,
                         folder=args.keep)
    result = {"machine": _machine(), "commit": _commit(), "llm": args.llm, "json_mode": args.json_mode, **result}
    if args.record is not None:
        (args.record / "summary.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(result, indent=2))
        return
    o = result["overall"]
    print(f"machine: {result['machine']}; commit {result['commit']}; {args.llm}")
    print(f"{result['documents']} documents ({len(result['failed_documents'])} failed), {result['llm_seconds']} s; "
          f"usage {result['usage']}")
    print(f"overall: precision {o['precision']:.4f}  recall {o['recall']:.4f}  ({o['correct']}/{o['rebuilt']} rebuilt, {o['true']} true cells)")
    for name, t in result["tables"].items():
        cols = ", ".join(f"{c} {s['precision']:.2f}/{s['recall']:.2f}" for c, s in t["columns"].items() if s["true"] or s["rebuilt"])
        print(f"| {name} | {t['rows_true']} / {t['rows_rebuilt']} / {t['rows_exact']} | {t['precision']:.4f} | {t['recall']:.4f} | {cols} |")


if __name__ == "__main__":
    main()
