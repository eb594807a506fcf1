"""Oracle recall of the offline counting parser at k = 1, 5, 20, 50, and the learned ranker's top-1.

Run: ``python -m benchmarks.parser_recall [--values real|placeholder] [--cache /tmp/parser_recall.jsonl] [--json]``

Questions and correctness exactly as in :mod:`benchmarks.nl_spider`: Spider questions whose gold
SQL is a DP-compatible count; a candidate is correct when its SQL, rendered for SQLite, returns
the same rows as the gold SQL on the Spider SQLite database. Oracle recall at k: the share of
questions with a correct candidate among the first k of the rule order (``translate(...,
learned=False)``, k up to :data:`K_MAX`).

**The split of this work (issue 27), fixed before the first experiment** (:func:`ranker_part`):

- ``train``: the databases every hand-written rule was written from: Spider dev (its weights were
  set by hand on it) and the Spider train partitions ``tune`` and ``dp`` of
  :func:`benchmarks.nl_spider.in_partition`;
- ``dev`` (settings are picked here, and by group cross-validation on ``train``): the partition
  ``heldout-open`` (its failures were studied by round-2 and round-3 rules, so it is not unseen);
- ``sealed``: the partition ``sealed`` (23 databases). No rule was ever written from it and it
  was never read question by question; its AGGREGATE rule-order figure was measured three times
  (docs/benchmarks.md, rounds 1-3), which tells nothing about a model trained without it. It is
  the only Spider data here that no rule saw. The learned ranker never trains or picks a setting
  on it; this module and the training script print only its aggregates.

Records (one JSON line per question: its part, the hit of each candidate, each candidate's
features from :func:`pimento.nl.count_ranker.candidate_features`) are cached in ``--cache``, as
generating and executing the candidates is the slow part; ``scripts/train_count_ranker.py``
trains on them. Features are computed from the question, the catalog and the candidates only
(literals come from the value index: Spider's own values with ``real``, placeholders with
``placeholder``, as a small DP synthetic copy gives).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks._spider import DEFAULT_SPIDER, connect_read_only, db_path, split_dialect, to_sqlite
from benchmarks.nl_spider import ParserReport, candidate_hits, in_partition, load_questions, open_database, timed_candidates
from pimento.errors import PimentoError
from pimento.nl import NotACountingQuestion, count_ranker, translate
from pimento.sql import parse_count_query

__all__ = ["K_MAX", "PARTS", "RECALL_AT", "cached_records", "generate", "learned_recall", "ranker_part", "read_records", "recall_table",
           "reordered_recall"]

#: the most candidates asked of the parser per question
K_MAX = 50
#: the depths oracle recall is reported at
RECALL_AT = (1, 5, 20, 50)
#: the parts of :func:`ranker_part`, in report order
PARTS = ("train", "dev", "sealed")


def ranker_part(split: str, db_id: str) -> str:
    """``train``, ``dev`` or ``sealed``: the part of this work's split a database belongs to (module doc)."""
    if split == "dev" or in_partition(db_id, "tune") or in_partition(db_id, "dp"):
        return "train"
    if in_partition(db_id, "heldout-open"):
        return "dev"
    if in_partition(db_id, "sealed"):
        return "sealed"
    raise ValueError(f"{db_id!r} is in no partition")  # pragma: no cover - the partitions cover train


def generate(spider: Path, *, values: str, splits: tuple[str, ...] = ("dev", "train"), limit: int | None = None) -> Iterator[dict[str, Any]]:
    """One record per counting question of ``splits`` (``limit``: the first n per split, for tests)."""
    for split in splits:
        dialect = split_dialect(split)
        opened: dict[str, Any] = {}
        questions = load_questions(spider, split)[:limit] if limit else load_questions(spider, split)
        for item in questions:
            path = db_path(spider, split, item.db)
            if item.db not in opened:
                opened[item.db] = open_database(path, max_values=2000, values=values)[:2]
            catalog, index = opened[item.db]
            try:
                parse_count_query(item.gold, catalog, dialect=dialect)
            except PimentoError:
                continue
            con = connect_read_only(path)
            try:
                gold = con.execute(to_sqlite(item.gold, dialect)).fetchall()
                report = ParserReport(split, K_MAX)
                cands = timed_candidates(
                    report, lambda: translate(item.question, catalog, values=index, k=K_MAX, learned=False), NotACountingQuestion
                )
                hits = candidate_hits(con, cands, lambda rows: rows == gold)
            finally:
                con.close()
            ranked = [(c.query, (c.score, c.explanation)) for c in cands]
            yield {
                "split": split,
                "db": item.db,
                "part": ranker_part(split, item.db),
                "hits": hits,
                "features": count_ranker.candidate_features(item.question, catalog, ranked),
            }


