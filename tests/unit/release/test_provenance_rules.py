"""The release rules of provenance (release/provenance.py), each on a sentence built to decide it.

``[provenance] release = "sentence"`` gives the sentence around a traced value only when *every*
value read from that sentence is a cell authorized in the context; else the span alone. Three
rules of that test were invisible on the shipped demo corpus (issue 23, surviving mutants): this
corpus of six short documents puts each in its own sentence.

* ``mixed``: a sentence with an authorized visit and a denied one (every, not any);
* ``ungoverned``: an authorized visit and a Patient, a table no norm governs (not authorized);
* ``rejected``: an authorized visit and a mention ingest rejected (``_pimento_rejected``);
* ``alone``: an authorized visit and nothing else: the sentence is released (the control).
"""

from __future__ import annotations

from pathlib import Path

import pytest

SCHEMA = """
CREATE TABLE Patient (pat_id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, role TEXT);
CREATE TABLE Visit (visit_id INTEGER PRIMARY KEY, pat_id INTEGER REFERENCES Patient (pat_id), diagnosis TEXT);
"""

PATTERNS = r"""version: 1
tables:
  Patient:
    rules:
      - patterns:
          - 'patient (?P<pat_id>\d+) is (?P<name>[A-Z][a-z]+ [A-Z][a-z]+)'
  Staff:
    rules:
      - patterns:
          - 'staff (?P<staff_id>\d+) is a (?P<role>[a-z]+)'
  Visit:
    rules:
      - patterns:
          - '[Vv]isit (?P<visit_id>\w+) of patient (?P<pat_id>\d+) for (?P<diagnosis>Flu|Migraine|Hiv disease|Asthma|Gout|Measles)'
"""

#: document id -> text; each visit sentence is the one its rule is about
DOCUMENTS = {
    "staff": "Roster: staff 1 is a physician.",
    "people": "Registry: patient 1 is Ada Lovelace. Registry: patient 2 is Grace Hopper. Registry: patient 3 is Alan Turing.",
    "alone": "Visit 1 of patient 1 for Flu was quiet.",
    "mixed": "Visit 2 of patient 1 for Migraine came before visit 3 of patient 1 for Hiv disease.",
    "ungoverned": "Visit 4 of patient 2 for Asthma, where patient 2 is Grace Hopper.",
    # visit_id "x9" is not an integer: ingest rejects that mention and keeps its spans aside
    "rejected": "Visit 5 of patient 3 for Gout came before visit x9 of patient 3 for Measles.",
}

POLICY = """version: 1
name: provenance-rules
grounding:
  principals:
    staff: {relation: Staff, key: staff_id}
    patient: {relation: Patient, key: pat_id}
  subject_principal: patient
  roles:
    physician: {principal: staff, where: "role = 'physician'"}
  data_types:
    visit:
      locations:
        - {relation: Visit, attribute: visit_id}
        - {relation: Visit, attribute: pat_id}
        - {relation: Visit, attribute: diagnosis}
    hiv_visit:
      locations:
        - {relation: Visit, attribute: visit_id, where: &hiv "diagnosis = 'Hiv disease'"}
        - {relation: Visit, attribute: pat_id, where: *hiv}
        - {relation: Visit, attribute: diagnosis, where: *hiv}
  purposes:
    treatment: {values: [treatment]}
norms:
  - {id: P1, sign: permit, sender: any, recipient: physician, subject: any, data: [visit], purpose: treatment}
  - {id: D1, sign: deny, sender: any, recipient: any, subject: any, data: [hiv_visit], purpose: any}
"""

SQL = "SELECT v.visit_id, v.diagnosis FROM Visit v ORDER BY v.visit_id"


@pytest.fixture(scope="module")
def ingested(tmp_path_factory) -> Path:
    """The corpus ingested into ``db/p.duckdb``, releasing sentences; Patient and Staff are governed by no norm."""
    import json

    from pimento.ingest import ingest

    root = tmp_path_factory.mktemp("provenance_rules")
    (root / "corpus").mkdir()
    (root / "corpus" / "notes.jsonl").write_text(
        "".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in DOCUMENTS.items()), encoding="utf-8")
    (root / "schema.sql").write_text(SCHEMA, encoding="utf-8")
    (root / "patterns.yaml").write_text(PATTERNS, encoding="utf-8")
    (root / "policy.yaml").write_text(POLICY, encoding="utf-8")
    db = root / "db" / "p.duckdb"
    db.parent.mkdir()
    report = ingest(root / "corpus", root / "schema.sql", db, patterns=root / "patterns.yaml")
    assert [r.values["visit_id"] for r in report.rejected] == ["x9"]
    (db.parent / "pimento.toml").write_text(
        f'[provenance]\nrelease = "sentence"\ncorpus = "{(root / "corpus").as_posix()}"\n', encoding="utf-8")
    return db


def _texts(db: Path) -> dict[str, list[dict[str, str]]]:
    """The CI answer of SQL for physician staff:1 (treatment): traced texts per visit, as ``"<visit_id>"``."""
    from pimento.engines.database import load_database
    from pimento.policy import Enforcer, compile_policy, load_policy
    from pimento.release.provenance import trace_answer

    with load_database(db) as database:
        compiled = compile_policy(load_policy(db.parent.parent / "policy.yaml"), database.catalog, database.engine)
        enforcer = Enforcer(compiled, database.engine, database.catalog)
        context = enforcer.context("staff:1", "staff:1", "treatment")
        answer = enforcer.authorize(context, SQL)
        trace = trace_answer(enforcer, context, SQL, answer.columns, answer.rows, database=database)
    assert trace is not None
    assert [r[0] for r in answer.rows] == [1, 2, 4, 5]  # visit 3 (HIV) is denied, x9 was never a row
    out: dict[str, list[dict[str, str]]] = {}
    for source in trace.sources:
        out.setdefault(str(answer.rows[source.row][0]), []).extend(source.texts)
    return out


def test_a_sentence_of_authorized_values_only_is_released(ingested) -> None:
    texts = _texts(ingested)
    assert {"scope": "sentence", "text": DOCUMENTS["alone"]} in texts["1"]
    assert all(t["scope"] == "sentence" for t in texts["1"])


def test_one_denied_value_keeps_the_sentence_back(ingested) -> None:
    """Visit 2 is authorized, visit 3 in the same sentence is not: every value must be authorized, not any."""
    texts = _texts(ingested)
    assert texts["2"] == [{"scope": "span", "text": "2"}, {"scope": "span", "text": "Migraine"}]
    assert not any("Hiv" in t["text"] for ts in texts.values() for t in ts)


def test_a_value_of_an_ungoverned_table_keeps_the_sentence_back(ingested) -> None:
    """Patient is governed by no norm, so no cell of it is authorized: its name blocks the sentence."""
    texts = _texts(ingested)
    assert texts["4"] == [{"scope": "span", "text": "4"}, {"scope": "span", "text": "Asthma"}]
    assert not any("Grace" in t["text"] for ts in texts.values() for t in ts)


def test_a_rejected_mention_keeps_the_sentence_back(ingested) -> None:
    """The mention ingest rejected (visit x9, Measles) is in no table, so nothing authorizes it."""
    texts = _texts(ingested)
    assert texts["5"] == [{"scope": "span", "text": "5"}, {"scope": "span", "text": "Gout"}]
    assert not any("Measles" in t["text"] for ts in texts.values() for t in ts)
