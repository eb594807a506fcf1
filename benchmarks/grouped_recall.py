"""Oracle recall of the offline parser's grouped and summed readings at k = 1, 5, 20, and the learned order's top-1.

Run: ``python -m benchmarks.grouped_recall [--values real|placeholder] [--cache /tmp/grouped_recall_real.jsonl] [--parts train,dev] [--json]``
(``--parts``: the parts printed; ``train,dev`` writes the records and shows nothing of the held-out parts, for a
generation change that must be judged on train and dev before the held-out parts are scored)

Questions and correctness exactly as in :mod:`benchmarks.spider_grouped`: Spider questions whose
gold SQL is a grouped COUNT or a SUM/AVG in the supported class; a reading is correct when its SQL
returns the gold's multiset of rows (each row a multiset of values) on the Spider SQLite database.
Oracle recall at k: the share of questions with a correct reading among the first k of the rule
order (``translate_aggregate(..., learned=False)``, k up to :data:`K_MAX`).

**The split of this work (issue 25's learned order), fixed before the first experiment** (:func:`ranker_part`):

- ``train``: the Spider train partition ``tune`` (every grouped rule and cue was written from its
  questions and failures);
- ``dev``: Spider dev (20 databases) and the Spider train partition ``dp`` (12 databases): no
  grouped rule was written from them (``dp``'s questions tuned the counting parser's open value
  linking, which the readings' bodies use). Settings are picked by 5-fold cross-validation by
  database over ``train`` + ``dev``; the shipped model is fitted on both;
- ``heldout-open`` and ``sealed``: the partitions of :func:`benchmarks.nl_spider.in_partition`
  that no grouped rule was written from (``heldout-open``'s aggregate was measured after the rules
  were fixed). Never trained or tuned on; the training script scores them once, for the chosen
  model, in aggregate only.

Records (one JSON line per question: its part, kind, whether grouped, the hit of each reading, each
reading's features from :func:`pimento.nl.aggregate_ranker.candidate_features`, with the reading's
answer on the Spider database standing in for its answer on the synthetic copy) are cached in
``--cache``; ``scripts/train_aggregate_ranker.py`` trains on them. Records hold no question text.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks._spider import DEFAULT_SPIDER, connect_read_only, db_path, split_dialect, to_sqlite
from benchmarks.nl_spider import in_partition, open_database
from benchmarks.parser_recall import cached_records, read_records, reordered_recall
from benchmarks.parser_recall import recall_table as counts_recall_table
from benchmarks.spider_grouped import load_questions, rows_key
from pimento.errors import NotACountingQuestion
from pimento.nl import aggregate_ranker
from pimento.nl.aggregate_readings import translate_aggregate

__all__ = ["K_MAX", "PARTS", "RECALL_AT", "generate", "learned_recall", "ranker_part", "read_records", "recall_table"]

#: the most readings asked of the parser per question (the learned ranker's pool)
K_MAX = aggregate_ranker.POOL
#: the depths oracle recall is reported at
RECALL_AT = (1, 5, 20)
#: the parts of :func:`ranker_part`, in report order
PARTS = ("train", "dev", "heldout-open", "sealed")


def ranker_part(split: str, db_id: str) -> str:
    """The part of this work's split a database belongs to (module doc)."""
    if split == "dev" or in_partition(db_id, "dp"):
        return "dev"
    for part in ("tune", "heldout-open", "sealed"):
        if in_partition(db_id, part):
            return "train" if part == "tune" else part
    raise ValueError(f"{db_id!r} is in no partition")  # pragma: no cover - the partitions cover train


def _run(con: sqlite3.Connection, sql: str) -> list[tuple[Any, ...]] | Exception:
    try:
        return con.execute(sql).fetchall()
    except sqlite3.Error as exc:
        return exc


