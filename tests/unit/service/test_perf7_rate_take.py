"""The shared rate-limit take in one statement (issue 28, PERF7; :mod:`pimento.service.shared_limits`).

A take from a bucket kept in the SQLite state file is one ``INSERT ... ON CONFLICT DO UPDATE ... RETURNING``:
the write lock is held only while SQLite runs it, never while a thread waits for the interpreter's lock. It must
grant and refuse exactly as :func:`refill_and_take` (the in-process buckets' arithmetic) does, to the bit, and
work on a state file made before its ``took`` column. That no two processes spend the last token is
``tests/unit/service/test_workers_share.py::test_a_shared_bucket_gives_its_burst_once_across_processes``.
"""

from __future__ import annotations

import sqlite3

import pytest

from pimento.service import shared_limits
from pimento.service.shared_limits import BUCKETS_TABLE, SqliteState, refill_and_take

#: Steps of the clock between takes (seconds): bursts, refills to the cap, a clock that goes back, fractions.
STEPS = (0.0, 0.0, 0.0, 0.0, 0.1, 0.4, 0.0, 5.0, 0.0, 0.0, 0.0, 0.0, -3.0, 0.0, 0.7, 0.0, 0.35, 0.15, 0.0, 100.0, 0.0)


@pytest.mark.parametrize(("rate", "burst"), [(2.0, 3), (0.7, 1), (3.3, 5), (0.0, 2)])
def test_the_one_statement_take_is_refill_and_take_to_the_bit(tmp_path, monkeypatch, rate, burst):
    clock = [1_700_000_000.25]
    monkeypatch.setattr(shared_limits.time, "time", lambda: clock[0])
    store = SqliteState(tmp_path / "state.sqlite")
    tokens, stamp = float(burst), clock[0]  # a new bucket starts full
    for step in STEPS:
        clock[0] += step
        tokens, stamp, expected = refill_and_take(tokens, stamp, clock[0], rate=rate, burst=burst)
        assert store.take("key", "k1", rate=rate, burst=burst) == expected
        row = store._conn().execute(f"SELECT tokens, stamp FROM {BUCKETS_TABLE} WHERE scope = 'key' AND name = 'k1'").fetchone()
        assert row == (tokens, stamp)


def test_a_take_is_one_statement(tmp_path):
    store = SqliteState(tmp_path / "state.sqlite")
    seen: list[str] = []
    store._conn().set_trace_callback(seen.append)
    for _ in range(3):
        assert store.take("key", "k1", rate=1.0, burst=10) == 0.0
    assert len(seen) == 3 and all(s.startswith("INSERT INTO") for s in seen)  # no BEGIN, SELECT, COMMIT around it


def test_a_state_file_made_before_the_took_column_is_given_it(tmp_path):
    path = tmp_path / "state.sqlite"
    with sqlite3.connect(path) as old:  # the table as shared_limits made it before
        old.execute(f"CREATE TABLE {BUCKETS_TABLE} (scope TEXT NOT NULL, name TEXT NOT NULL, tokens DOUBLE PRECISION NOT NULL, "
                    "stamp DOUBLE PRECISION NOT NULL, PRIMARY KEY (scope, name))")
        old.execute(f"INSERT INTO {BUCKETS_TABLE} (scope, name, tokens, stamp) VALUES ('key', 'k1', 0.0, 9e99)")
    store = SqliteState(path)
    assert store.take("key", "k1", rate=1.0, burst=5) == pytest.approx(1.0)  # the old row's empty bucket is honoured
    assert store.take("key", "k2", rate=1.0, burst=5) == 0.0
