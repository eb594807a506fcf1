"""Replays what the real Gemma 3 270M server answered (tests/fixtures/llm/gemma, recorded by
tests/integration/test_gemma_server.py with PIMENTO_GEMMA_RECORD) through the zero-shot path.

A weak model's real outputs, offline: every sample is kept or dropped with a reason, the kept
ones are CountQuery values that run, and the accounting matches the live run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pimento.llm import ReplayBackend, Usage, generate_zero_shot

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "llm"
CASE = json.loads((FIXTURES / "gemma_case.json").read_text())
MODES = [m for m in CASE["json_modes"] if (FIXTURES / "gemma" / m / "summary.json").is_file()]


@pytest.fixture(scope="module")
def database(gemma_case_database):
    return gemma_case_database


def test_fixtures_were_recorded():
    assert MODES == CASE["json_modes"], "re-record: see docs/llm.md (PIMENTO_GEMMA_RECORD)"


@pytest.mark.parametrize("json_mode", MODES)
def test_recorded_gemma_answers_through_zero_shot(database, json_mode):
    engine, catalog, values = database
    summary = json.loads((FIXTURES / "gemma" / json_mode / "summary.json").read_text())
    backend = ReplayBackend(FIXTURES / "gemma" / json_mode)
    total = Usage()
    for recorded in summary["questions"]:
        result = generate_zero_shot(
            backend, catalog, recorded["question"], k=CASE["k"], temperature=CASE["temperature"],
            max_tokens=CASE["max_tokens"], values=values, seed=CASE["seed"], usage=total,
        )
        assert len(result.candidates) + len(result.rejected) == CASE["k"]
        for candidate in result.candidates:
            engine.execute(candidate.query.to_sql("duckdb")).scalar()
        # JSON-level judgements depend only on pimento.llm: they must match the live run.
        json_level = ("empty", "not_json", "schema")
        assert {r: c for r, c in result.dropped.items() if r in json_level} == {
            r: c for r, c in recorded["dropped"].items() if r in json_level
        }
    assert total.to_dict() == summary["total_usage"]
