"""The deployment file read once per request (issue 28, PERF9): :func:`pimento.mechanisms.ledger_identity.keys_read_once`.

Inside the block each database's deployment file is read once; outside it, and in a later block, every look-up reads
it again (nothing kept across requests). Mutants each test fails on: the block's findings never used (three reads),
kept after the block (a rewritten file unseen), shared by nested blocks or by two threads.
"""

from __future__ import annotations

import json
import os
import threading

import pytest
from db_support import count_deployment_reads

from pimento.mechanisms.ledger_identity import KEY_PREFIX, database_key, database_keys, deployment_file, keys_read_once


@pytest.fixture
def db(tmp_path) -> str:
    path = tmp_path / "shop.duckdb"
    path.write_bytes(b"")  # a file database exists: its deployment file is made at the first look
    return str(path)


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    return count_deployment_reads(monkeypatch)


def rewrite(db: str, ident: str) -> None:
    """Put a deployment file naming ``ident`` in place by rename, as a custodian's restore would."""
    file = deployment_file(db)
    assert file is not None
    tmp = file.with_name(file.name + ".tmp")
    tmp.write_text(json.dumps({"id": ident, "aliases": []}))
    os.replace(tmp, file)


def test_a_block_reads_the_deployment_file_once(db, reads):
    first = database_keys(db)
    reads.clear()
    with keys_read_once():
        assert database_keys(db) == first
        assert database_key(db) == first[0]
        assert database_keys(db) == first
    assert len(reads) == 1
    database_keys(db)
    database_keys(db)
    assert len(reads) == 3  # outside a block: every look-up reads


def test_nothing_is_kept_after_the_block(db):
    with keys_read_once():
        before = database_key(db)
    rewrite(db, "restored")
    assert database_key(db) == f"{KEY_PREFIX}restored" != before
    with keys_read_once():
        assert database_key(db) == f"{KEY_PREFIX}restored"
        rewrite(db, "later")
        assert database_key(db) == f"{KEY_PREFIX}restored"  # one reading per block: the change is after it
        with keys_read_once():  # an inner block reads again
            assert database_key(db) == f"{KEY_PREFIX}later"
    with keys_read_once():
        assert database_key(db) == f"{KEY_PREFIX}later"


def test_blocks_in_two_threads_are_their_own(db):
    """Each request's thread reads for itself: one thread's block does not answer another's."""
    ready, changed, done = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, str] = {}

    def early() -> None:
        with keys_read_once():
            seen["early"] = database_key(db)
            ready.set()
            changed.wait(5)
            seen["early again"] = database_key(db)
        done.set()

    thread = threading.Thread(target=early)
    thread.start()
    ready.wait(5)
    rewrite(db, "other")
    with keys_read_once():
        seen["late"] = database_key(db)
    changed.set()
    done.wait(5)
    thread.join(5)
    assert seen["early"] == seen["early again"] != seen["late"] == f"{KEY_PREFIX}other"
