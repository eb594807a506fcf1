"""Execution accuracy of the offline parser's grouped and summed readings on Spider train questions.

Run: ``python -m benchmarks.spider_grouped --partition tune|heldout-open|sealed|dp [--values real|placeholder] [--k 5] [--json] [--failures]``
or ``python -m benchmarks.spider_grouped --split dev`` (the Spider dev questions: no grouped rule was written from them)
(``--learn-cues`` prints the cue tables that :mod:`pimento.nl.aggregate_cues` was written from,
from the ``tune`` questions only; ``--order rules|learned`` picks the readings' order, default
:data:`pimento.nl.aggregate_ranker.DEFAULT_ON`; ``--failures`` is refused on ``heldout-open`` and
``sealed``, measured in aggregate only).

Questions kept: Spider train (or, with ``--split dev``, dev) questions whose gold SQL (MySQL dialect; SQLite for dev) parses with
:func:`~pimento.sql.parse.parse_aggregate_query` into a grouped COUNT or a SUM/AVG (grouped or
not); scalar counts are ``nl_spider``'s. The databases are split by :func:`benchmarks.nl_spider.in_partition`.
For each question :func:`~pimento.nl.translate_aggregate` returns up to k candidates; a candidate
is correct when its SQL, rendered for SQLite, returns the same multiset of rows as the gold SQL on
the Spider SQLite database, each row compared as a multiset of values (the gold may list the
aggregate before the group columns; the IR renders group columns first). Values (``--values``): a
:class:`~pimento.nl.ValueIndex` from the Spider database itself, or with every text value a
placeholder, as a small DP synthetic copy gives (as ``nl_spider``). The filtered
question list is cached under the system temporary folder (keyed by the CSV's size and time).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks._spider import COUNT_CALL, DEFAULT_SPIDER, SpiderItem, connect_read_only, db_path, read_split, split_dialect, to_sqlite
from benchmarks.nl_spider import PARTITIONS, NlSpiderReport, candidate_hits, in_partition, open_database, tally, timed_candidates
from pimento.engines import open_engine
from pimento.errors import NotACountingQuestion, PimentoError
from pimento.nl.aggregate_readings import translate_aggregate
from pimento.sql.ir import AggregateKind
from pimento.sql.parse import parse_aggregate_query, parse_count_query

__all__ = ["load_questions", "main", "rows_key", "run", "scalar_false_readings"]


def rows_key(rows: list[tuple[Any, ...]]) -> Counter[tuple[str, ...]]:
    """The multiset of rows, each row a sorted tuple of its values' reprs (column order ignored)."""
    return Counter(tuple(sorted(repr(v) for v in row)) for row in rows)


