"""The benchmark's LLM-driven methods (sens-prompt, llm-zero-shot, llm-full) on a tiny case, offline.

A scripted backend (registered like any third-party backend) answers with one usable query, garbage
and SQL outside the DP class; its exchanges are recorded (PIMENTO_LLM_RECORD) and then replayed
through ``replay:DIR``, the same URL path the benchmark uses with a real server. A replay directory
without fixtures stands for an LLM that answers nothing usable: the offline fallbacks must keep the
answer correct.
"""

from __future__ import annotations

import json
import sqlite3

import duckdb
import pytest

from benchmarks.dp_text2sql import (
    LLM_METHODS,
    METHODS,
    Item,
    RealRS,
    _Question,
    _run_method,
    build_ground_truth,
    markdown,
    score,
    summarize,
)
from pimento.engines import open_engine
from pimento.llm import SYNTH_META_TABLE, ChatResponse, Completion
from pimento.llm import base as llm_base
from pimento.mechanisms import mechanism_for
from pimento.sql import parse_count_query

QUESTION = "How many models are made in the usa?"
GOLD = (
    "SELECT COUNT(*) FROM models AS m JOIN makers AS k ON m.Maker = k.Id "
    "JOIN countries AS c ON k.Country = c.CountryId WHERE c.CountryId = 1"
)
GOOD_SQL = "SELECT COUNT(*) FROM models AS m JOIN makers AS k ON m.Maker = k.Id WHERE k.Country = 1"
SCHEMA = """
    CREATE TABLE countries (CountryId INTEGER PRIMARY KEY, name TEXT);
    CREATE TABLE makers (Id INTEGER PRIMARY KEY, name TEXT, Country INTEGER REFERENCES countries (CountryId));
    CREATE TABLE models (ModelId INTEGER PRIMARY KEY, Maker INTEGER REFERENCES makers (Id), name TEXT);
"""
ROWS = """
    INSERT INTO countries VALUES (1, 'usa'), (2, 'japan');
    INSERT INTO makers VALUES (1, 'ford', 1), (2, 'gm', 1), (3, 'honda', 2), (4, 'tesla', 1);
    INSERT INTO models VALUES (1, 1, 'a'), (2, 1, 'b'), (3, 2, 'c'), (4, 3, 'd'), (5, 3, 'e'), (6, 1, 'f');
"""


class ScriptedBackend:
    """Zero-shot: sample 0 usable, sample 1 not JSON (also after repair), sample 2 GROUP BY.
    Expansion: not JSON (so the expander falls back to the offline one)."""

    name = "scripted"

    def __init__(self):
        self.requests = []

    def complete(self, request):
        self.requests.append(request)
        repair = any(m.role == "assistant" for m in request.messages)
        if "sql" in (request.json_schema or {}).get("properties", {}) and not repair:
            pool = [json.dumps({"sql": GOOD_SQL}), "I think you should count the models.",
                    json.dumps({"sql": "SELECT name, COUNT(*) FROM models GROUP BY name"})]
            texts = [pool[i % len(pool)] for i in range(request.n)]
        else:
            texts = ["no idea"] * request.n
        return ChatResponse(tuple(Completion(t, "stop") for t in texts), prompt_tokens=100, completion_tokens=7 * request.n)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    root = tmp_path_factory.mktemp("cars_llm")
    real = str(root / "cars.sqlite")
    con = sqlite3.connect(real)
    con.executescript(SCHEMA + ROWS)
    con.close()
    syn = str(root / "cars.synthetic.duckdb")  # made-up rows, marked as a synthetic copy
    dcon = duckdb.connect(syn)
    for stmt in (SCHEMA + ROWS).split(";"):
        if stmt.strip():
            dcon.execute(stmt.replace(" REFERENCES countries (CountryId)", "").replace(" REFERENCES makers (Id)", ""))
    dcon.execute("DELETE FROM models WHERE ModelId = 6")
    dcon.execute(f"CREATE TABLE {SYNTH_META_TABLE} (key VARCHAR, value VARCHAR)")
    dcon.close()
    beta = mechanism_for("1", "1e-6").beta_float()
    real_rs = RealRS(beta, {})
    item = Item("t-0", "spider-dev", "cars", real, QUESTION, (GOLD,), "sqlite")
    gt = build_ground_truth([item], real_rs)["t-0"]
    catalog = real_rs.catalog(real)
    engine = open_engine(syn, read_only=True)
    q = _Question(item, engine, catalog, beta, parser=[parse_count_query(GOLD, catalog)], gold=[parse_count_query(GOLD, catalog)])
    yield q, gt, real_rs
    engine.close()
    real_rs.close()


@pytest.fixture
def scripted(monkeypatch):
    """``scripted:`` URLs open one shared ScriptedBackend (through the public registry)."""
    backend = ScriptedBackend()
    llm_base._load_builtins()  # before the copy: the built-ins register once, on first use
    monkeypatch.setattr(llm_base, "_BACKENDS", llm_base._BACKENDS.copy())
    llm_base.register_backend("scripted", lambda url: url.startswith("scripted:"), lambda url, settings, environ: backend)
    return backend


