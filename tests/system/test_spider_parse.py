"""Every Spider dev gold query parses into the IR or is rejected with a named reason; in-class ones round-trip."""

from __future__ import annotations

import pytest

from benchmarks.spider_parse import run
from pimento.sql import REJECTION_REASONS

pytestmark = pytest.mark.spider


def test_spider_dev_gold_queries_never_crash_and_round_trip(spider_dir):
    report = run(spider_dir)
    assert report.total == 1034
    assert report.crashes == []
    assert report.user_errors == []
    assert report.round_trip_mismatch == []
    assert report.round_trip_ok == report.in_class
    assert report.in_class + sum(report.reasons.values()) == report.total
    assert set(report.reasons) <= set(REJECTION_REASONS)
    # The class must cover a real share of the counting questions (151 of 412 when measured).
    assert report.count_queries == 412
    assert report.count_in_class >= 140
