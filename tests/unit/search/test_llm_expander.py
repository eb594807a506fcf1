"""The LLM expander turns JSON action batches into validated search actions, with an offline fallback."""

from __future__ import annotations

import json

import pytest

from pimento.demo.hospital import DEMO_SQL_PRESCRIPTION
from pimento.errors import LLMError
from pimento.llm.base import ChatResponse, Completion
from pimento.search import AddRelation, PartialQuery, SchemaGraphExpander, SearchConfig, SensitivityInfo, SensitivitySearch, SetCount
from pimento.search.expanders import NodeState
from pimento.search.query_intent import intent_of
from pimento.search.llm_expander import LLMExpander
from pimento.sql import parse_count_query

QUESTION = "How many patients were prescribed warfarin by cardiologists?"


class ScriptedBackend:
    """Answers each request with the next scripted text (a fake at the seam, like a replay)."""

    name = "scripted"

    def __init__(self, answers):
        self.answers = list(answers)
        self.requests = []

    def complete(self, request):
        self.requests.append(request)
        if not self.answers:
            raise LLMError("script exhausted")
        text = self.answers.pop(0)
        if isinstance(text, Exception):
            raise text
        return ChatResponse(tuple(Completion(text) for _ in range(request.n)), prompt_tokens=10, completion_tokens=5)


@pytest.fixture(scope="module")
def demo(tmp_path_factory, demo_engine):
    with demo_engine(tmp_path_factory.mktemp("demo"), patients=400, seed=2) as opened:
        yield opened


def _state(catalog, prefix=PartialQuery()):
    query = parse_count_query(DEMO_SQL_PRESCRIPTION, catalog).canonical()
    return NodeState(prefix, intent_of(query))


def test_valid_actions_become_children_and_invalid_ones_are_counted(demo):
    _, catalog = demo
    batch = {
        "actions": [
            {"kind": "add_relation", "table": "Employee", "join": None, "filter": "specialty = 'Cardiology'"},
            {"kind": "add_relation", "table": "NoSuchTable"},
            {"kind": "add_relation", "table": "Visit", "filter": "Visit.pat_id = Patient.pat_id"},
            {"kind": "set_count", "column": "Employee.employee_id"},
        ]
    }
    backend = ScriptedBackend([json.dumps(batch)])
    expander = LLMExpander(backend, catalog, QUESTION)
    proposals = expander.propose(_state(catalog), exclude=frozenset(), limit=5)
    actions = [a for a, _ in proposals]
    assert len(actions) == 1  # Visit is dropped: its filter names another relation
    first = actions[0]
    assert isinstance(first, AddRelation) and first.relation.table == "Employee"
    assert first.selection == "Employee.specialty = 'Cardiology'"
    assert expander.events["dropped:unknown_table"] == 1
    assert expander.events["dropped:count_before_relation"] == 1
    assert expander.events["dropped:bad_filter"] == 1
    assert expander.usage.calls == 1


def test_joins_must_connect_the_new_table_to_the_prefix(demo):
    _, catalog = demo
    prefix = PartialQuery().apply(AddRelation(parse_count_query("SELECT COUNT(*) FROM Employee", catalog).relations[0]))
    batch = {
        "actions": [
            {"kind": "add_relation", "table": "Visit", "join": "Employee.employee_id = Visit.attending_id"},
            {"kind": "add_relation", "table": "Prescription", "join": "Prescription.pat_id = Visit.pat_id"},
            {"kind": "add_relation", "table": "Supervises", "join": "Employee.employee_id > Supervises.supervisor_id"},
            {"kind": "set_count", "column": "employee_id", "distinct": True},
        ]
    }
    expander = LLMExpander(ScriptedBackend([json.dumps(batch)]), catalog, QUESTION)
    actions = [a for a, _ in expander.propose(_state(catalog, prefix), exclude=frozenset({"visit"}), limit=5)]
    assert [type(a).__name__ for a in actions] == ["SetCount"]
    assert isinstance(actions[0], SetCount) and actions[0].count.distinct
    assert expander.events["dropped:sibling_key"] == 1
    assert expander.events["dropped:join_does_not_connect"] + expander.events["dropped:join_unknown_column"] == 1
    assert expander.events["dropped:join_not_an_equality"] == 1


def test_garbage_output_falls_back_to_the_offline_expander(demo):
    _, catalog = demo
    backend = ScriptedBackend(["not json at all", "still not json"])
    expander = LLMExpander(backend, catalog, QUESTION, fallback=SchemaGraphExpander(catalog))
    proposals = expander.propose(_state(catalog), exclude=frozenset(), limit=5)
    assert proposals  # the offline expander answered
    assert expander.events["llm_unusable"] == 1 and expander.events["offline_fallback"] == 1
    assert len(backend.requests) == 2  # the question and one repair round


def test_search_runs_end_to_end_with_the_llm_expander(demo):
    engine, catalog = demo
    a = parse_count_query(DEMO_SQL_PRESCRIPTION, catalog)
    batches = [json.dumps({"actions": [{"kind": "stop"}]})] * 40
    expander = LLMExpander(ScriptedBackend(batches), catalog, QUESTION, fallback=SchemaGraphExpander(catalog))

    def oracle(query):
        return SensitivityInfo(10.0, {x: 10.0 / len(query.aliases) for x in query.aliases})

    result = SensitivitySearch(engine, catalog, beta=0.1, config=SearchConfig(rollouts=4), expander=expander, oracle=oracle).run([a])
    assert result.synthetic_answer == engine.execute(a.to_sql()).scalar()
    assert expander.usage.calls >= 1