def _scored(method, q, gt, real_rs, llm, **kw):
    rec = _run_method(method, q, rollouts=4, llm=llm, **kw)
    chosen = rec.pop("_query")
    rec.update(score(rec, gt, chosen, real_rs), id="t-0")
    return rec


def test_methods_are_listed_and_need_an_llm(case):
    q, _, _ = case
    assert set(LLM_METHODS) <= set(METHODS)
    for method in LLM_METHODS:
        assert _run_method(method, q, rollouts=4, llm=None) == {"skipped": "no --llm"}


@pytest.mark.parametrize("method", ["llm-zero-shot", "sens-prompt"])
def test_zero_shot_top1_takes_the_usable_sample_and_counts_calls(case, scripted, method):
    q, gt, real_rs = case
    rec = _scored(method, q, gt, real_rs, "scripted:x")
    assert rec["llm_samples"] == 1 and rec["llm_calls"] == 1 and rec["llm_tokens"] == 107
    assert rec["llm_unusable"] == 0 and rec["acc"] is True
    assert rec["sql"] == parse_count_query(GOOD_SQL, q.catalog).to_sql("sqlite")
    hint = "join as few tables as needed" in scripted.requests[0].text  # the sensitivity prompt's instruction
    assert hint is (method == "sens-prompt")


def test_llm_full_counts_garbage_and_falls_back_to_the_offline_expander(case, scripted):
    q, gt, real_rs = case
    rec = _scored("llm-full", q, gt, real_rs, "scripted:x", llm_k=3)
    assert rec["llm_samples"] == 3 and rec["llm_warm_start"] == 1 and "llm_fallback" not in rec
    expansions = rec["llm_expansions"]
    assert expansions >= 1
    # every expansion answer was garbage: one repair round each, then the offline expander
    assert rec["expansion_events"] == {"llm_unusable": expansions, "offline_fallback": expansions}
    assert rec["llm_unusable_by_reason"] == {
        "zero_shot:not_json": 1, "zero_shot:unsupported:group_by": 1, "expansion:llm_unusable": expansions,
    }
    assert rec["llm_unusable"] == 2 + expansions
    assert rec["llm_repairs"] == 1 + expansions
    assert rec["llm_calls"] == len(scripted.requests) == 1 + 1 + 2 * expansions  # n=3 in one call, one repair
    assert rec["llm_tokens"] == sum(100 + 7 * r.n for r in scripted.requests)
    assert rec["acc"] is True and rec["evaluations"] >= 1


def test_replayed_recording_gives_the_same_records(case, scripted, tmp_path, monkeypatch):
    q, gt, real_rs = case
    monkeypatch.setenv("PIMENTO_LLM_RECORD", str(tmp_path))
    live = {m: _scored(m, q, gt, real_rs, "scripted:x", llm_k=3) for m in LLM_METHODS}
    monkeypatch.delenv("PIMENTO_LLM_RECORD")
    assert len(list(tmp_path.glob("*.json"))) >= 3
    replayed = {m: _scored(m, q, gt, real_rs, f"replay:{tmp_path}", llm_k=3) for m in LLM_METHODS}
    for m in LLM_METHODS:
        live[m].pop("seconds"), replayed[m].pop("seconds")
        assert replayed[m] == live[m], (m, replayed[m].get("error"))


def test_an_llm_with_nothing_usable_leaves_the_offline_answer(case, tmp_path):
    """An empty replay directory: every request fails; zero-shot methods answer nothing, llm-full the parser's."""
    q, gt, real_rs = case
    for method in ("llm-zero-shot", "sens-prompt"):
        rec = _scored(method, q, gt, real_rs, f"replay:{tmp_path}")
        assert rec["sql"] is None and rec["acc"] is False
        assert rec["llm_unusable_by_reason"] == {"zero_shot:error": 1} and "fixture" in rec["error"]
    rec = _scored("llm-full", q, gt, real_rs, f"replay:{tmp_path}", llm_k=2)
    assert rec["llm_fallback"] == "parser" and rec["llm_warm_start"] == 0
    assert rec["llm_calls"] == 0 and rec["llm_tokens"] == 0
    assert rec["expansion_events"]["offline_fallback"] == rec["expansion_events"]["llm_unusable"] >= 1
    assert rec["acc"] is True and rec["joint"] is True


def test_summary_and_table_report_llm_accounting(case, scripted):
    q, gt, real_rs = case
    rec = _scored("llm-full", q, gt, real_rs, "scripted:x", llm_k=3)
    zero = {"t-0": _scored("zero-shot", q, gt, real_rs, None)}
    summary = summarize("llm-full", [rec], zero)
    assert summary["llm_calls"] == rec["llm_calls"] and summary["llm_samples"] == 3
    assert summary["llm_unusable"] == rec["llm_unusable"] and summary["llm_parser_fallback"] == 0
    report = {
        "ground_truth": {k: 0 for k in ("evaluated", "counting_questions", "in_class", "excluded_no_synthetic", "formulations_mean",
                                        "questions_with_rs_spread", "gold_is_min", "coincidental_q_star")},
        "methods": [summary, {"method": "sens-prompt", "not_run": "no --llm"}],
    }
    text = markdown(report)
    assert "| sens-prompt | not run: no --llm |" in text
    assert f"- llm-full: unusable LLM outputs {rec['llm_unusable']} of 3 zero-shot samples" in text