def read_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def cached_records(cache: Path, make: Callable[[], Iterator[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The records of ``cache`` (JSON lines), written from ``make()`` first when the file is absent."""
    if not cache.exists():
        with cache.open("w") as fh:
            for rec in make():
                fh.write(json.dumps(rec) + "\n")
    return read_records(cache)


def _everything(record: dict[str, Any]) -> bool:
    return True


def recall_table(records: list[dict[str, Any]], *, parts: tuple[str, ...] = PARTS, at: tuple[int, ...] = RECALL_AT,
                 keep: Callable[[dict[str, Any]], bool] = _everything) -> dict[str, dict[str, Any]]:
    """Per part: questions (those ``keep`` keeps), oracle recall at each k of ``at``, questions with no candidate."""
    out = {}
    for part in parts:
        rows = [r for r in records if r["part"] == part and keep(r)]
        n = len(rows)
        recall = {str(k): round(100 * sum(any(r["hits"][:k]) for r in rows) / n, 1) if n else 0.0 for k in at}
        out[part] = {"questions": n, "recall_pct": recall, "no_candidate": sum(not r["hits"] for r in rows)}
    return out


def reordered_recall(records: list[dict[str, Any]], score: Callable[[list[float]], float], *, pool: int,
                     parts: tuple[str, ...] = PARTS, keep: Callable[[dict[str, Any]], bool] = _everything) -> dict[str, dict[str, float]]:
    """Per part, top-1 and top-5 (%) when the first ``pool`` rule-ordered candidates of the questions ``keep`` keeps
    are reordered by ``score`` of their features (ties keep the rule order, as the rankers' ``rerank``)."""
    out = {}
    for part in parts:
        rows = [r for r in records if r["part"] == part and keep(r)]
        good = {1: 0, 5: 0}
        for r in rows:
            feats = r["features"][:pool]
            scores = [score(f) for f in feats]
            order = sorted(range(len(feats)), key=lambda i: (-scores[i], i))
            for k in good:
                good[k] += any(r["hits"][i] for i in order[:k])
        out[part] = {str(k): round(100 * v / len(rows), 1) if rows else 0.0 for k, v in good.items()}
    return out


def learned_recall(records: list[dict[str, Any]], model: dict[str, Any], pool: int = count_ranker.POOL) -> dict[str, dict[str, float]]:
    """:func:`reordered_recall` by the count ranker's ``model``."""
    return reordered_recall(records, lambda f: count_ranker.score(model, f), pool=pool)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spider", type=Path, default=DEFAULT_SPIDER)
    parser.add_argument("--values", choices=("real", "placeholder"), default="placeholder")
    parser.add_argument("--cache", type=Path, default=None, help="records file (JSON lines): read if present, else written")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cache = args.cache or Path(f"/tmp/parser_recall_{args.values}.jsonl")
    records = cached_records(cache, lambda: generate(args.spider, values=args.values))
    table = recall_table(records)
    learned = learned_recall(records, count_ranker.load_model())
    if args.json:
        json.dump({"values": args.values, "recall": table, "learned": learned}, sys.stdout, indent=2)
        return
    print(f"values: {args.values}; candidates per question: up to {K_MAX}; the learned ranker reorders the first {count_ranker.POOL}\n")
    ks = " | ".join(f"recall@{k}" for k in RECALL_AT)
    print(f"| part | questions | {ks} | learned top-1 | learned top-5 | no candidate |")
    print("|---|---:|" + "---:|" * len(RECALL_AT) + "---:|---:|---:|")
    for part, row in table.items():
        cells = " | ".join(f"{row['recall_pct'][str(k)]}%" for k in RECALL_AT)
        print(f"| {part} | {row['questions']} | {cells} | {learned[part]['1']}% | {learned[part]['5']}% | {row['no_candidate']} |")


if __name__ == "__main__":
    main()
