"""Execution accuracy of the offline SELECT parser on Spider select-project-join questions.

Run: ``python -m benchmarks.nl_select [--split dev|train] [--values real|placeholder] [--k 5] [--json]``

Questions kept (:func:`is_plain_spj`): the gold SQL parses (SQLite dialect for dev, MySQL for
train) as ONE SELECT with no GROUP BY, HAVING, ORDER BY, LIMIT, no aggregate function (COUNT
included: counts are measured by ``benchmarks.nl_spider``), no set operation (UNION,
INTERSECT, EXCEPT), no subquery (nested SELECT anywhere, IN (SELECT ...) included) and no CTE;
joins and WHERE (any predicate) are allowed, and so is DISTINCT.

A candidate is correct when its SQL, rendered for SQLite, returns the same multiset of rows as
the gold SQL on the Spider SQLite database (row order ignored, duplicates counted, column order
significant). Top-1: the first candidate is correct; top-k: any of the first k is. Values: as in
``nl_spider``, the value index is built from the Spider database itself (``real``, standing in for
the synthetic copy) or with every text value a placeholder (``placeholder``).
"""

from __future__ import annotations

import argparse
import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import sqlglot
from sqlglot import exp

from benchmarks._spider import SpiderItem, connect_read_only, db_path, read_split, split_dialect, to_sqlite
from benchmarks.nl_spider import (
    ParserReport,
    add_common_arguments,
    candidate_hits,
    open_database,
    print_report,
    tally,
    timed_candidates,
)
from pimento.errors import UserError
from pimento.nl import ValueIndex, translate_select
from pimento.schema import Catalog

__all__ = ["SelectReport", "is_plain_spj", "load_questions", "run"]


def is_plain_spj(sql: str, dialect: str = "sqlite") -> bool:
    """True when ``sql`` is one plain select-project-join (see the module docstring)."""
    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
    except sqlglot.errors.SqlglotError:
        return False
    if len(trees) != 1 or not isinstance(trees[0], exp.Select):
        return False
    tree = trees[0]
    for key in ("group", "having", "order", "limit", "offset", "with"):
        if tree.args.get(key) is not None:
            return False
    if any(isinstance(n, exp.AggFunc) for n in tree.walk()):
        return False
    if any(isinstance(n, (exp.Union, exp.Intersect, exp.Except)) for n in tree.walk()):
        return False
    if any(isinstance(n, exp.Select) for n in tree.walk() if n is not tree):
        return False
    return not any(isinstance(n, exp.Subquery) for n in tree.walk())


def load_questions(spider: Path, split: str) -> list[SpiderItem]:
    dialect = split_dialect(split)
    return [r for r in read_split(spider, split) if is_plain_spj(r.gold, dialect)]


@dataclass
class SelectReport(ParserReport):
    values: str = "real"
    gold_errors: int = 0

    def to_dict(self) -> dict:
        pct = lambda n: round(100 * n / self.total, 1) if self.total else 0.0  # noqa: E731
        lat = sorted(self.latencies_ms)
        return {
            "split": self.split,
            "values": self.values,
            "k": self.k,
            "questions": self.total,
            "top1": self.top1,
            "topk": self.topk,
            "top1_pct": pct(self.top1),
            "topk_pct": pct(self.topk),
            "no_candidate": self.no_candidate,
            "refused": self.refused,
            "gold_not_runnable": self.gold_errors,
            "latency_ms_median": round(lat[len(lat) // 2], 1) if lat else None,
            "latency_ms_p95": round(lat[int(0.95 * (len(lat) - 1))], 1) if lat else None,
            "failures": self.failures,
        }


def run(spider: Path, split: str = "dev", *, k: int = 5, values: str = "real", max_values: int = 2000, only_db: str | None = None) -> SelectReport:
    dialect = split_dialect(split)
    report = SelectReport(split, k, values=values)
    opened: dict[str, tuple[Catalog, ValueIndex]] = {}
    for item in load_questions(spider, split):
        if only_db and item.db != only_db:
            continue
        path = db_path(spider, split, item.db)
        if item.db not in opened:
            catalog, index, _seconds = open_database(path, max_values=max_values, values=values)
            opened[item.db] = catalog, index
        catalog, index = opened[item.db]
        con = connect_read_only(path)
        try:
            try:
                gold = Counter(con.execute(to_sqlite(item.gold, dialect)).fetchall())
            except sqlite3.Error:
                report.gold_errors += 1
                continue
            report.total += 1
            candidates = timed_candidates(report, lambda: translate_select(item.question, catalog, index, k=k), UserError)
            hits = candidate_hits(con, candidates, lambda rows: Counter(rows) == gold)
            tally(report, item, candidates, hits)
        finally:
            con.close()
    return report


def markdown(report: SelectReport) -> str:
    d = report.to_dict()
    return "\n".join(
        [
            f"- split: {d['split']}; values: {d['values']}; questions (gold SQL a plain select-project-join): {d['questions']}",
            f"- top-1: {d['top1']} ({d['top1_pct']}%); top-{d['k']}: {d['topk']} ({d['topk_pct']}%)",
            f"- no candidate: {d['no_candidate']} (refused: {d['refused']}); gold SQL that does not run: {d['gold_not_runnable']}",
            f"- latency per question (ms): median {d['latency_ms_median']}, p95 {d['latency_ms_p95']}",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(parser)
    args = parser.parse_args()
    report = run(args.spider, args.split, k=args.k, values=args.values, only_db=args.db)
    print_report(report, markdown, as_json=args.json, failures=args.failures)


if __name__ == "__main__":
    main()
