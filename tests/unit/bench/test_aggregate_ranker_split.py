"""benchmarks/grouped_recall.py: the split of the grouped readings' learned order, fixed before the first experiment."""

from __future__ import annotations

import pytest

from benchmarks.grouped_recall import ranker_part
from benchmarks.nl_spider import DP_BENCHMARK_DBS, in_partition
from benchmarks.spider_grouped import in_part

NAMES = [f"db_{i}" for i in range(64)]


def test_every_dev_database_and_the_dp_ones_are_dev() -> None:
    assert ranker_part("dev", "concert_singer") == "dev"
    assert {ranker_part("train", db) for db in DP_BENCHMARK_DBS} == {"dev"}


@pytest.mark.parametrize("partition, part", [("tune", "train"), ("heldout-open", "heldout-open"), ("sealed", "sealed")])
def test_train_databases_follow_the_hash_partitions(partition: str, part: str) -> None:
    names = [db for db in NAMES if in_partition(db, partition)]
    assert names  # 64 names reach every partition
    assert {ranker_part("train", db) for db in names} == {part}


def test_spider_grouped_measures_all_of_dev_and_a_partition_of_train() -> None:
    tune = next(db for db in NAMES if in_partition(db, "tune"))
    assert in_part("dev", tune, "sealed") and in_part("train", tune, "tune") and not in_part("train", tune, "sealed")
