"""The aggregate prompt (grouped COUNT, SUM, AVG) through the replay backend; the count prompt unchanged."""

from __future__ import annotations

import json

import pytest

from pimento.errors import LLMError
from pimento.llm import ChatRequest, ChatResponse, Completion, ReplayBackend, SqlAnswer, SyntheticValues, Usage, generate_zero_shot
from pimento.llm.base import request_key
from pimento.llm.prompts import AggregateSqlAnswer, repair_messages, zero_shot_messages
from pimento.schema import Catalog, Column, Table
from pimento.sql.ir import AggregateKind, AggregateQuery, Attribute

from .conftest import CANARIES, SYNTH_MARKER

QUESTION = "How many visits are there per ward?"


def _request(catalog, k: int) -> ChatRequest:
    return ChatRequest(
        zero_shot_messages(catalog, QUESTION, aggregate=True),
        n=k,
        temperature=0.7,
        max_tokens=256,
        json_schema=AggregateSqlAnswer.model_json_schema(),
        schema_name="AggregateSqlAnswer",
    )


def _repair(catalog, bad: str, error: str, fixed: str) -> tuple[ChatRequest, ChatResponse]:
    request = ChatRequest(
        repair_messages(zero_shot_messages(catalog, QUESTION, aggregate=True), bad, error),
        n=1,
        temperature=0.7,
        max_tokens=256,
        json_schema=AggregateSqlAnswer.model_json_schema(),
        schema_name="AggregateSqlAnswer",
    )
    return request, ChatResponse((Completion(fixed),), prompt_tokens=400, completion_tokens=12)


SAMPLES = [
    json.dumps({"sql": "SELECT ward, COUNT(*) AS n FROM Visit GROUP BY ward"}),  # 0 grouped COUNT
    json.dumps({"sql": "SELECT v.ward, AVG(p.age) FROM Visit v JOIN Patient p ON v.patient_id = p.patient_id GROUP BY v.ward"}),  # 1
    "```json\n" + json.dumps({"sql": "SELECT SUM(age) FROM Patient;"}) + "\n```",  # 2 ungrouped SUM, fenced
    json.dumps({"sql": "SELECT ward, COUNT(*) FROM Visit GROUP BY ward HAVING COUNT(*) > 1"}),  # 3 HAVING
    json.dumps({"sql": "SELECT ward, COUNT(*) FROM Visit GROUP BY ward ORDER BY 2 DESC"}),  # 4 ORDER BY
    json.dumps({"sql": "SELECT ward, MAX(visit_id) FROM Visit GROUP BY ward"}),  # 5 MAX
    json.dumps({"sql": "SELECT ward, diagnosis, COUNT(*) FROM Visit GROUP BY ward"}),  # 6 output not grouped
    json.dumps({"sql": "SELECT ward, COUNT(*) FROM Ward GROUP BY ward"}),  # 7 unknown table
    "The wards are W1 and W2.",  # 8 not JSON -> repaired into a grouped COUNT
]


@pytest.fixture()
def replay(catalog) -> ReplayBackend:
    backend = ReplayBackend()
    backend.add(
        _request(catalog, len(SAMPLES)),
        ChatResponse(tuple(Completion(s, "stop") for s in SAMPLES), prompt_tokens=380, completion_tokens=240),
    )
    fixed = json.dumps({"sql": "SELECT Visit.ward, COUNT(DISTINCT Visit.patient_id) FROM Visit GROUP BY Visit.ward"})
    backend.add(*_repair(catalog, SAMPLES[8], "the answer contains no JSON object", fixed))
    return backend


def test_aggregate_request_yields_parsed_aggregate_queries(catalog, replay):
    usage = Usage()
    result = generate_zero_shot(replay, catalog, QUESTION, k=len(SAMPLES), usage=usage, aggregate=True)

    assert [c.index for c in result.candidates] == [0, 1, 2, 8]
    assert all(isinstance(c.query, AggregateQuery) for c in result.candidates)
    grouped, average, total, repaired = (c.query for c in result.candidates)
    assert grouped.kind is AggregateKind.COUNT and grouped.group_by == (Attribute("Visit", "ward"),)
    assert average.kind is AggregateKind.AVG and average.column == Attribute("p", "age")
    assert sorted(r.table for r in average.body.relations) == ["Patient", "Visit"]
    assert total.kind is AggregateKind.SUM and total.group_by == ()
    assert result.candidates[2].sql == "SELECT SUM(age) FROM Patient"
    assert result.candidates[3].repaired and repaired.body.count.distinct
    assert repaired.to_sql("duckdb").endswith("GROUP BY Visit.ward")

    # Answers outside the aggregate class are dropped and counted, as the counting path's are.
    assert {r.index: r.reason for r in result.rejected} == {
        3: "unsupported:having",
        4: "unsupported:order_by",
        5: "unsupported:other_aggregate",
        6: "unsupported:group_by",
        7: "catalog",
    }
    assert usage.calls == 2 and usage.repairs == 1
    assert result.distinct_queries == [grouped, average, total, repaired]


