"""End to end against a real llama.cpp server serving Gemma 3 270M (a weak model) on loopback.

Not part of the default suite: skipped unless PIMENTO_GEMMA_URL points at a running server.

    scripts/gemma_server.sh start
    PIMENTO_GEMMA_URL=http://127.0.0.1:8089/v1 .venv/bin/pytest -m gemma tests/integration -n 0 -s

With PIMENTO_GEMMA_RECORD=tests/fixtures/llm/gemma the exchanges are recorded as replay
fixtures (tests/unit/llm/test_gemma_replay.py replays them offline). The summary of each run
(calls, tokens, valid/invalid counts by reason) is printed and written to
$PIMENTO_GEMMA_REPORT when set.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pimento.errors import LLMError
from pimento.llm import (
    ChatRequest,
    Message,
    OpenAIBackend,
    RecordingBackend,
    SqlAnswer,
    Usage,
    complete_structured,
    complete_structured_one,
    generate_zero_shot,
)
from pimento.sql.ir import CountQuery

pytestmark = pytest.mark.gemma

URL = os.environ.get("PIMENTO_GEMMA_URL")
CASE = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "llm" / "gemma_case.json").read_text())

if not URL:
    pytest.skip(
        "PIMENTO_GEMMA_URL is not set: start the server with scripts/gemma_server.sh start (see docs/llm.md)",
        allow_module_level=True,
    )


@pytest.fixture(scope="module")
def database(gemma_case_database):
    return gemma_case_database


def _backend(json_mode: str):
    backend = OpenAIBackend(URL, timeout_s=float(os.environ.get("PIMENTO_GEMMA_TIMEOUT", "180")), max_retries=1,
                            json_mode="none" if json_mode == "probe" else json_mode,
                            fold_system=True)  # the server's "gemma" chat format drops system messages
    record = os.environ.get("PIMENTO_GEMMA_RECORD")
    # One directory per JSON mode: the mode is not part of the request, so keys would collide.
    return RecordingBackend(backend, Path(record) / json_mode) if record else backend


@pytest.mark.parametrize("json_mode", CASE["json_modes"])
def test_zero_shot_end_to_end_with_a_weak_model(database, json_mode):
    engine, catalog, values = database
    backend = _backend(json_mode)
    try:
        _zero_shot_run(backend, engine, catalog, values, json_mode)
    finally:
        backend.close()


def _zero_shot_run(backend, engine, catalog, values, json_mode):
    total = Usage()
    report = {"url": URL, "json_mode": json_mode, "questions": []}
    for question in CASE["questions"]:
        usage = Usage()
        result = generate_zero_shot(
            backend, catalog, question, k=CASE["k"], temperature=CASE["temperature"],
            max_tokens=CASE["max_tokens"], values=values, seed=CASE["seed"], usage=usage,
        )
        # Every sample is accounted for: kept or dropped with a reason, never a crash.
        assert len(result.candidates) + len(result.rejected) == CASE["k"]
        assert sorted([c.index for c in result.candidates] + [r.index for r in result.rejected]) == list(range(CASE["k"]))
        assert usage.calls >= 1 and usage.completion_tokens > 0 and usage.prompt_tokens > 0
        answers = []
        for candidate in result.candidates:
            assert isinstance(candidate.query, CountQuery)
            # What survived is in the counting class, so it runs and returns one count.
            answers.append(engine.execute(candidate.query.to_sql("duckdb")).scalar())
        report["questions"].append({
            "question": question, **result.to_dict(), "answers": answers,
            "rejected": [{"index": r.index, "reason": r.reason, "text": r.text[:160]} for r in result.rejected],
        })
        total.merge(usage)
    report["total_usage"] = total.to_dict()
    report["valid"] = sum(q["valid"] for q in report["questions"])
    report["invalid"] = sum(q["invalid"] for q in report["questions"])
    _emit(report)
    record = os.environ.get("PIMENTO_GEMMA_RECORD")
    if record:
        (Path(record) / json_mode / "summary.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    assert total.calls >= len(CASE["questions"])


def test_the_server_answers_n_samples_even_if_it_ignores_n(database):
    backend = _backend("probe")
    try:
        response = backend.complete(ChatRequest((Message("user", "Say one word."),), n=2, max_tokens=8, seed=7))
    finally:
        backend.close()
    assert len(response.completions) == 2 and response.calls in (1, 2)


def test_garbage_structured_output_is_handled(database):
    """An instruction the model cannot follow: results are kept or reported, never a crash."""
    backend = _backend("probe")
    messages = (Message("user", "Write a haiku about hospitals. Do not use JSON."),)
    usage = Usage()
    try:
        samples = complete_structured(
            backend, messages, SqlAnswer, n=2, temperature=1.0, max_tokens=48, usage=usage, seed=3
        )
        assert len(samples) == 2
        for sample in samples:
            assert sample.ok or (sample.error and sample.error_kind in ("empty", "not_json", "schema"))
        try:
            complete_structured_one(backend, messages, SqlAnswer, max_tokens=48)
        except LLMError as exc:
            assert "unusable after one repair round" in exc.message
    finally:
        backend.close()
    _emit({"garbage_probe": [{"ok": s.ok, "error_kind": s.error_kind, "text": s.text[:120]} for s in samples],
           "usage": usage.to_dict()})


def _emit(report: dict) -> None:
    text = json.dumps(report, indent=1)
    print(text)
    target = os.environ.get("PIMENTO_GEMMA_REPORT")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(text + "\n")
