"""Which evidence kinds of a data grounding are right, by the gold (issue 27, POLICY10; comment kinds: POLICY11).

    python -m benchmarks.cql_evidence                 # every development text with a gold, the shipped examples, the bank
    python -m benchmarks.cql_evidence --out evidence.json

Every data phrase of every extracted norm (held ones included: their proposals) is grounded with an evidence
kind (:data:`pimento.policy.extract_offline.ground.EVIDENCE`); a grounded column is **right** when the gold norm
of the same clause holds it. The table gives, per kind and sign, the phrases, the columns, the right columns
(precision) and the phrases all of whose columns are right. The kinds on which the draft enforces a permit
(:data:`pimento.policy.extract_offline.STRONG`) were chosen from this table. Never run on the frozen texts.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import defaultdict
from pathlib import Path
from collections.abc import Callable
from typing import Any

import duckdb
import yaml

from benchmarks.cql_dev import DEV
from benchmarks.cql_extract import _builders, items
from pimento.engines.database import load_database
from pimento.policy import example_policy_path
from pimento.policy.extract_offline import OfflineExtraction, extract_policy_offline

__all__ = ["evidence_cli", "evidence_rows", "extracted", "main", "tally"]

ROOT = Path(__file__).resolve().parent.parent / "tests"
DEV_ROOT = ROOT / "data" / "policies"
BANK = ROOT / "fixtures" / "cql_extract"


def _texts(workdir: Path, dev: tuple[str, ...]) -> list[tuple[str, str, dict[str, Any], Path]]:
    """(name, text, gold, database) of the development texts, the shipped examples and the bank."""
    out = []
    sources = [(n, DEV_ROOT / n / "policy.txt", DEV_ROOT / n / "gold.yaml", DEV_ROOT / n / "schema.sql") for n in dev]
    sources.append(("bank", BANK / "bank_glba.txt", BANK / "bank_glba.yaml", BANK / "bank_schema.sql"))
    for name, text, gold, schema in sources:
        db = workdir / name / f"{name}.duckdb"
        db.parent.mkdir(parents=True, exist_ok=True)
        if not db.exists():
            con = duckdb.connect(str(db))
            con.execute(schema.read_text(encoding="utf-8"))
            con.close()
        out.append((name, text.read_text(encoding="utf-8"), yaml.safe_load(gold.read_text(encoding="utf-8")), db))
    for name, (example, build) in _builders().items():
        db = workdir / name / f"{name}.duckdb"
        db.parent.mkdir(parents=True, exist_ok=True)
        if not db.exists():
            build(db)
        path = Path(example_policy_path(example))
        out.append((name, path.with_suffix(".txt").read_text(encoding="utf-8"),
                    yaml.safe_load(path.read_text(encoding="utf-8")), db))
    return out


def extracted(text: str, db: Path) -> OfflineExtraction:
    """The offline extraction (year 2024) of ``text`` on the database at ``db`` (both tallies read it)."""
    database = load_database(db)
    try:
        return extract_policy_offline(text, database.catalog, engine=database.engine, name="x", year=2024)
    finally:
        database.close()


def evidence_rows(text: str, gold: dict[str, Any], db: Path, name: str = "") -> list[dict[str, Any]]:
    """One row per data phrase of the extraction: its clause, sign, evidence kind, columns and right columns."""
    result = extracted(text, db)
    gold_data = {n["id"]: set(items(gold, n)["data"]) for n in gold["norms"]}
    rows = []
    for e in result.evidence:
        locs = {(loc["relation"].lower(), loc["attribute"].lower()) for loc in e["locations"]}
        right = locs & gold_data.get(e["clause"], set())
        rows.append({"text": name, "clause": e["clause"], "sign": e["sign"], "phrase": e["phrase"],
                     "evidence": e["evidence"], "columns": len(locs), "right": len(right),
                     "in_gold": e["clause"] in gold_data})
    return rows


def tally(rows: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, int]]:
    """(sign, kind) -> phrases, columns, right columns, phrases all right, texts (rows of clauses the gold has)."""
    out: dict[tuple[str, str], dict[str, Any]] = defaultdict(lambda: {"phrases": 0, "columns": 0, "right": 0,
                                                                      "all_right": 0, "texts": set()})
    for r in rows:
        if not r["in_gold"] or not r["columns"]:
            continue
        t = out[(r["sign"], r["evidence"])]
        t["phrases"] += 1
        t["columns"] += r["columns"]
        t["right"] += r["right"]
        t["all_right"] += r["right"] == r["columns"]
        t["texts"].add(r["text"])
    return out


def _table(t: dict[tuple[str, str], dict[str, Any]]) -> str:
    lines = ["| Sign | Evidence | Phrases | Columns | Right (precision) | Phrases all right | Texts |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for (sign, kind), v in sorted(t.items(), key=lambda kv: (kv[0][0], -kv[1]["right"] / kv[1]["columns"])):
        lines.append(f"| {sign} | {kind} | {v['phrases']} | {v['columns']} | {v['right']} "
                     f"({100 * v['right'] / v['columns']:.1f}%) | {v['all_right']}/{v['phrases']} | {len(v['texts'])} |")
    return "\n".join(lines)


def evidence_cli(doc: str | None, rows_of: Callable[..., list[dict[str, Any]]],
                 table: Callable[[list[dict[str, Any]]], str], argv: list[str] | None) -> None:
    """The command line of an evidence tally (this module and :mod:`benchmarks.cql_role_evidence`): ``rows_of(text,
    gold, db, name)`` on every text of :func:`_texts`, ``table(rows)`` printed, the rows written as JSON with
    ``--out``."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--out", help="write the rows (JSON) here")
    parser.add_argument("--keep", help="build the databases in this folder (default: a temporary one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        rows = [r for name, text, gold, db in _texts(work, DEV) for r in rows_of(text, gold, db, name)]
    print(table(rows))
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    evidence_cli(__doc__, evidence_rows, lambda rows: _table(tally(rows)), argv)


if __name__ == "__main__":
    main()
