"""The DP search never opens the private database: only the synthetic copy (paper Section 4.1).

Every database connection the process makes (``duckdb.connect``, ``sqlite3.connect``) and every
Python ``open`` is recorded, and the private file refuses to open while the search step runs.
``Session.ask`` may touch the private database only in the release that follows the search.
"""

from __future__ import annotations

import builtins
import sqlite3
from pathlib import Path

import duckdb
import pytest

import pimento.release.ask as ask_module
from pimento.demo import DEMO_QUESTION, DEMO_SQL_ORDERS, DEMO_SQL_PRESCRIPTION, create_demo
from pimento.engines import open_engine
from pimento.engines.database import load_database
from pimento.mechanisms import mechanism_for
from pimento.release.ask import open_synthetic, search_question
from pimento.release.session import Session
from pimento.search import SearchConfig


@pytest.fixture(scope="module")
def databases(tmp_path_factory, standin_synthetic):
    root = tmp_path_factory.mktemp("isolation")
    private = root / "private" / "hospital.duckdb"
    create_demo(private, patients=300, seed=3)
    (root / "synthetic").mkdir()
    return private.resolve(), standin_synthetic(root / "synthetic" / "syn.duckdb", seed=11, for_database=private)


class _Spy:
    """Records every path opened; refuses the private database while ``guard`` is on."""

    def __init__(self, private: Path, monkeypatch: pytest.MonkeyPatch):
        self.private = private
        self.guard = False
        self.opened: list[tuple[bool, str]] = []
        real_duck, real_sqlite, real_open = duckdb.connect, sqlite3.connect, builtins.open

        def check(target: object) -> None:
            text = str(target)
            self.opened.append((self.guard, text))
            if self.guard and text not in (":memory:", "") and self._is_private(text):
                raise PermissionError(f"the search opened the private database {text}")

        def duck(database: object = ":memory:", *args, **kwargs):
            check(database)
            return real_duck(database, *args, **kwargs)

        def lite(database: object, *args, **kwargs):
            check(database)
            return real_sqlite(database, *args, **kwargs)

        def py_open(file, *args, **kwargs):
            if isinstance(file, (str, Path)) and self._is_private(str(file)):
                check(file)
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr(duckdb, "connect", duck)
        monkeypatch.setattr(sqlite3, "connect", lite)
        monkeypatch.setattr(builtins, "open", py_open)

    def _is_private(self, text: str) -> bool:
        path = text.removeprefix("file:").split("?", 1)[0]
        try:
            resolved = Path(path).resolve()
        except OSError:
            return False
        # The database file or its write-ahead log (the ledger beside it is not private data).
        return resolved == self.private or resolved == self.private.with_name(self.private.name + ".wal")

    def during_guard(self) -> list[str]:
        return [p for g, p in self.opened if g]


@pytest.mark.slow
def test_search_question_opens_only_the_synthetic_database(databases, monkeypatch):
    private, synthetic = databases
    schema = load_database(str(private), read_only=True)  # the catalog: schema metadata only
    catalog = schema.catalog
    schema.close()
    spy = _Spy(private, monkeypatch)
    spy.guard = True
    engine = open_synthetic(synthetic)
    try:
        outcome = search_question(
            DEMO_QUESTION,
            engine,
            catalog,
            beta=mechanism_for("1", "1e-6").beta_float(),
            seed_sql=(DEMO_SQL_PRESCRIPTION, DEMO_SQL_ORDERS),
            config=SearchConfig(rollouts=6, seed=2),
        )
    finally:
        engine.close()
        spy.guard = False
    assert outcome.result.evaluations > 0
    opened = spy.during_guard()
    assert opened, "the spy saw nothing: it is not wired"
    assert all(Path(p).resolve() == synthetic for p in opened if p not in (":memory:", "")), opened
    assert not any(spy._is_private(p) for p in opened)
    # The spy has teeth: opening the private database while guarded fails.
    spy.guard = True
    with pytest.raises(PermissionError):
        open_engine(str(private))
    spy.guard = False


