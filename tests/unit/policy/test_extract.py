"""Text-to-CQL extraction with the replay backend and hand-written LLM answers
(tests/fixtures/policy/extract_hospital.json): malformed answers that need the repair round,
a clause that is not a norm, and a clause whose grounding names a table the database lacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pimento.errors import PolicyError
from pimento.llm import ChatRequest, ChatResponse, Completion, ReplayBackend
from pimento.llm.prompts import repair_messages
from pimento.llm.structured import parse_structured
from pimento.policy import compile_policy, load_policy, run_checks
from pimento.policy.extract import (
    ExtractedNorm,
    GroundingAnswer,
    extract_policy,
    extraction_messages,
    grounding_messages,
    split_clauses,
)

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "policy" / "extract_hospital.json"


def _register(backend: ReplayBackend, messages, model, answers: list[str]) -> str:
    """Register the request of ``messages`` (and its repair request) -> the hand-written answers."""
    def request(msgs):
        return ChatRequest(tuple(msgs), n=1, temperature=0.0, max_tokens=512,
                           json_schema=model.model_json_schema(), schema_name=model.__name__)

    backend.add(request(messages), ChatResponse((Completion(answers[0], "stop"),), 100, 50))
    if len(answers) > 1:
        try:
            parse_structured(answers[0], model)
        except ValueError as exc:
            backend.add(request(repair_messages(tuple(messages), answers[0], str(exc))),
                        ChatResponse((Completion(answers[1], "stop"),), 120, 50))
        else:  # pragma: no cover - fixture error
            raise AssertionError("a two-answer exchange must start with an invalid answer")
    return answers[-1]


def _backend(catalog, text: str) -> ReplayBackend:
    data = json.loads(FIXTURE.read_text())
    backend = ReplayBackend()
    for clause in split_clauses(text):
        script = data["clauses"][clause.id]
        final = _register(backend, extraction_messages(clause, policy_name="hospital"), ExtractedNorm, script["extract"])
        norm = parse_structured(final, ExtractedNorm)
        if "ground" in script:
            _register(backend, grounding_messages(catalog, norm, clause), GroundingAnswer, script["ground"])
    return backend


def _text(without_c4: bool = False) -> str:
    text = json.loads(FIXTURE.read_text())["text"]
    return text.split("\n(c)")[0] if without_c4 else text


def test_clause_that_cannot_be_grounded_is_named(hospital) -> None:
    backend = _backend(hospital.catalog, _text())
    with pytest.raises(PolicyError) as err:
        extract_policy(_text(), hospital.catalog, backend, engine=hospital.engine, name="hospital")
    assert err.value.clause == "C4"
    assert "1 of 4 clauses cannot be grounded" in err.value.message
    assert "clause C4 ((c) Genetic test results" in err.value.message
    assert "GeneticTest" in err.value.message


def test_extraction_repairs_and_compiles(hospital, tmp_path) -> None:
    text = _text(without_c4=True)
    backend = _backend(hospital.catalog, text)
    result = extract_policy(text, hospital.catalog, backend, engine=hospital.engine, name="hospital")
    # C1 is not a norm; C2 (grounding answer cut short) and C3 (sign 'forbid') needed the repair round
    assert [n["id"] for n in result.policy["norms"]] == ["C2", "C3"]
    assert result.clauses[0] == {"clause": "C1", "text": split_clauses(text)[0].text, "norm": None}
    assert result.usage.repairs == 2 and result.usage.requests == 7
    c2, c3 = result.policy["norms"]
    assert (c2["sign"], c2["sender"], c2["recipient"], c2["subject"], c2["purpose"]) == \
        ("permit", "attending_physician", "resident", "patient", "treatment")
    assert c2["source"].startswith("(a) An attending physician")
    # "shall not ... unless X": a deny norm whose requirement is X, never inverted
    assert c3["sign"] == "deny" and c3["condition"] == "the_recipient_has_a_treating_relationship_with_the_patien"[:48]
    g = result.policy["grounding"]
    assert g["conditions"][c3["condition"]]["principals"] == {"recipient": "employee"}
    assert g["conditions"][c2["condition"]]["principals"] == {"sender": "employee", "recipient": "employee"}
    assert g["subject_principal"] == "patient"
    # the YAML is the structured file a custodian reviews, and it compiles with every check
    path = tmp_path / "policy.yaml"
    path.write_text(result.to_yaml())
    assert path.read_text().startswith("# Extracted from natural-language policy text by an LLM")
    policy = load_policy(path)
    compiled = compile_policy(policy, hospital.catalog, hospital.engine)
    report = run_checks(compiled, hospital.catalog, hospital.engine, policy=policy).checks_report()
    assert "C2" in report["satisfiability"]["witnesses"]
    assert any(i["norm"] == "C3" and i["location"] == "Visit.diagnosis" for i in report["information_implication"])
    assert yaml.safe_load(path.read_text())["norms"][1]["citation"].startswith("clause C3")


def test_prompts_hold_schema_and_policy_text_only(hospital) -> None:
    text = _text(without_c4=True)
    backend = _backend(hospital.catalog, text)
    extract_policy(text, hospital.catalog, backend, engine=hospital.engine, name="hospital")
    sent = "\n".join(r.text for r in backend.requests)
    assert "CREATE TABLE Visit" in sent and "HIV status shall not be disclosed" in sent
    private = [str(v) for (v,) in hospital.engine.execute(
        "SELECT name FROM Patient UNION ALL SELECT DISTINCT diagnosis FROM Visit WHERE diagnosis IS NOT NULL "
        "UNION ALL SELECT note FROM Visit WHERE note IS NOT NULL LIMIT 300").rows]
    assert private and not [v for v in private if len(v) > 6 and v in sent]


def test_unusable_answer_after_repair_is_a_clause_error(hospital) -> None:
    text = "(a) A nurse may disclose a patient's medication list to a pharmacist for treatment."
    clause = split_clauses(text)[0]
    backend = ReplayBackend()
    _register(backend, extraction_messages(clause, policy_name="hospital"), ExtractedNorm,
              ["I think nurses can share it.", "Yes, they may."])
    with pytest.raises(PolicyError) as err:
        extract_policy(text, hospital.catalog, backend, engine=hospital.engine, name="hospital")
    assert err.value.clause == "C1" and "unusable after one repair round" in err.value.message


def test_split_clauses() -> None:
    text = "HEADER\n\n1. First clause about who may see what data.\n2. Second clause, which\ncontinues here.\n\n" \
           "- a bullet that is long enough to count"
    assert [c.text for c in split_clauses(text)] == [
        "1. First clause about who may see what data.",
        "2. Second clause, which continues here.",
        "- a bullet that is long enough to count",
    ]


def test_cli_extract_with_replay_directory(hospital, hospital_path, tmp_path) -> None:
    """`pimento policy extract` against recorded fixtures (written by RecordingBackend)."""
    from typer.testing import CliRunner

    from pimento.cli.app import app
    from pimento.llm import RecordingBackend

    text = _text(without_c4=True)
    fixtures = tmp_path / "fixtures"
    recorder = RecordingBackend(_backend(hospital.catalog, text), fixtures)
    extract_policy(text, hospital.catalog, recorder, engine=hospital.engine, name="hospital")
    src = tmp_path / "hospital.txt"
    src.write_text(text)
    out = tmp_path / "policy.yaml"
    runner = CliRunner()
    res = runner.invoke(app, ["policy", "extract", str(src), "--db", str(hospital_path), "--llm", f"replay:{fixtures}",
                              "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert payload["norms"] == 2 and payload["usage"]["repairs"] == 2
    assert [n["id"] for n in yaml.safe_load(out.read_text())["norms"]] == ["C2", "C3"]
    # a clause the fixtures do not cover: one clear line, no traceback
    src.write_text(_text())
    res = runner.invoke(app, ["policy", "extract", str(src), "--db", str(hospital_path), "--llm", f"replay:{fixtures}",
                              "--out", str(out)])
    assert res.exit_code == 2 and "clause C4" in res.output and "Traceback" not in res.output
