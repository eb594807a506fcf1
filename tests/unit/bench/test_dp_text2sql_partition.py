"""The DP text-to-SQL benchmark on one part of the hash split (``--partition``), and the sealed part's
aggregate-only rule, on a tiny Spider-shaped data folder.

Database names were picked for their part of ``benchmarks.nl_spider.in_partition``: ``a`` tune,
``g`` and ``x5`` heldout-open, ``e`` sealed; ``activity_1`` is one of the default run's 12 (``dp``).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sqlite3
import sys
from pathlib import Path

import pytest

from benchmarks.dp_text2sql import PARTITIONS, load_items, main, run
from benchmarks.nl_spider import in_partition

PARTS = {"a": "tune", "g": "heldout-open", "x5": "heldout-open", "e": "sealed", "activity_1": "dp"}
QUESTION = "How many models are there?"
ROWS = [(db, QUESTION, "SELECT COUNT(*) FROM `models`") for db in PARTS] + [("g", "List the models.", "SELECT name FROM models")]


def _spider(root: Path) -> Path:
    """``root/spider/train``: one tiny database per name of :data:`PARTS` and the questions' CSV."""
    train = root / "spider" / "train"
    for db in PARTS:
        folder = train / "database" / db
        folder.mkdir(parents=True)
        con = sqlite3.connect(folder / f"{db}.sqlite")
        con.executescript(
            """
            CREATE TABLE makers (Id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE models (ModelId INTEGER PRIMARY KEY, Maker INTEGER REFERENCES makers (Id), name TEXT);
            INSERT INTO makers VALUES (1, 'ford'), (2, 'gm');
            INSERT INTO models VALUES (1, 1, 'a'), (2, 1, 'b'), (3, 2, 'c');
            """
        )
        con.close()
    with open(train / "train_queries.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["database", "question", "sql"])
        writer.writerows(ROWS)
    return root


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return _spider(tmp_path_factory.mktemp("data"))


def test_the_names_sit_in_the_parts_this_file_assumes():
    for db, part in PARTS.items():
        assert [p for p in (*PARTITIONS, "dp") if in_partition(db, p)] == [part]


@pytest.mark.parametrize("partition", PARTITIONS)
def test_a_partition_keeps_the_counting_questions_of_its_databases_only(data, partition):
    items = load_items(data, ("train",), 12, partition)
    assert sorted(i.db for i in items) == sorted(db for db, p in PARTS.items() if p == partition)
    assert all(i.source == "spider-train" and i.dialect == "mysql" for i in items)


def test_without_a_partition_the_spaced_databases_stay(data):
    assert sorted(i.db for i in load_items(data, ("train",), 12)) == sorted(PARTS)
    assert [i.db for i in load_items(data, ("train",), 2)] == ["a", "e"]  # names 0 and 2 of a, activity_1, e, g, x5


def test_an_unknown_or_default_run_part_is_refused(data):
    for bad in ("dp", "heldout", "x"):
        with pytest.raises(ValueError):
            load_items(data, ("train",), 12, bad)


def _main(data: Path, cache: Path, partition: str, *extra: str) -> None:
    main(["--data", str(data), "--cache", str(cache), "--partition", partition, "--methods", "zero-shot", "-v",
          "--json", str(cache / "report.json"), *extra])


@pytest.fixture(scope="module")
def runs(data, tmp_path_factory):
    """The benchmark run once on ``sealed`` and once on ``heldout-open`` (with ``--failures``): output, log, cache."""
    capture = pytest.MonkeyPatch()
    out: dict[str, dict] = {}
    for partition, extra in (("sealed", ()), ("heldout-open", ("--failures",))):
        cache = tmp_path_factory.mktemp(partition)
        stdout, stderr = io.StringIO(), io.StringIO()
        capture.setattr(sys, "stdout", stdout)
        capture.setattr(sys, "stderr", stderr)
        try:
            _main(data, cache, partition, *extra)
        finally:
            capture.undo()
        out[partition] = {"stdout": stdout.getvalue(), "stderr": stderr.getvalue(), "cache": cache,
                          "report": json.loads((cache / "report.json").read_text())}
    return out


def test_sealed_writes_and_prints_aggregates_only(runs):
    sealed = runs["sealed"]
    report = sealed["report"]
    assert report["partition"] == "sealed" and report["ground_truth"]["evaluated"] == 1
    assert report["ground_truth"]["databases"] == 1 and report["in_class_all"]["questions"] == 1
    assert "failures" not in report
    ids = ["train-3"]  # the sealed database's row of ROWS
    for text in (sealed["stdout"], sealed["stderr"], json.dumps(report)):
        assert not any(i in text for i in ids)
        assert QUESTION not in text
        assert "zero-shot=" not in text  # no per-question mark
    assert not list(sealed["cache"].glob("results-*.json"))  # per-question results are never written


def test_the_same_run_on_heldout_open_shows_questions(runs):
    """The counterpart that makes the sealed test able to fail: an open part prints and keeps its questions."""
    open_ = runs["heldout-open"]
    assert open_["report"]["ground_truth"]["evaluated"] == 2 and open_["report"]["ground_truth"]["databases"] == 2
    assert "zero-shot=" in open_["stderr"] and "train-1" in open_["stderr"]
    assert list(open_["cache"].glob("results-*-heldout-open.json"))
    assert set(open_["report"]["failures"]) == {"zero-shot"}
    assert "## zero-shot:" in open_["stdout"]


def test_failures_and_other_sources_are_refused_on_sealed(data, tmp_path):
    with pytest.raises(SystemExit):
        _main(data, tmp_path, "sealed", "--failures")
    with pytest.raises(SystemExit):
        _main(data, tmp_path, "heldout-open", "--sources", "dev,train")
    assert not (tmp_path / "report.json").exists()


def test_run_itself_refuses_failures_on_sealed(data, tmp_path):
    args = argparse.Namespace(cache=tmp_path, epsilon="1", delta="1e-6", partition="sealed", failures=True,
                              sources="train", data=data, train_dbs=12)
    with pytest.raises(SystemExit, match="refused"):
        run(args, lambda s: None)