@pytest.mark.slow
def test_ask_dp_touches_the_private_database_only_in_the_release(databases, monkeypatch, tmp_path):
    private, synthetic = databases
    with Session(str(private), analyst="ann") as session:
        spy = _Spy(private, monkeypatch)
        private_calls: list[str] = []
        real_execute = session.database.engine.execute

        def guarded_execute(sql, *args, **kwargs):
            if spy.guard:
                private_calls.append(sql)
                raise PermissionError("the search read the private engine")
            return real_execute(sql, *args, **kwargs)

        monkeypatch.setattr(session.database.engine, "execute", guarded_execute)
        real_search = ask_module.search_question
        searched = []

        def search_step(*args, **kwargs):
            spy.guard = True
            try:
                out = real_search(*args, **kwargs)
                searched.append(out)
                return out
            finally:
                spy.guard = False

        monkeypatch.setattr(ask_module, "search_question", search_step)
        answer = session.ask(
            DEMO_QUESTION,
            synthetic=synthetic,
            epsilon="1",
            delta="1e-6",
            seed_sql=(DEMO_SQL_PRESCRIPTION,),
            config=SearchConfig(rollouts=4, seed=0),
        )
    assert searched and answer.search is searched[0]
    assert private_calls == []
    opened = spy.during_guard()
    assert not any(spy._is_private(p) for p in opened), opened
    # ... and the release was charged afterwards (count and RS of q* are computed there, after the charge).
    assert answer.charge_id is not None and answer.synthetic_rs > 0


def test_session_ask_answers_through_the_search_and_charges_once(databases):
    private, synthetic = databases
    with Session(str(private), analyst="ann") as session:
        answer = session.ask(
            DEMO_QUESTION,
            synthetic=synthetic,
            epsilon="1",
            delta="1e-6",
            seed_sql=(DEMO_SQL_PRESCRIPTION,),
            config=SearchConfig(rollouts=4, seed=0),
        )
        charges = [c for c in session.ledger.charges() if c.kind != "synthetic"]  # the copy's own charge aside
    assert answer.search.result.sql
    assert len(charges) == 1
    assert answer.synthetic_rs > 0 and "rs" not in answer.to_dict()


def test_interpret_needs_only_the_catalog_the_settings_the_ledger_and_the_copy(databases, monkeypatch):
    """Issue 24: the one question -> interpretation path (``pimento.release.interpret``) runs with the
    private database closed (the service's preview holds only the catalog, settings, ledger and the
    copy's path), never opens it, and reads what ``Session.preview`` reads."""
    from pimento.mechanisms import Ledger
    from pimento.release import Request, interpret

    private, synthetic = databases
    schema = load_database(str(private), read_only=True)  # what a service reads at start-up, then closes
    catalog, settings, location = schema.catalog, schema.settings, str(schema.location)
    schema.close()
    request = Request.for_question(DEMO_QUESTION, epsilon="1", delta="1e-6", analyst="ann", synthetic=synthetic,
                                   seed_sql=(DEMO_SQL_PRESCRIPTION,), config=SearchConfig(rollouts=4, seed=0))
    spy = _Spy(private, monkeypatch)
    spy.guard = True
    with Ledger.for_database(location, settings) as ledger:
        seen = interpret(request, catalog=catalog, settings=settings, ledger=ledger, location=location)
    spy.guard = False
    assert spy.during_guard(), "the spy saw nothing: it is not wired"
    assert not any(spy._is_private(p) for p in spy.during_guard())
    assert seen.sql.upper().startswith("SELECT COUNT") and seen.to_dict()["spent"] == {"epsilon": "0", "delta": "0"}
    with Session(str(private), analyst="ann") as session:
        assert session.preview(request).sql == seen.sql  # the same reading from the session