def _cache_file(spider: Path, split: str = "train") -> Path:
    source = spider / "train" / "train_queries.csv" if split == "train" else spider / "dev" / "dev.json"
    stat = source.stat()
    tag = hashlib.sha256(f"{source.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|v1".encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"pimento-spider-grouped-{tag}.json"


def load_questions(spider: Path, split: str = "train") -> list[dict[str, Any]]:
    """``split``'s questions whose gold SQL is a grouped COUNT or a SUM/AVG in the supported class (cached)."""
    cache = _cache_file(spider, split)
    if cache.exists():
        return list(json.loads(cache.read_text()))
    catalogs: dict[str, Any] = {}
    out = []
    for item in read_split(spider, split):
        if item.db not in catalogs:
            engine = open_engine(str(db_path(spider, split, item.db)))
            try:
                catalogs[item.db] = engine.introspect()
            finally:
                engine.close()
        try:
            query = parse_aggregate_query(item.gold, catalogs[item.db], dialect=split_dialect(split))
        except PimentoError:
            continue
        if query.kind is AggregateKind.COUNT and not query.group_by:
            continue
        out.append({"db": item.db, "question": item.question, "gold": item.gold, "kind": query.kind.value, "groups": len(query.group_by)})
    cache.write_text(json.dumps(out))
    return out


def in_part(split: str, db: str, partition: str) -> bool:
    """Whether a question of ``split``'s database ``db`` is measured: every dev question; a train
    question when its database is in ``partition``."""
    return split == "dev" or in_partition(db, partition)


def run(
    spider: Path, partition: str, *, k: int = 5, values: str = "real", split: str = "train", learned: bool | None = None
) -> tuple[NlSpiderReport, dict[str, list[int]]]:
    """The report over ``partition``'s questions (``split`` dev: all of them), and per kind
    (count/sum/avg) [questions, top-1, top-k]. ``learned``: as :func:`translate_aggregate`'s."""
    report = NlSpiderReport(split, k)
    by_kind: dict[str, list[int]] = {}
    opened: dict[str, Any] = {}
    for q in load_questions(spider, split):
        if not in_part(split, q["db"], partition):
            continue
        path = db_path(spider, split, q["db"])
        if q["db"] not in opened:
            catalog, index, seconds = open_database(path, max_values=2000, values=values)
            opened[q["db"]] = catalog, index
            report.index_seconds += seconds
        catalog, index = opened[q["db"]]
        con = connect_read_only(path)
        try:
            gold = rows_key(con.execute(to_sqlite(q["gold"], split_dialect(split))).fetchall())
            report.total += 1
            candidates = timed_candidates(
                report, lambda: translate_aggregate(q["question"], catalog, values=index, k=k, learned=learned), NotACountingQuestion
            )
            hits = candidate_hits(con, candidates, lambda rows: rows_key(rows) == gold)
            top1, topk = tally(report, SpiderItem(q["db"], q["question"], q["gold"]), candidates, hits)
            shape = q["kind"] + ("-grouped" if q["groups"] else "")
            for key in (shape, "all") + (("grouped (any aggregate)",) if q["groups"] else ()):
                stats = by_kind.setdefault(key, [0, 0, 0])
                stats[0] += 1
                stats[1] += top1
                stats[2] += topk
            stats = report.per_db[q["db"]]
            stats[0] += 1
            stats[1] += top1
            stats[2] += topk
        finally:
            con.close()
    return report, by_kind


def scalar_false_readings(spider: Path, partition: str, split: str = "train") -> tuple[int, int]:
    """(scalar counting questions of ``partition``, how many of them got an aggregate reading):
    the questions whose gold SQL is a plain COUNT (``parse_count_query`` accepts it) should get none."""
    opened: dict[str, Any] = {}
    total = flagged = 0
    for item in read_split(spider, split):
        if not in_part(split, item.db, partition) or not COUNT_CALL.search(item.gold):
            continue
        if item.db not in opened:
            engine = open_engine(str(db_path(spider, split, item.db)))
            try:
                opened[item.db] = engine.introspect()
            finally:
                engine.close()
        try:
            parse_count_query(item.gold, opened[item.db], dialect=split_dialect(split))
        except PimentoError:
            continue
        total += 1
        flagged += bool(translate_aggregate(item.question, opened[item.db], k=1))
    return total, flagged


def markdown(partition: str, report: NlSpiderReport, by_kind: dict[str, list[int]], values: str = "real") -> str:
    d = report.to_dict()
    lines = [
        f"- partition: {partition}; values: {values}; questions: {d['questions']}; no candidate: {d['no_candidate']}",
        f"- latency per question (ms): median {d['latency_ms']['median']}, p95 {d['latency_ms']['p95']}, max {d['latency_ms']['max']}",
        "",
        f"| gold shape | questions | top-1 | top-{d['k']} |",
        "|---|---:|---:|---:|",
    ]
    for key in sorted(by_kind, key=lambda s: (s == "all", s.startswith("grouped"), s)):
        n, t1, tk = by_kind[key]
        lines.append(f"| {key} | {n} | {t1} ({100 * t1 / n:.1f}%) | {tk} ({100 * tk / n:.1f}%) |")
    return "\n".join(lines)


def learn_cues(spider: Path) -> str:
    """The cue tables of the ``tune`` questions: the two words before the word naming the gold
    GROUP BY column, and the words around the aggregate words of SUM/AVG questions."""
    from pimento.nl.text import lemma, name_words, tokenize

    before: Counter[str] = Counter()
    around: Counter[tuple[str, str]] = Counter()
    for q in load_questions(spider):
        if not in_partition(q["db"], "tune"):
            continue
        tokens = tokenize(q["question"])
        words = [t.lower for t in tokens]
        if q["groups"]:
            match = re.search(r"group\s+by\s+([^,\s]+)", q["gold"], re.IGNORECASE)
            column = match.group(1).split(".")[-1].strip("`") if match else ""
            names = set(name_words(column)) | {column.lower()}
            at = next((i for i, t in enumerate(tokens) if t.kind == "word" and (t.lemma in names or lemma(t.lower) in names)), None)
            before[" ".join(words[max(0, at - 2) : at]) if at is not None else "<not named>"] += 1
        if q["kind"] != "count":
            for i, w in enumerate(words):
                if w in ("average", "mean", "total", "sum", "much", "avg"):
                    around[(q["kind"], " ".join(words[max(0, i - 1) : i + 2]))] += 1
    lines = ["two words before the group column's name (count):"]
    lines += [f"  {n:3d}  {w}" for w, n in before.most_common(40)]
    lines += ["words around the aggregate word (kind, count):"]
    lines += [f"  {n:3d}  {kind}: {w}" for (kind, w), n in around.most_common(40)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spider", type=Path, default=DEFAULT_SPIDER)
    parser.add_argument("--split", choices=("train", "dev"), default="train", help="Spider train (by --partition) or all of Spider dev")
    parser.add_argument("--partition", choices=[p for p in PARTITIONS if p != "heldout"], default="tune")
    parser.add_argument(
        "--order", choices=("default", "rules", "learned"), default="default",
        help="the readings' order: translate_aggregate's default, the rule scores, or the learned ranker",
    )
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--values", choices=("real", "placeholder"), default="real",
        help="value index from the Spider database, or with every text value a placeholder (as a small DP synthetic copy)",
    )
    parser.add_argument("--failures", action="store_true", help="print the questions whose top-1 is wrong (not on sealed)")
    parser.add_argument("--learn-cues", action="store_true", help="print the cue tables learned from the tune questions")
    args = parser.parse_args()
    if args.learn_cues:
        print(learn_cues(args.spider))
        return
    sealed = args.split == "train" and args.partition in ("sealed", "heldout-open")
    if args.failures and sealed:
        parser.error("--failures is refused on the held-out databases (sealed, heldout-open): only their aggregate figure is measured")
    learned = {"default": None, "rules": False, "learned": True}[args.order]
    report, by_kind = run(args.spider, args.partition, k=args.k, values=args.values, split=args.split, learned=learned)
    scalar, flagged = scalar_false_readings(args.spider, args.partition, args.split)
    if sealed:
        report.failures = []
    if args.json:
        print(json.dumps({**report.to_dict(), "by_kind": by_kind, "scalar_counts": scalar, "scalar_counts_read_as_aggregate": flagged}, indent=2))
        return
    print(markdown(args.partition if args.split == "train" else "Spider dev", report, by_kind, args.values))
    print(f"\n- scalar counting questions (gold a plain COUNT) given an aggregate reading: {flagged} of {scalar}")
    if args.failures:
        for f in report.failures:
            print(f"\n[{f['db']}] {f['question']}\n  gold: {f['gold']}\n  top:  {f['top']}\n  correct at rank: {f['rank_of_correct']}")


if __name__ == "__main__":
    main()
