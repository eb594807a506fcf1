"""Parse every Spider dev gold query; count how many COUNT queries fall in the class and why the rest do not.

Run: ``python -m benchmarks.spider_parse [--spider ../shared/data/spider] [--json]``

For each of the 1034 dev gold queries: parse with the SQLite dialect against the catalog of its
database. A query in the class is rendered back to SQLite and executed; its result must equal
the gold query's. A rejected query must carry a named reason. Nothing may crash.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks._spider import COUNT_CALL, DEFAULT_SPIDER, db_path, read_split
from pimento.engines import open_engine
from pimento.errors import PimentoError, UnsupportedQuery
from pimento.sql import REJECTION_REASONS, parse_count_query

__all__ = ["SpiderParseReport", "run"]

_SEMI_JOIN = re.compile(r"\bIN\s*\(\s*SELECT\b", re.IGNORECASE)


@dataclass
class SpiderParseReport:
    total: int = 0
    count_queries: int = 0
    in_class: int = 0
    semi_joins_rewritten: int = 0
    count_in_class: int = 0
    round_trip_ok: int = 0
    round_trip_mismatch: list[str] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)
    user_errors: list[str] = field(default_factory=list)
    reasons: collections.Counter = field(default_factory=collections.Counter)
    count_reasons: collections.Counter = field(default_factory=collections.Counter)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {
            "total": self.total,
            "count_queries": self.count_queries,
            "in_class": self.in_class,
            "semi_joins_rewritten": self.semi_joins_rewritten,
            "count_in_class": self.count_in_class,
            "round_trip_ok": self.round_trip_ok,
            "round_trip_mismatch": self.round_trip_mismatch,
            "crashes": self.crashes,
            "user_errors": self.user_errors,
            "reasons": dict(self.reasons.most_common()),
            "count_reasons": dict(self.count_reasons.most_common()),
            "seconds": round(self.seconds, 2),
        }


def run(spider: Path) -> SpiderParseReport:
    items = read_split(spider, "dev")
    catalogs = {}
    report = SpiderParseReport()
    start = time.perf_counter()
    for item in items:
        db, gold = item.db, item.gold
        path = db_path(spider, "dev", db)
        if db not in catalogs:
            engine = open_engine(str(path))
            catalogs[db] = engine.introspect()
            engine.close()
        report.total += 1
        is_count = bool(COUNT_CALL.search(gold))
        report.count_queries += is_count
        try:
            query = parse_count_query(gold, catalogs[db], dialect="sqlite")
        except UnsupportedQuery as exc:
            report.reasons[exc.construct] += 1
            if is_count:
                report.count_reasons[exc.construct] += 1
            continue
        except PimentoError as exc:
            report.user_errors.append(f"{db}: {gold} -> {exc.one_line()}")
            continue
        except Exception as exc:  # noqa: BLE001 - the benchmark records crashes instead of stopping
            report.crashes.append(f"{db}: {gold} -> {type(exc).__name__}: {exc}")
            continue
        report.in_class += 1
        report.semi_joins_rewritten += bool(_SEMI_JOIN.search(gold))
        report.count_in_class += is_count
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            expected = con.execute(gold).fetchall()
            got = con.execute(query.to_sql("sqlite")).fetchall()
        finally:
            con.close()
        if expected == got:
            report.round_trip_ok += 1
        else:
            report.round_trip_mismatch.append(f"{db}: {gold} -> {query.to_sql('sqlite')}: {expected} != {got}")
    report.seconds = time.perf_counter() - start
    return report


def markdown(report: SpiderParseReport) -> str:
    lines = [
        f"- gold queries parsed: {report.total} (crashes: {len(report.crashes)}, other errors: {len(report.user_errors)})",
        f"- COUNT queries (gold SQL contains `COUNT(`): {report.count_queries}; in the class: {report.count_in_class}",
        f"- all queries in the class: {report.in_class}; round trip equal on SQLite: {report.round_trip_ok}"
        f" (mismatches: {len(report.round_trip_mismatch)}); of them rewritten from `IN (SELECT ...)`:"
        f" {report.semi_joins_rewritten}",
        "",
        "| rejection reason | COUNT queries | all queries |",
        "|---|---:|---:|",
    ]
    for reason, n in report.reasons.most_common():
        lines.append(f"| {reason}: {REJECTION_REASONS[reason]} | {report.count_reasons.get(reason, 0)} | {n} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spider", type=Path, default=DEFAULT_SPIDER)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = run(args.spider)
    print(json.dumps(report.to_dict(), indent=2) if args.json else markdown(report))


if __name__ == "__main__":
    main()