def generate(spider: Path, *, values: str, splits: tuple[str, ...] = ("dev", "train"), limit: int | None = None) -> Iterator[dict[str, Any]]:
    """One record per grouped/summed question of ``splits`` (``limit``: the first n per split, for tests)."""
    for split in splits:
        opened: dict[str, Any] = {}
        questions = load_questions(spider, split)
        for q in questions[:limit] if limit else questions:
            path = db_path(spider, split, q["db"])
            if q["db"] not in opened:
                opened[q["db"]] = open_database(path, max_values=2000, values=values)[:2]
            catalog, index = opened[q["db"]]
            con = connect_read_only(path)
            try:
                gold = rows_key(con.execute(to_sqlite(q["gold"], split_dialect(split))).fetchall())
                try:
                    cands = translate_aggregate(q["question"], catalog, values=index, k=K_MAX, learned=False)
                except NotACountingQuestion:
                    cands = []
                answers = [_run(con, c.query.to_sql("sqlite")) for c in cands]
            finally:
                con.close()
            hits = [not isinstance(a, Exception) and rows_key(a) == gold for a in answers]
            yield {
                "split": split,
                "db": q["db"],
                "part": ranker_part(split, q["db"]),
                "kind": q["kind"],
                "grouped": bool(q["groups"]),
                "hits": hits,
                "features": aggregate_ranker.candidate_features(q["question"], catalog, cands, answers),
            }


def _grouped(record: dict[str, Any]) -> bool:
    return bool(record["grouped"])


def recall_table(records: list[dict[str, Any]], *, grouped_only: bool = False) -> dict[str, dict[str, Any]]:
    """Per part: questions, oracle recall at each of :data:`RECALL_AT`, questions with no reading
    (:func:`benchmarks.parser_recall.recall_table` over this benchmark's parts)."""
    return counts_recall_table(records, parts=PARTS, at=RECALL_AT, **({"keep": _grouped} if grouped_only else {}))


def learned_recall(records: list[dict[str, Any]], model: dict[str, Any], *, grouped_only: bool = False) -> dict[str, dict[str, float]]:
    """Per part, top-1 and top-5 (%) when the readings are reordered by ``model`` (ties keep the
    rule order, as :func:`pimento.nl.aggregate_ranker.rerank`)."""
    picks = [aggregate_ranker.FEATURES.index(f) for f in model["features"]]
    return reordered_recall(records, lambda f: aggregate_ranker.score(model, [f[i] for i in picks]), pool=K_MAX, parts=PARTS,
                            **({"keep": _grouped} if grouped_only else {}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spider", type=Path, default=DEFAULT_SPIDER)
    parser.add_argument("--values", choices=("real", "placeholder"), default="real")
    parser.add_argument("--cache", type=Path, default=None, help="records file (JSON lines): read if present, else written")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--parts", default=",".join(PARTS), help="comma-separated parts to print (default all)")
    args = parser.parse_args()
    shown = [p for p in args.parts.split(",") if p]
    if not set(shown) <= set(PARTS):
        parser.error(f"--parts takes some of {', '.join(PARTS)}")
    cache = args.cache or Path(f"/tmp/grouped_recall_{args.values}.jsonl")
    records = cached_records(cache, lambda: generate(args.spider, values=args.values))
    tables = {g: {p: row for p, row in recall_table(records, grouped_only=g).items() if p in shown} for g in (False, True)}
    try:
        model: dict[str, Any] | None = aggregate_ranker.load_model()
    except FileNotFoundError:
        model = None
    learned = {g: {p: v for p, v in learned_recall(records, model, grouped_only=g).items() if p in shown} for g in (False, True)} if model else None
    if args.json:
        json.dump({"values": args.values, "recall": tables, "learned": learned}, sys.stdout, indent=2)
        return
    print(f"values: {args.values}; readings per question: up to {K_MAX}\n")
    ks = " | ".join(f"recall@{k}" for k in RECALL_AT)
    print(f"| part | questions | {ks} | learned top-1 | learned top-5 | no reading |")
    print("|---|---:|" + "---:|" * len(RECALL_AT) + "---:|---:|---:|")
    for grouped, table in tables.items():
        for part, row in table.items():
            cells = " | ".join(f"{row['recall_pct'][str(k)]}%" for k in RECALL_AT)
            lr = learned[grouped][part] if learned else {"1": "-", "5": "-"}
            label = f"{part} ({'grouped' if grouped else 'all'})"
            print(f"| {label} | {row['questions']} | {cells} | {lr['1']}% | {lr['5']}% | {row['no_candidate']} |")


if __name__ == "__main__":
    main()
