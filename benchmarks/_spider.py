"""Reading Spider (https://yale-lily.github.io/spider) for the benchmarks that run on it.

One home for where the data sits, how a split's questions and gold SQL are read, where a
database's SQLite file is, and how the gold SQL is run: ``nl_spider``, ``nl_select``,
``spider_parse`` and ``dp_text2sql`` use these.
"""

from __future__ import annotations

import csv
import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import sqlglot

from benchmarks import REPO

__all__ = [
    "COUNT_CALL",
    "DEFAULT_DATA",
    "DEFAULT_SPIDER",
    "SpiderItem",
    "connect_read_only",
    "db_path",
    "print_failures",
    "read_split",
    "split_dialect",
    "to_sqlite",
]

#: the shared data folder beside the checkout (``../shared/data``), and Spider in it
DEFAULT_DATA = REPO / ".." / "shared" / "data"
DEFAULT_SPIDER = DEFAULT_DATA / "spider"

#: a gold SQL that calls COUNT( is a counting question's
COUNT_CALL = re.compile(r"\bcount\s*\(", re.IGNORECASE)


@dataclass
class SpiderItem:
    db: str
    question: str
    gold: str


def split_dialect(split: str) -> str:
    """The dialect of a split's gold SQL: SQLite for dev, MySQL for train (its SQL uses backticks)."""
    return "sqlite" if split == "dev" else "mysql"


def read_split(spider: Path, split: str) -> list[SpiderItem]:
    """Every (database, question, gold SQL) of ``split`` (``dev``: dev.json; else train_queries.csv)."""
    if split == "dev":
        return [SpiderItem(i["db_id"], i["question"], i["query"]) for i in json.loads((spider / "dev" / "dev.json").read_text())]
    with open(spider / "train" / "train_queries.csv", newline="") as fh:
        return [SpiderItem(r["database"], r["question"], r["sql"]) for r in csv.DictReader(fh)]


def db_path(spider: Path, split: str, db: str) -> Path:
    """The SQLite file of database ``db`` of ``split``."""
    return spider / split / "database" / db / f"{db}.sqlite"


def to_sqlite(sql: str, dialect: str) -> str:
    """``sql`` of ``dialect`` rewritten for SQLite."""
    if dialect == "sqlite":
        return sql
    return sqlglot.transpile(sql, read=dialect, write="sqlite")[0]


def connect_read_only(path: str | Path) -> sqlite3.Connection:
    """A read-only connection to a SQLite file whose text that is not UTF-8 reads with replacement characters."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    return con


def print_failures(failures: list[dict]) -> None:
    """Print the questions whose top-1 candidate is wrong (``--failures`` of the parser benchmarks)."""
    for f in failures:
        print(f"\n[{f['db']}] {f['question']}\n  gold: {f['gold']}\n  top:  {f['top']}\n  correct at rank: {f['rank_of_correct']}")