def test_count_path_still_refuses_grouped_answers_and_uses_its_own_prompt(catalog, replay):
    """The aggregate recordings do not answer a counting request (other prompt, other schema)."""
    with pytest.raises(LLMError, match="no recorded LLM response"):
        generate_zero_shot(replay, catalog, QUESTION, k=len(SAMPLES))
    counting = ReplayBackend()
    counting.add(
        ChatRequest(
            zero_shot_messages(catalog, QUESTION), n=1, temperature=0.7, max_tokens=256,
            json_schema=SqlAnswer.model_json_schema(), schema_name="SqlAnswer",
        ),
        ChatResponse((Completion(SAMPLES[0]),)),
    )
    result = generate_zero_shot(counting, catalog, QUESTION, k=1)
    assert not result.candidates and dict(result.dropped) == {"unsupported:group_by": 1}
    with pytest.raises(LLMError, match="no recorded LLM response"):
        generate_zero_shot(counting, catalog, QUESTION, k=1, aggregate=True)


# The counting prompt is pinned: its requests key the replay fixtures (tests/fixtures/llm), so a
# change there silently invalidates every recording. These hashes were taken before the aggregate
# prompt was added.
_PETS = Catalog((Table("pets", (Column("pet_id", "integer"), Column("pet_type", "text"), Column("weight", "real")), ("pet_id",)),))
_COUNT_KEYS = {
    "plain": "839497473cb8dda2b5e607ed2021752ed3aef68d8d85316997b6a9d03ab22037",
    "low_sensitivity": "e36796913a7bea04da73b7487b1df0b2eeef7c68e43b89c02c4727ed6da4d661",
}


@pytest.mark.parametrize("variant", sorted(_COUNT_KEYS))
def test_count_prompt_is_byte_identical(variant):
    messages = zero_shot_messages(_PETS, "How many pets weigh more than 5?", low_sensitivity=variant == "low_sensitivity")
    request = ChatRequest(
        messages, n=3, temperature=0.5, max_tokens=128,
        json_schema=SqlAnswer.model_json_schema(), schema_name="SqlAnswer",
    )
    assert request_key(request) == _COUNT_KEYS[variant]
    assert messages == zero_shot_messages(_PETS, "How many pets weigh more than 5?", aggregate=False,
                                          low_sensitivity=variant == "low_sensitivity")


def test_aggregate_prompt_states_the_class_and_keeps_private_values_out(catalog, synthetic_engine):
    values = SyntheticValues.from_engine(synthetic_engine)
    system, user = zero_shot_messages(catalog, QUESTION, values=values, policy="no minors", aggregate=True)
    assert "one SQL aggregate query" in system.content
    assert "SELECT [g1, g2,] COUNT(*) | COUNT(column) | COUNT(DISTINCT column) | SUM(column) | AVG(column)" in system.content
    assert "[GROUP BY g1, g2]" in system.content
    assert "exactly the GROUP BY columns" in system.content and "no HAVING, ORDER BY, LIMIT" in system.content
    assert '{"sql": "SELECT o.status, COUNT(*) FROM orders o GROUP BY o.status"}' in system.content
    assert QUESTION in user.content and SYNTH_MARKER in user.content and "no minors" in user.content
    assert not any(canary in system.content + user.content for canary in CANARIES)
    # The schema sent with the request says what is asked; the counting one is unchanged.
    assert "SUM or AVG" in AggregateSqlAnswer.model_json_schema()["properties"]["sql"]["description"]
    assert SqlAnswer.model_json_schema()["properties"]["sql"]["description"] == "one SQL SELECT COUNT(...) statement"
