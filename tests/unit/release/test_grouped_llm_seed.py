"""A grouped question's formulations from the analyst's seed SQL and the LLM (issue 25, item 4), on the synthetic copy.

The order (:func:`pimento.release.aggregate_reading.proposals`): the analyst's grouped or summed ``seed_sql`` first, then
the LLM's samples of the aggregate prompt (answered here by the replay backend the LLM tests use), then the parser's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from db_support import duckdb_file
from test_grouped_reading import CONFIG, DDL, PER_SEX, clinic_rows
from pimento.engines import open_engine
from pimento.llm import ChatResponse, Completion, ReplayBackend
from pimento.release.admission import admit
from pimento.release.aggregate_reading import proposals, read_grouped
from pimento.release.request import Request
from pimento.release.session import Session
from pimento.sql.parse import parse_aggregate_query

PER_DEPT = "SELECT v.dept, COUNT(*) FROM Visit v GROUP BY v.dept"
QUESTION = "How many visits per department?"


@pytest.fixture()
def clinic(tmp_path: Path):
    (tmp_path / "pimento.toml").write_text(CONFIG)
    db = duckdb_file(tmp_path / "clinic.duckdb", DDL + clinic_rows(20, 60))
    (tmp_path / "copy").mkdir()
    copy = duckdb_file(tmp_path / "copy" / "clinic.duckdb", DDL + clinic_rows(30, 90) + ["CREATE TABLE _pimento_synth_meta (k VARCHAR, v VARCHAR)"])
    engine = open_engine(str(copy), read_only=True)  # marked as a synthetic copy: the LLM prompt may quote its values
    with Session(db, analyst="ann") as session:
        yield session, engine
    engine.close()


def _normal(sql: str, session: Session) -> str:
    return parse_aggregate_query(sql, session.database.catalog).to_sql()


def _read(session: Session, engine, question: str, **search):
    settings = session.database.settings
    job = admit(Request.for_question(question, epsilon="1", delta="1e-6", **search), settings=settings, ledger=session.ledger)
    found = proposals(question, session.database.catalog, engine, job.request.search)
    return found, read_grouped(job, question, found, engine, session.database.catalog, settings, session.ledger, session.location)


def test_the_analysts_grouped_seed_comes_first_and_a_plain_count_seed_is_noted(clinic):
    session, engine = clinic
    found, (reading, outcome) = _read(session, engine, QUESTION, seed_sql=(PER_SEX, "SELECT COUNT(*) FROM Visit"))
    assert found.sql[0] == _normal(PER_SEX, session)
    assert any(c.sql == _normal(PER_SEX, session) and c.rank == 1 for c in reading.candidates)
    assert len(found.sql) > 1  # the parser's readings follow
    assert any("a plain count" in n for n in outcome.dropped)


def test_a_grouped_seed_makes_a_question_without_a_cue_grouped(clinic):
    """"How many visits?" alone is a count; with a grouped seed SQL it is answered as that grouped formulation."""
    session, engine = clinic
    assert proposals("How many visits?", session.database.catalog, engine, Request.for_question("x").search).sql == ()
    found, (reading, _) = _read(session, engine, "How many visits?", seed_sql=(PER_DEPT,))
    assert found.sql == (_normal(PER_DEPT, session),) and reading.sql == _normal(PER_DEPT, session)


def test_the_llms_samples_come_after_the_seed_most_frequent_first(clinic, monkeypatch):
    session, engine = clinic
    backend = ReplayBackend()
    monkeypatch.setattr("pimento.llm.open_backend", lambda url=None, **_: backend)
    found, _ = _read(session, engine, QUESTION, llm="replay:unused", k=3)  # the request is recorded; no answer yet
    assert any("LLM unreachable or unusable" in n for n in found.notes) and backend.requests, found.notes
    request = backend.requests[0]
    assert request.schema_name == "AggregateSqlAnswer"  # the aggregate prompt
    joined = "SELECT d.name, COUNT(*) FROM Visit v JOIN Dept d ON v.dept = d.name GROUP BY d.name"
    samples = [joined, PER_SEX, PER_SEX]  # PER_SEX drawn twice: it comes first
    backend.add(request, ChatResponse(tuple(Completion(json.dumps({"sql": s}), "stop") for s in samples),
                                      prompt_tokens=100, completion_tokens=30))
    found, (reading, outcome) = _read(session, engine, QUESTION, llm="replay:unused", k=3, seed_sql=(PER_DEPT,))
    assert found.sql[:3] == (_normal(PER_DEPT, session), _normal(PER_SEX, session), _normal(joined, session))
    assert outcome.llm_calls >= 1 and outcome.llm_tokens == 130
    assert {c.sql for c in reading.candidates} >= set(found.sql[:3])
